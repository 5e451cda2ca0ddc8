// Turning a published training case (stacksim-validation/1) into a scenario, with ONE global
// policy for every field the source left null (validation README: "One global default policy for
// unknowns"). The policy is documented in docs/validation.md and every default applied is listed
// in the case's output, so its effect can be audited. Nothing here looks at a case's id or source.
#pragma once
#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/cases_file.hpp"
#include "models/hardware/node_spec.hpp"
#include "validate/validation.hpp"

namespace stacksim::analysis {

using config::has;
using config::lowercase;

// A case field that is present and not null (config/cases_file.hpp); its value as T; a value of another type (e.g.
// "eight" for an int) names the key.
template <typename T>
T get(const YAML::Node& n, const char* key) {
  try {
    return n[key].as<T>();
  } catch (const YAML::BadConversion&) {
    const YAML::Node v = n[key];
    if (!v || v.IsNull()) throw std::runtime_error(std::string(key) + " is null");
    throw std::runtime_error(std::string(key) + " has an unusable value" +
                             (v.IsScalar() ? " '" + v.Scalar() + "'" : std::string(" (not a scalar)")));
  }
}

// A case's notes ("" when it has none).
inline std::string notes_of(const YAML::Node& c) { return has(c, "notes") ? get<std::string>(c, "notes") : ""; }
// A count (GPUs, layers, batch, parallel degree): get<T>, and at least 1.
template <typename T>
T positive(const YAML::Node& n, const char* key) {
  const T v = get<T>(n, key);
  if (v < 1) throw std::runtime_error(std::string(key) + " must be at least 1, got " + std::to_string(v));
  return v;
}

using hw::node_type_for_gpu;  // models/hardware/node_spec.hpp

// The scenario YAML a training case describes, with `defaults` naming each policy decision.
// Throws std::runtime_error when a field the model cannot do without is null.
YAML::Node training_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults);

// Predicts the case's primary metric: step time where published (or derived), else the
// published throughput/FLOP-rate metric computed the source's way.
void predict_training_case(const YAML::Node& c, CaseOutcome& out, const ValidationFilter& options = {});

}  // namespace stacksim::analysis
