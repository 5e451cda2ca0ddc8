// Small pieces of the public API: engine defaults, speculative yield, SLO checks, cost.
#include <cmath>
#include <stdexcept>

#include "models/serving/serving.hpp"

namespace stacksim::serving {

double SpeculativeConfig::tokens_per_step() const {
  if (draft_tokens <= 0) return 1;
  const double a = acceptance_rate;
  if (a >= 1) return draft_tokens + 1;
  return (1 - std::pow(a, draft_tokens + 1)) / (1 - a);
}

ServingConfig config_for_engine(const EngineProfile& engine) {
  ServingConfig c;
  c.engine = engine;
  c.max_num_seqs = engine.max_num_seqs;
  c.max_num_batched_tokens = engine.max_num_batched_tokens;
  c.block_size_tokens = engine.block_size_tokens;
  c.gpu_memory_utilization = engine.gpu_memory_utilization;
  c.kv_free_memory_fraction = engine.kv_free_memory_fraction;
  c.chunked_prefill = engine.chunked_prefill;
  return c;
}

double Percentiles::get(const std::string& stat) const {
  if (stat == "mean") return mean;
  if (stat == "p50" || stat == "median") return p50;
  if (stat == "p90") return p90;
  if (stat == "p95") return p95;
  if (stat == "p99") return p99;
  throw std::invalid_argument("unknown statistic '" + stat + "' (use mean, p50, p90, p95 or p99)");
}

bool meets_slo(const ServingResult& r, const Slo& slo) {
  auto ok = [](const SloLimit& l, const Percentiles& p) { return l.limit <= 0 || p.get(l.stat) <= l.limit; };
  return ok(slo.ttft_ms, r.ttft_ms) && ok(slo.tpot_ms, r.tpot_ms) && ok(slo.e2e_latency_s, r.e2e_latency_s);
}

double usd_per_million_tokens(const ServingResult& r, double gpu_hour_usd, bool output_tokens_only) {
  const double tokens_per_s = output_tokens_only ? r.output_tokens_per_s : r.total_tokens_per_s;
  if (tokens_per_s <= 0 || r.gpus <= 0) return 0;
  return gpu_hour_usd * r.gpus / 3600.0 / tokens_per_s * 1e6;
}

}  // namespace stacksim::serving
