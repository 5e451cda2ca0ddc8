#include "services/output.hpp"

#include <cmath>

#include "config/error.hpp"
#include "config/output_file.hpp"

namespace stacksim::analysis {
namespace {

// The path of the first number in `j` that is not finite ("" when none): JSON has no spelling for
// inf or NaN (the library would write null), so such a result is refused, never written.
std::string first_non_finite(const nlohmann::json& j, const std::string& path) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) return path.empty() ? "(top level)" : path;
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      if (auto p = first_non_finite(v, path.empty() ? k : path + "." + k); !p.empty()) return p;
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i)
      if (auto p = first_non_finite(j[i], path + "[" + std::to_string(i) + "]"); !p.empty()) return p;
  return "";
}

}  // namespace

void write_text_atomically(const std::string& path, const std::string& text) { config::write_output_text(path, text); }

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  if (const std::string bad = first_non_finite(j, ""); !bad.empty())
    throw config::InputError(path, 0, bad, "the result's value is not a finite number; nothing was written",
                             "bring the scenario's values into a realistic range");
  config::write_output_file(
      path, [&](std::ostream& out) { out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"; });
}

}  // namespace stacksim::analysis
