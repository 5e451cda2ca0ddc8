// Cost of the max-min sharing solve (STYLE.md 3.3 habits 2 and 9).
//
// FullSolve: `flows` concurrent flows, each on a random 6-hop route over `links` links of random
// capacity (about 6 flows per link: every link is shared, and nearly all flows form one connected
// component). Times one MaxMinSolver::solve over all flows; the target is well under 20 ms for
// 10k flows on 10k links.
//
// EngineStartBatch: the same load started on an engine in one batch: component flood, one solve
// and 10k finish predictions, i.e. FullSolve plus the engine's own overhead.
//
// EngineAddRemove: the same load as long-running engine activities; each iteration starts one
// short flow on a random route and runs until it has finished, i.e. two batches, each re-solving
// the component(s) the short flow touches (one item = one add + one remove). With random routes
// the component is the whole system, so this is the worst case of the selective update.
//
// EngineAddRemoveClustered: routes stay inside groups of 64 links (as flows of one rail or one
// leaf switch do), so a component holds about 64 flows and the selective update re-solves only
// that group: its cost should not grow with the system size.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "sim/engine.hpp"
#include "sim/max_min_solver.hpp"

namespace {

using namespace stacksim::sim;

constexpr int kHops = 6;

struct Routes {
  std::vector<double> capacity_Bps;
  std::vector<std::vector<uint32_t>> links;  // per flow
};

// Random routes of kHops distinct links. group = 0: over all links; otherwise within a
// group of `group` consecutive links.
Routes make_routes(uint32_t num_links, uint32_t num_flows, uint32_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cap(100e9, 400e9);
  Routes r;
  r.capacity_Bps.resize(num_links);
  for (auto& c : r.capacity_Bps) c = cap(rng);
  r.links.resize(num_flows);
  const uint32_t span = group == 0 ? num_links : group;
  const uint32_t groups = num_links / span;
  for (uint32_t f = 0; f < num_flows; ++f) {
    const uint32_t base = (group == 0 ? 0 : (f % groups) * span);
    std::uniform_int_distribution<uint32_t> pick(0, span - 1);
    auto& route = r.links[f];
    while (route.size() < kHops) {
      const uint32_t l = base + pick(rng);
      bool dup = false;
      for (uint32_t x : route) dup |= (x == l);
      if (!dup) route.push_back(l);
    }
  }
  return r;
}

void BM_FullSolve(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const Routes routes = make_routes(n, n, 0, 11);
  std::vector<SolverConstraint> cons(n);
  for (uint32_t l = 0; l < n; ++l) cons[l] = {routes.capacity_Bps[l], false};
  std::vector<std::vector<SolverElement>> elements(n);
  std::vector<SolverVariable> vars(n);
  std::vector<uint32_t> all(n);
  for (uint32_t f = 0; f < n; ++f) {
    for (uint32_t l : routes.links[f]) elements[f].push_back({l, 1.0});
    vars[f] = {elements[f].data(), static_cast<uint32_t>(elements[f].size()), kUnbounded};
    all[f] = f;
  }
  std::vector<double> rates(n);
  MaxMinSolver solver;
  for (auto _ : state) {
    solver.solve(cons, vars, all, rates);
    benchmark::DoNotOptimize(rates.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);  // flows solved per second
}
BENCHMARK(BM_FullSolve)->Arg(1000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMillisecond);

void BM_EngineStartBatch(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const Routes routes = make_routes(n, n, 0, 11);
  std::vector<ActivitySpec> specs(n);
  for (uint32_t f = 0; f < n; ++f) {
    specs[f].work = 1e9;
    for (uint32_t l : routes.links[f]) specs[f].usages.push_back({l, 1.0});
  }
  std::unique_ptr<Engine> engine;
  for (auto _ : state) {
    state.PauseTiming();
    engine = std::make_unique<Engine>();  // the previous one is destroyed untimed
    for (uint32_t l = 0; l < n; ++l) engine->add_resource({"link" + std::to_string(l), routes.capacity_Bps[l]});
    state.ResumeTiming();
    for (uint32_t f = 0; f < n; ++f) engine->start(specs[f], f);
    engine->run(Time::zero());  // the start batch only: flows end much later
    benchmark::DoNotOptimize(engine->stats().solves);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
}
BENCHMARK(BM_EngineStartBatch)->Arg(10000)->Unit(benchmark::kMillisecond);

void add_remove(benchmark::State& state, uint32_t group) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const Routes routes = make_routes(n, n, group, 13);
  Engine engine;
  for (uint32_t l = 0; l < n; ++l) engine.add_resource({"link" + std::to_string(l), routes.capacity_Bps[l]});
  auto spec_for = [&](const std::vector<uint32_t>& route, double bytes) {
    ActivitySpec a;
    a.work = bytes;
    for (uint32_t l : route) a.usages.push_back({l, 1.0});
    return a;
  };
  // Long flows: ~1e18 bytes at >= ~1e9 B/s never finish within the benchmark's simulated time.
  for (uint32_t f = 0; f < n; ++f) engine.start(spec_for(routes.links[f], 1e18), f);
  engine.run(Time::zero());
  const Routes probes = make_routes(n, 1024, group, 17);
  const uint64_t solved_before = engine.stats().solved_activities;
  size_t k = 0;
  for (auto _ : state) {
    engine.start(spec_for(probes.links[k++ % probes.links.size()], 1e3), n);
    // 1 kB at >= ~1e8 B/s ends within ~10 us; the long flows end ~1e9 s later.
    engine.run(engine.now() + Time::from_seconds(1e-3));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["solved_per_item"] = benchmark::Counter(
      static_cast<double>(engine.stats().solved_activities - solved_before) / static_cast<double>(state.iterations()));
}

void BM_EngineAddRemove(benchmark::State& state) { add_remove(state, 0); }
void BM_EngineAddRemoveClustered(benchmark::State& state) { add_remove(state, 64); }
BENCHMARK(BM_EngineAddRemove)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineAddRemoveClustered)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
