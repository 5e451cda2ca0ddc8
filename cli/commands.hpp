// The CLI's subcommands as library functions (so tests and Python reach the same code).
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace stacksim::analysis {

// Returns the process exit code; throws config::InputError for bad input (exit 2 in the CLI).
int run_command(const std::string& command, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `stacksim schema [--markdown]` (schema_command.cpp).
int cmd_schema(const std::vector<std::string>& args, std::ostream& out);

}  // namespace stacksim::analysis
