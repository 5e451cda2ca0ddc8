// The serving part of `validate`'s summary: every measured figure of the serving cases (not only
// the primary one), split into throughput (tokens/s, requests/s) and latency (TTFT, TPOT, e2e),
// MAPE per source and the macro average over sources (each source weighs the same).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

#include "validate/validation.hpp"

namespace stacksim::analysis {

nlohmann::json serving_summary_json(const std::vector<CaseOutcome>& outcomes);
void print_serving_summary(const std::vector<CaseOutcome>& outcomes, std::ostream& out);

}  // namespace stacksim::analysis
