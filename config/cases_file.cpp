#include "config/cases_file.hpp"

#include <cctype>

namespace stacksim::config {

Node load_validation_cases(const std::string& path) { return validation_cases_of(Node::load_file(path)); }

Node validation_cases_of(const Node& root) {
  root.require_map();
  const std::string format = root.string_or("format", "");
  if (format != "stacksim-validation/1")
    root.fail("format", "expected 'stacksim-validation/1', got '" + format + "'",
              "pass a validation case file in the format of validation/README.md");
  const Node cases = root["cases"];
  if (!cases.is_sequence()) root.fail("cases", "missing or not a list", "add a 'cases:' list");
  return cases;
}

std::string lowercase(const std::string& text) {
  std::string t;
  t.reserve(text.size());
  for (char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

}  // namespace stacksim::config
