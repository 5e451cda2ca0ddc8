// The published-measurement case files (format stacksim-validation/1, validation/README.md):
// the `cases:` list after checking the format tag, with file/line errors.
#pragma once
#include <string>

#include "config/yaml.hpp"

namespace stacksim::config {

Node load_validation_cases(const std::string& path);
// The same from a file already read (Node::load_string: the fuzzer's entry).
Node validation_cases_of(const Node& root);

// A case field that is present and not null (sources leave unknowns null).
inline bool has(const YAML::Node& n, const char* key) { return n && n[key] && !n[key].IsNull(); }
// `text` in lower case, for reading a case's free text (notes, system) without minding case.
std::string lowercase(const std::string& text);

}  // namespace stacksim::config
