// `stacksim schema [--markdown]`: the scenario schema (config/schema.hpp), as a plain list or as
// docs/scenario.md's generated key reference.
#include <ostream>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "config/schema.hpp"

namespace stacksim::analysis {

int cmd_schema(const std::vector<std::string>& args, std::ostream& out) {
  bool markdown = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      out << "usage: stacksim schema [--markdown]\n"
             "  Lists every key a scenario file may hold: type, unit, default, allowed range, description.\n"
             "  --markdown  the key reference of docs/scenario.md (the part between its generated markers)\n";
      return 0;
    }
    if (a != "--markdown")
      throw config::InputError(
          "command line", 0, a, "unknown option for 'schema'",
          config::nearest(a, {"--markdown"}).empty() ? "valid options: --markdown" : "did you mean --markdown?");
    markdown = true;
  }
  if (markdown) {
    out << config::schema_markdown();
    return 0;
  }
  for (const auto& k : config::scenario_schema()) {
    out << k.path << ": " << config::describe_type(k);
    if (!k.unit.empty()) out << ", " << k.unit;
    if (const std::string r = config::describe_range(k); !r.empty()) out << ", " << r;
    if (!k.def.empty()) out << ", default " << k.def;
    out << "\n    " << k.doc << "\n";
  }
  return 0;
}

}  // namespace stacksim::analysis
