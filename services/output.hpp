// Writing results through config::write_output_file (config/output_file.hpp): a temporary file
// in the target's folder, renamed into place, so a failure never leaves a half-written output.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace stacksim::analysis {

// Refuses (InputError, naming the JSON key) a document holding inf or NaN: never written as null.
void write_json_atomically(const std::string& path, const nlohmann::json& j);
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace stacksim::analysis
