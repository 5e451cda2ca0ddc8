// Writing results: JSON files are written to a temporary name and renamed, so a failure never
// leaves a half-written output file.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace stacksim::analysis {

void write_json_atomically(const std::string& path, const nlohmann::json& j);
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace stacksim::analysis
