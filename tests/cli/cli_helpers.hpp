// Shared inputs of the CLI tests: a small training scenario, and a command's InputError message.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/error.hpp"

namespace stacksim::cli_test {

// 16 H100s (2 DGX nodes), a 4-layer model: valid and fast to simulate.
inline const char* const kTraining =
    "name: t\n"
    "cluster: {node: dgx-h100, nodes: 2}\n"
    "model: {layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, vocab: 32000, seq_len: 1024}\n"
    "parallelism: {tp: 2, pp: 2, dp: 4, micro_batch: 1, global_batch: 16}\n";

// Runs a command; returns the InputError's message, or "" if none was thrown.
inline std::string input_error(const std::string& cmd, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  try {
    analysis::run_command(cmd, args, out, err);
  } catch (const config::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace stacksim::cli_test
