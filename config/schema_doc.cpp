// docs/scenario.md's key reference, written from the schema table (`stacksim schema --markdown`).
#include <sstream>

#include "config/schema.hpp"

namespace stacksim::config {
namespace {

// A table cell: no '|' (it would end the cell) and no newline.
std::string cell(std::string s) {
  for (size_t p = s.find('|'); p != std::string::npos; p = s.find('|', p + 2)) s.replace(p, 1, "\\|");
  return s;
}

std::string_view top_of(std::string_view path) { return path.substr(0, path.find_first_of(".[")); }

}  // namespace

std::string schema_markdown() {
  std::ostringstream o;
  o << "Generated from the schema table (config/scenario_schema_*.cpp) by `stacksim schema --markdown`;\n"
       "a CTest test (scenario_doc_current) fails when this part is not current. A quantity is written with\n"
       "its unit (\"2 GB/s\"); where a bare number is read too, its unit is the one in the unit column.\n";
  std::string_view current = "\x01";
  for (const KeySpec& k : scenario_schema()) {
    const std::string_view top = top_of(k.path);
    const bool plain_top = k.path == top && k.type != KeyType::Map;
    const std::string_view heading = plain_top ? std::string_view("top level") : top;
    if (heading != current) {
      current = heading;
      o << "\n### " << (plain_top ? "Top level" : "`" + std::string(top) + ":`") << "\n\n"
        << "| key | type | unit | default | range | description |\n|---|---|---|---|---|---|\n";
    }
    o << "| `" << k.path << "` | " << cell(describe_type(k)) << " | " << cell(std::string(k.unit)) << " | "
      << cell(k.def.empty() ? std::string() : std::string(k.def)) << " | " << cell(describe_range(k)) << " | "
      << cell(std::string(k.doc)) << " |\n";
  }
  return o.str();
}

}  // namespace stacksim::config
