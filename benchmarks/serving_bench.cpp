// Wall time of the serving simulator (issue 35 targets): 10,000 requests of Llama-3 70B on 8 H100s
// (TP8, FP8) <= 2 s; 1,000,000 requests <= 60 s in bounded memory (streamed metrics: the peak RSS
// is reported); the max-rate-under-SLO search <= 10 s.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "models/serving/serving.hpp"
#include "tests/serving/fixtures.hpp"  // the serving tests' model, hardware and engine

using namespace stacksim;
using namespace stacksim::serving;
using stacksim::serving::testing::dgx_h100;
using stacksim::serving::testing::llama3_70b;
using stacksim::serving::testing::tp8_fp8;

namespace {

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
