// Turning a published serving case (stacksim-validation/1, kind: serving; validation/README.md)
// into a serving scenario and predicting every figure it measured, with ONE global policy for the
// fields its source left null (docs/serving.md, "Validation policy"); every default applied is
// listed in the case's output. Nothing here looks at a case's id or source.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "validate/validation.hpp"

namespace stacksim::analysis {

// The serving scenario YAML a case describes, `defaults` naming each policy decision. Throws
// std::runtime_error (the reason the case cannot be built) when a field the model needs is null.
YAML::Node serving_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults);

// The measured figures of a case as (name, value): output_tokens_per_s, total_tokens_per_s,
// requests_per_s, ttft_ms.p99, ..., whole-system (a per-GPU or per-node figure in measured.other
// is scaled by the case's GPU or node count where the whole-system one is null). The primary one
// (output tokens/s, else total tokens/s, else requests/s, else the first latency) comes first.
std::vector<std::pair<std::string, double>> serving_case_measured(const YAML::Node& c);

// Predicts every measured figure of the case into `out` (metric/measured/predicted: the primary
// one; out.metrics: all of them).
void predict_serving_case(const YAML::Node& c, CaseOutcome& out);

// Whether a metric name is a throughput (else a latency): for the per-source summaries.
bool is_throughput_metric(const std::string& metric);

}  // namespace stacksim::analysis
