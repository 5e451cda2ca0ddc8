// `stacksim validate`: predicts every case of a stacksim-validation/1 file
// (../shared/validation/README.md) and compares with the published measurement.
// Training cases go through the full replay; gemm/memory cases through the kernel model;
// collective cases through the collective model on the case's topology; serving cases through
// the serving replay (serving_cases.hpp), every measured figure compared. A case that cannot be
// built is listed with its reason and counted apart, never dropped.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "services/stack_profile.hpp"

namespace stacksim::analysis {

// One measured figure of a case with several (serving: throughput, TTFT, TPOT, e2e percentiles),
// named as in the case file ("ttft_ms.p99").
struct MetricOutcome {
  std::string metric;
  double measured = 0, predicted = 0, error_pct = 0;
};

struct CaseOutcome {
  std::string id, kind, source, metric;
  double predicted = 0, measured = 0, error_pct = 0;  // error = (predicted - measured) / measured
  std::string error;                                  // non-empty: not buildable, and why
  std::vector<std::string> defaults;                  // fields filled by the global null policy
  std::string scenario_yaml;                          // training/serving: the scenario built and run
  std::vector<MetricOutcome> metrics;                 // serving: every measured figure, the primary first
  // Training: what `stacksim fit` reads (stack_fit.hpp): the stack family simulated, the step's
  // breakdown (seconds per category), its GPU kernels per rank, the GPU and the job's size.
  std::string family, architecture;
  int num_gpus = 0;
  double step_time_s = 0, kernels_per_step = 0;
  std::vector<std::pair<std::string, double>> breakdown;
  bool time_like = true;  // the metric grows with the step time
  // The 80 % interval of the prediction, in the metric's unit (0, 0: none installed).
  std::pair<double, double> interval{0, 0};
  bool ok() const { return error.empty(); }
  bool has_interval() const { return interval.second > 0; }
  bool inside() const { return measured >= interval.first && measured <= interval.second; }
};

struct ValidationFilter {
  std::vector<std::string> kinds;    // empty = all
  std::vector<std::string> sources;  // empty = all
  std::vector<std::string> ids;      // empty = all (substring match)
  // Stack parameters for training cases: the fitted ones (stacks/fitted.yaml), the reference
  // (identity: the base run `stacksim fit` starts from), or per source and family (its CV folds).
  enum class StackParams { Fitted, Reference, PerSource } stack_params = StackParams::Fitted;
  std::map<std::string, std::map<std::string, StackParameters>> per_source;  // source -> family -> params
};

std::vector<CaseOutcome> validate_file(const std::string& cases_path, const ValidationFilter& filter);

nlohmann::json validation_json(const std::vector<CaseOutcome>& outcomes);
void print_validation(const std::vector<CaseOutcome>& outcomes, std::ostream& out);

}  // namespace stacksim::analysis
