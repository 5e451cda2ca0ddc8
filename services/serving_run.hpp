// `stacksim run` on a serving scenario: the replay of the request stream (models/serving), the
// max sustainable request rate under the scenario's SLO (when it has one), the cost per million
// tokens (when priced), printed for a person or written as JSON (the --json contract: ttft_ms,
// tpot_ms, e2e_latency_s each {mean, p50, p90, p95, p99}, output_tokens_per_s, requests_per_s,
// goodput_requests_per_s, usd_per_million_tokens, bottleneck, ...).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "models/serving/serving.hpp"
#include "services/scenario.hpp"

namespace stacksim::analysis {

struct ServingRunOptions {
  bool search_max_rate = true;  // with an SLO: also find the highest request rate that meets it
  bool record_steps = false;    // keep engine steps and every request's times (a trace)
};

struct ServingRun {
  serving::ServingResult result;
  bool searched = false;  // the max-rate search ran (an SLO was given)
  serving::RateSearchResult rate;
  bool slo_met = false;     // the workload as given meets the SLO
  double usd_per_hour = 0;  // the whole cluster at the scenario's prices; 0 without prices
  double usd_per_million_output_tokens = 0, usd_per_million_total_tokens = 0;
  double usd_per_million_output_tokens_at_max_rate = 0;
};

ServingRun run_serving(const ServingSetup& setup, const ServingRunOptions& options = {});

// "ttft_ms.p99 <= 2000, tpot_ms.p99 <= 100"
std::string slo_text(const serving::Slo& slo);
// Plain words for an engine-step category ("weight_read" -> "weight reads from HBM").
std::string serving_category_label(const std::string& category);

// `stacksim sweep` on a serving scenario: the result columns (the last is "error") and one row's
// values without it.
std::vector<std::string> serving_sweep_columns();
std::vector<std::string> serving_sweep_row(const ServingSetup& setup);

nlohmann::json serving_json(const Scenario& s, const ServingRun& r);
void print_serving(const Scenario& s, const ServingRun& r, bool verbose, std::ostream& out);

}  // namespace stacksim::analysis
