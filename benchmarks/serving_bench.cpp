// Wall time of the serving simulator (issue 35 targets): 10,000 requests of Llama-3 70B on 8 H100s
// (TP8, FP8) <= 2 s; 1,000,000 requests <= 60 s in bounded memory (streamed metrics: the peak RSS
// is reported); the max-rate-under-SLO search <= 10 s.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "config/yaml.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/serving/serving.hpp"

using namespace stacksim;
using namespace stacksim::serving;

namespace {

workload::ModelConfig llama3_70b() {
  workload::ModelConfig m;
  m.name = "Llama-3 70B";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.vocab = 128256;
  m.mlp = workload::Mlp::SwiGlu;
  m.norm = workload::Norm::RmsNorm;
  m.attention_kind = workload::AttentionKind::Gqa;
  return m;
}

ServingHardware dgx_h100() {
  ServingHardware h;
  h.gpu = hw::bundled_gpus().get("H100-SXM5-80GB");
  h.cluster = topo::parse_cluster_config(config::Node::load_string("node: dgx-h100\nnodes: 1\n", "bench"),
                                         hw::bundled_nodes());
  return h;
}

ServingConfig tp8_fp8() {
  ServingConfig c = config_for_engine(load_engine_profile("vllm", "0.8"));
  c.parallel.tp = 8;
  c.weights_dtype = c.activations_dtype = c.kv_dtype = Dtype::FP8;
  return c;
}

// ShareGPT-like lengths (normal, clamped).
Workload sharegpt_like(ArrivalMode mode, long long n, double rate) {
  Workload w;
  w.mode = mode;
  w.num_requests = n;
  w.rate_per_s = rate;
  w.input.kind = w.output.kind = LengthDist::Kind::Normal;
  w.input.mean_tokens = 600;
  w.input.stddev_tokens = 300;
  w.input.max_tokens = 4000;
  w.output.mean_tokens = 250;
  w.output.stddev_tokens = 120;
  w.output.max_tokens = 2000;
  w.seed = 1;
  return w;
}

void report(benchmark::State& state, const ServingResult& r) {
  state.counters["requests"] = static_cast<double>(r.completed_requests);
  state.counters["steps"] = static_cast<double>(r.steps);
  state.counters["output_tok_per_s"] = r.output_tokens_per_s;
  state.counters["ttft_p99_ms"] = r.ttft_ms.p99;
  state.counters["tpot_p99_ms"] = r.tpot_ms.p99;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  state.counters["max_rss_MiB"] = static_cast<double>(u.ru_maxrss) / 1024;
}

void BM_Llama3_70B_TP8_10k_Offline(benchmark::State& state) {
  const auto h = dgx_h100();
  const auto m = llama3_70b();
  const auto c = tp8_fp8();
  ServingResult r;
  for (auto _ : state) r = simulate_serving(c, sharegpt_like(ArrivalMode::Offline, 10000, 0), m, h);
  report(state, r);
}

void BM_Llama3_70B_TP8_1M_Poisson(benchmark::State& state) {
  const auto h = dgx_h100();
  const auto m = llama3_70b();
  const auto c = tp8_fp8();
  const double capacity = simulate_serving(c, sharegpt_like(ArrivalMode::Offline, 5000, 0), m, h).requests_per_s;
  ServingResult r;
  for (auto _ : state) r = simulate_serving(c, sharegpt_like(ArrivalMode::Poisson, 1000000, 0.7 * capacity), m, h);
  report(state, r);
}

void BM_Llama3_70B_TP8_MaxRateUnderSlo(benchmark::State& state) {
  const auto h = dgx_h100();
  const auto m = llama3_70b();
  const auto c = tp8_fp8();
  Slo slo;
  slo.ttft_ms = {2000, "p99"};
  slo.tpot_ms = {100, "p99"};
  RateSearchResult r;
  for (auto _ : state) r = max_rate_under_slo(c, sharegpt_like(ArrivalMode::Poisson, 5000, 1), m, h, slo);
  state.counters["max_rate_per_s"] = r.max_rate_per_s;
  state.counters["evaluations"] = r.evaluations;
  report(state, r.at_max_rate);
}

}  // namespace

BENCHMARK(BM_Llama3_70B_TP8_10k_Offline)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Llama3_70B_TP8_MaxRateUnderSlo)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Llama3_70B_TP8_1M_Poisson)->Unit(benchmark::kSecond)->Iterations(1);

BENCHMARK_MAIN();
