#include "models/serving/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace stacksim::serving {
namespace {

Percentiles percentiles(const StreamingStat& s) {
  return {s.mean(), s.percentile(50), s.percentile(90), s.percentile(95), s.percentile(99)};
}

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", 100 * share);
  return buf;
}

}  // namespace

void Summary::add_step(const StepOutcome& o, int instance, bool prefill_pool, double start_s) {
  ++steps_;
  preemptions_ += o.preemptions;
  if (o.kv_blocked) ++kv_blocked_steps_;
  step_seconds_ += o.seconds;
  kv_weighted_ += o.kv_utilization * o.seconds;
  kv_max_ = std::max(kv_max_, o.kv_utilization);
  seqs_weighted_ += static_cast<double>(o.shape.decode_seqs) * o.seconds;
  for (size_t c = 0; c < kStepCategories; ++c) categories_[c] += o.cost.by_category[c];
  if (instance == 0 && start_s >= timeline_next_s_) {
    timeline_.emplace_back(start_s, o.kv_utilization);
    timeline_next_s_ = start_s + timeline_step_s_;
    if (timeline_.size() >= 512) {  // halve the resolution: keep every other point
      size_t k = 0;
      for (size_t i = 0; i < timeline_.size(); i += 2) timeline_[k++] = timeline_[i];
      timeline_.resize(k);
      timeline_step_s_ *= 2;
    }
  }
  if (opt_.record_steps && static_cast<long long>(steps_kept_.size()) < opt_.max_recorded_steps) {
    StepRecord r;
    r.instance = instance;
    r.prefill_pool = prefill_pool;
    r.start_s = start_s;
    r.seconds = o.seconds;
    r.decode_seqs = static_cast<int>(o.shape.decode_seqs);
    r.prefill_seqs = static_cast<int>(o.shape.prefill_seqs);
    r.prefill_tokens = o.shape.prefill_tokens;
    r.kv_utilization = o.kv_utilization;
    steps_kept_.push_back(r);
  }
}

void Summary::add_request(const Seq& s) {
  ++completed_;
  if (s.arrival_s < opt_.metrics_warmup_s) return;
  ++measured_;
  if (first_arrival_s_ < 0 || s.arrival_s < first_arrival_s_) first_arrival_s_ = s.arrival_s;
  last_finish_s_ = std::max(last_finish_s_, s.finish_s);
  input_ += s.input_tokens;
  output_ += s.output_tokens;
  const double ttft_ms = (s.first_token_s - s.arrival_s) * 1e3;
  const double e2e_s = s.finish_s - s.arrival_s;
  ttft_ms_.add(ttft_ms);
  e2e_s_.add(e2e_s);
  queue_s_.add(s.scheduled_s - s.arrival_s);
  double tpot_ms = 0;
  if (s.output_tokens > 1) {  // inter-token latency after the first token (benchmark_serving's TPOT)
    tpot_ms = (s.finish_s - s.first_token_s) * 1e3 / static_cast<double>(s.output_tokens - 1);
    tpot_ms_.add(tpot_ms);
  }
  const bool good = (slo_.ttft_ms.limit <= 0 || ttft_ms <= slo_.ttft_ms.limit) &&
                    (slo_.tpot_ms.limit <= 0 || tpot_ms <= slo_.tpot_ms.limit) &&
                    (slo_.e2e_latency_s.limit <= 0 || e2e_s <= slo_.e2e_latency_s.limit);
  if (good) ++good_;
  if (opt_.record_requests)
    requests_.push_back(
        {s.id, s.instance, s.arrival_s, s.first_token_s, s.finish_s, s.input_tokens, s.output_tokens, s.preemptions});
}

ServingResult Summary::finish() {
  ServingResult r;
  r.ttft_ms = percentiles(ttft_ms_);
  r.tpot_ms = percentiles(tpot_ms_);
  r.e2e_latency_s = percentiles(e2e_s_);
  r.queueing_s = percentiles(queue_s_);
  r.completed_requests = completed_;
  r.input_tokens = input_;
  r.output_tokens = output_;
  r.duration_s = std::max(0.0, last_finish_s_ - std::max(0.0, first_arrival_s_));
  if (r.duration_s > 0) {
    r.output_tokens_per_s = static_cast<double>(output_) / r.duration_s;
    r.total_tokens_per_s = static_cast<double>(input_ + output_) / r.duration_s;
    r.requests_per_s = static_cast<double>(measured_) / r.duration_s;
    r.goodput_requests_per_s = static_cast<double>(good_) / r.duration_s;
  }
  r.preemptions = preemptions_;
  r.steps = steps_;
  if (step_seconds_ > 0) {
    r.kv_utilization_mean = kv_weighted_ / step_seconds_;
    r.mean_running_seqs = seqs_weighted_ / step_seconds_;
  }
  r.kv_utilization_max = kv_max_;
  r.kv_utilization_timeline = timeline_;
  for (size_t c = 0; c < kStepCategories; ++c)
    r.step_seconds[step_category_name(static_cast<StepCategory>(c))] = categories_[c];
  r.requests = std::move(requests_);
  r.step_records = std::move(steps_kept_);
  name_bottleneck(r);
  return r;
}

void Summary::name_bottleneck(ServingResult& r) const {
  double busy = 0;
  for (size_t c = 0; c < kStepCategories; ++c)
    if (static_cast<StepCategory>(c) != StepCategory::PdTransfer) busy += categories_[c];
  if (busy <= 0) {
    r.bottleneck = "none";
    return;
  }
  const double preempt_share = completed_ > 0 ? static_cast<double>(preemptions_) / static_cast<double>(completed_) : 0;
  const double blocked_share = steps_ > 0 ? static_cast<double>(kv_blocked_steps_) / static_cast<double>(steps_) : 0;
  if (preempt_share > 0.05 || (blocked_share > 0.5 && r.kv_utilization_mean > 0.9)) {
    r.bottleneck = "KV-cache capacity";
    r.bottleneck_detail = std::to_string(preemptions_) + " preemptions over " + std::to_string(completed_) +
                          " requests; admission waited for free KV blocks in " + pct(blocked_share) +
                          " of steps (KV use " + pct(r.kv_utilization_mean) +
                          " on average): more HBM for the KV cache, an 8-bit KV cache or more tp raise the batch";
    return;
  }
  static const char* const kWords[] = {"weight reads from HBM (memory-bound decode)",
                                       "KV-cache reads from HBM",
                                       "GEMM compute (tensor cores)",
                                       "attention compute (prefill)",
                                       "element-wise kernels (HBM)",
                                       "TP all-reduce",
                                       "EP all-to-all",
                                       "pipeline transfers",
                                       "scheduler/host overhead per step",
                                       "speculative draft model",
                                       "prefill-to-decode KV transfer"};
  size_t best = 0;
  for (size_t c = 1; c < kStepCategories; ++c)
    if (categories_[c] > categories_[best]) best = c;
  r.bottleneck = kWords[best];
  r.bottleneck_detail = std::string(step_category_name(static_cast<StepCategory>(best))) + " takes " +
                        pct(categories_[best] / busy) + " of the engine-step time";
}

}  // namespace stacksim::serving
