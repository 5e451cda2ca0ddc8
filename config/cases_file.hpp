// The published-measurement case files (format stacksim-validation/1, validation/README.md):
// the `cases:` list after checking the format tag, with file/line errors.
#pragma once
#include <string>

#include "config/yaml.hpp"

namespace stacksim::config {

Node load_validation_cases(const std::string& path);

}  // namespace stacksim::config
