// What a serving run reports: request metrics streamed into bounded-memory statistics, step
// time by category, KV utilisation over time, and the bottleneck named from them.
#pragma once
#include <vector>

#include "models/serving/instance.hpp"
#include "models/serving/metrics.hpp"

namespace stacksim::serving {

class Summary {
 public:
  Summary(const Slo& slo, const SimOptions& options) : slo_(slo), opt_(options) {}
  void add_step(const StepOutcome& o, int instance, bool prefill_pool, double start_s);
  void add_request(const Seq& s);
  void add_transfer(double seconds) { categories_[static_cast<size_t>(StepCategory::PdTransfer)] += seconds; }
  long long completed() const { return completed_; }
  ServingResult finish();

 private:
  void name_bottleneck(ServingResult& r) const;
  const Slo& slo_;
  const SimOptions& opt_;
  StreamingStat ttft_ms_, tpot_ms_, e2e_s_, queue_s_;
  long long completed_ = 0, measured_ = 0, good_ = 0, input_ = 0, output_ = 0, preemptions_ = 0, steps_ = 0;
  long long kv_blocked_steps_ = 0;
  double first_arrival_s_ = -1, last_finish_s_ = 0;
  double step_seconds_ = 0, kv_weighted_ = 0, kv_max_ = 0, seqs_weighted_ = 0;
  CategorySeconds categories_{};
  std::vector<std::pair<double, double>> timeline_;
  double timeline_step_s_ = 0.01, timeline_next_s_ = 0;
  std::vector<RequestRecord> requests_;
  std::vector<StepRecord> steps_kept_;
};

}  // namespace stacksim::serving
