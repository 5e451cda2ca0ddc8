// Engine throughput (STYLE.md 3.3 habit 9), in the spirit of ns-3's utils/bench-scheduler.cc.
//
// QueueHold: the same load on the EventQueue alone (pop the minimum, push it back later), without
// the engine's batching and handler calls. items_per_second = pop + push pairs per second.
//
// HoldModel: the classic queue benchmark (Vaucher & Duval 1975): `pending` timers are in the queue;
// each one that fires schedules a new one a pseudo-random increment later, so the queue size stays
// constant and every event is one pop plus one push. items_per_second = timer events per second.
//
// IndependentCompute: `pending` activities, each alone on its own resource (a GPU running a kernel
// stream); each completion starts the next kernel on the same resource. Every kernel costs two
// queue events (latency done, finish) and one single-activity re-solve, so this measures the whole
// start -> solve -> predict -> complete path. items_per_second = completed activities per second.
//
// ExecuteGraph: a task graph of `tasks` kernels over 1024 GPU streams (one resource each), each
// task also depending on a recent task of another stream (as a collective couples ranks); measures
// TaskGraph construction plus execute(). items_per_second = tasks replayed per second.
//
// Increments come from a fixed table filled by a seeded generator, so runs are reproducible and the
// generator is not what is timed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/task_graph.hpp"

namespace {

using stacksim::sim::ActivityId;
using stacksim::sim::ActivitySpec;
using stacksim::sim::Engine;
using stacksim::sim::EventQueue;
using stacksim::sim::ResourceId;
using stacksim::sim::Time;

constexpr size_t kTableSize = 1 << 16;  // power of two: index by mask

std::vector<int64_t> increment_table_ps(uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> exp_ns(1.0);  // mean 1 us, in ns below
  std::vector<int64_t> t(kTableSize);
  for (auto& v : t) v = 1 + static_cast<int64_t>(exp_ns(rng) * 1e6);
  return t;
}

void BM_QueueHold(benchmark::State& state) {
  const auto pending = static_cast<uint64_t>(state.range(0));
  const std::vector<int64_t> inc = increment_table_ps(1);
  EventQueue queue;
  size_t k = 0;
  for (uint64_t i = 0; i < pending; ++i) queue.push(Time::from_ps(inc[k++ & (kTableSize - 1)]), 0, i);
  for (auto _ : state) {
    const EventQueue::Entry e = queue.pop();
    queue.push(e.time + Time::from_ps(inc[k++ & (kTableSize - 1)]), 0, e.payload);
  }
  benchmark::DoNotOptimize(queue.top());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_QueueHold)->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 17)->Arg(1 << 20);

void BM_HoldModel(benchmark::State& state) {
  const auto pending = static_cast<uint64_t>(state.range(0));
  const uint64_t events_per_run = 1'000'000;
  const std::vector<int64_t> inc = increment_table_ps(1);
  uint64_t total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Engine engine;
    uint64_t fired = 0;
    size_t k = 0;
    engine.on_timer([&](uint64_t tag) {
      ++fired;
      // Keep the queue at `pending` events until the budget is spent, then let it drain.
      if (fired + pending <= events_per_run)
        engine.schedule_timer(engine.now() + Time::from_ps(inc[k++ & (kTableSize - 1)]), tag);
    });
    for (uint64_t i = 0; i < pending; ++i) engine.schedule_timer(Time::from_ps(inc[k++ & (kTableSize - 1)]), i);
    state.ResumeTiming();
    engine.run();
    benchmark::DoNotOptimize(engine.now());
    total += engine.stats().events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
}
BENCHMARK(BM_HoldModel)->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 17)->Unit(benchmark::kMillisecond);

void BM_IndependentCompute(benchmark::State& state) {
  const auto resources = static_cast<uint32_t>(state.range(0));
  const uint64_t activities_per_run = 500'000;
  const std::vector<int64_t> inc = increment_table_ps(2);
  uint64_t total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Engine engine;
    std::vector<ActivitySpec> spec(resources);
    for (uint32_t r = 0; r < resources; ++r) {
      const ResourceId id = engine.add_resource({"gpu" + std::to_string(r), 1.0});
      spec[r].usages = {{id, 1.0}};
    }
    uint64_t started = 0;
    size_t k = 0;
    auto launch = [&](uint32_t r) {
      spec[r].work = static_cast<double>(inc[k++ & (kTableSize - 1)]) * 1e-12;  // seconds of the GPU
      engine.start(spec[r], r);
      ++started;
    };
    engine.on_completion([&](ActivityId, uint64_t tag) {
      if (started < activities_per_run) launch(static_cast<uint32_t>(tag));
    });
    for (uint32_t r = 0; r < resources; ++r) launch(r);
    state.ResumeTiming();
    engine.run();
    benchmark::DoNotOptimize(engine.now());
    total += engine.stats().events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
}
BENCHMARK(BM_IndependentCompute)->Arg(64)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_ExecuteGraph(benchmark::State& state) {
  const auto tasks = static_cast<uint32_t>(state.range(0));
  constexpr uint32_t kStreams = 1024;
  const std::vector<int64_t> inc = increment_table_ps(3);
  for (auto _ : state) {
    stacksim::sim::Engine engine;
    stacksim::sim::TaskGraph graph;
    std::vector<stacksim::sim::StreamId> streams;
    std::vector<ResourceId> gpus;
    for (uint32_t s = 0; s < kStreams; ++s) {
      gpus.push_back(engine.add_resource({"gpu" + std::to_string(s), 1.0}));
      streams.push_back(graph.add_stream());
    }
    const uint32_t name = graph.intern("kernel");
    size_t k = 0;
    for (uint32_t i = 0; i < tasks; ++i) {
      const uint32_t s = i % kStreams;
      stacksim::sim::TaskSpec t;
      t.activity.work = static_cast<double>(inc[k++ & (kTableSize - 1)]) * 1e-12;
      t.activity.usages = {{gpus[s], 1.0}};
      t.name = name;
      const auto id = graph.add_on_stream(streams[s], std::move(t));
      if (id >= 2 * kStreams) graph.add_dependency(id - kStreams - 1 - (inc[k & (kTableSize - 1)] % 64), id);
    }
    const stacksim::sim::ExecutionResult r = stacksim::sim::execute(engine, graph);
    benchmark::DoNotOptimize(r.makespan);
    state.counters["events"] = static_cast<double>(engine.stats().events);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * tasks);
}
BENCHMARK(BM_ExecuteGraph)->Arg(1 << 20)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
