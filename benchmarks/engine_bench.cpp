// Engine throughput: events per second on synthetic loads, and the cost of max-min re-solves
// with thousands of concurrent flows (ns-3's bench-scheduler spirit, STYLE.md 3.3 habit 9).
#include <benchmark/benchmark.h>

#include <random>

#include "sim/engine.hpp"
#include "sim/task_graph.hpp"

using namespace stacksim::sim;

// Hold model: N timers pending; each fired timer schedules one more at now + exp(1 us).
static void BM_HoldModelTimers(benchmark::State& state) {
  const int pending = static_cast<int>(state.range(0));
  const int64_t total = 1'000'000;
  for (auto _ : state) {
    Engine e;
    std::mt19937_64 rng(1);
    std::exponential_distribution<double> dt(1e6);
    int64_t fired = 0;
    e.on_timer([&](uint64_t) {
      if (++fired + pending <= total) e.schedule_timer(e.now() + Time::from_seconds_ceil(dt(rng)), 0);
    });
    for (int i = 0; i < pending; ++i) e.schedule_timer(Time::from_seconds_ceil(dt(rng)), 0);
    e.run();
    benchmark::DoNotOptimize(fired);
  }
  state.SetItemsProcessed(state.iterations() * total);
}
BENCHMARK(BM_HoldModelTimers)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

// Independent compute activities, each alone on its own GPU resource: start + finish per event.
static void BM_IndependentActivities(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Engine e;
    std::vector<ResourceId> gpus;
    for (int i = 0; i < 1024; ++i) gpus.push_back(e.add_resource({"gpu", 1.0}));
    int done = 0;
    e.on_completion([&](ActivityId, uint64_t tag) {
      if (++done <= n - 1024) {
        ActivitySpec a;
        a.work = 1e-6 * (1 + tag % 7);
        a.usages = {{gpus[tag % 1024]}};
        e.start(a, tag + 1024);
      }
    });
    for (int i = 0; i < 1024; ++i) {
      ActivitySpec a;
      a.work = 1e-6 * (1 + i % 7);
      a.usages = {{gpus[i]}};
      e.start(a, i);
    }
    e.run();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_IndependentActivities)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// One full solve: 10,000 flows on random 6-hop routes over 10,000 links, started in one batch.
static void BM_MaxMinSolve10kFlows(benchmark::State& state) {
  const int flows = static_cast<int>(state.range(0)), links = 10000;
  for (auto _ : state) {
    state.PauseTiming();
    Engine e;
    std::vector<ResourceId> l;
    for (int i = 0; i < links; ++i) l.push_back(e.add_resource({"link", 1e11}));
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> pick(0, links - 1);
    state.ResumeTiming();
    for (int f = 0; f < flows; ++f) {
      ActivitySpec a;
      a.work = 1e6;
      for (int h = 0; h < 6; ++h) a.usages.push_back({l[pick(rng)]});
      e.start(a, f);
    }
    e.run(Time::from_ps(1));  // process the start batch: one solve of every flow
    benchmark::DoNotOptimize(e.stats().solves);
  }
}
BENCHMARK(BM_MaxMinSolve10kFlows)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
