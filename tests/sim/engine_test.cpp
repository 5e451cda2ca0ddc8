// The engine against closed forms (STYLE.md 3.3 habit 8): each test states the formula it checks.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "sim/engine.hpp"
#include "sim/max_min_solver.hpp"
#include "sim/task_graph.hpp"
#include "sim/trace.hpp"
#include "sim/units.hpp"

using namespace stacksim::sim;

namespace {

// Runs independent activities to completion; returns each one's finish time in seconds.
std::vector<double> finish_times(Engine& e, const std::vector<ActivitySpec>& specs) {
  std::vector<double> done(specs.size(), -1);
  e.on_completion([&](ActivityId, uint64_t tag) { done[tag] = e.now().seconds(); });
  for (size_t i = 0; i < specs.size(); ++i) e.start(specs[i], i);
  e.run();
  return done;
}

ActivitySpec flow(double bytes, std::vector<Usage> route, double latency_s = 0) {
  ActivitySpec a;
  a.work = bytes;
  a.usages.assign(route.begin(), route.end());
  a.latency = Time::from_seconds(latency_s);
  return a;
}

constexpr double kTol = 1e-9;

}  // namespace

TEST(Units, ParsesSiBinaryAndBitUnits) {
  EXPECT_DOUBLE_EQ(parse_quantity("450 GB/s", Dimension::Bandwidth), 450e9);
  EXPECT_DOUBLE_EQ(parse_quantity("400 Gb/s", Dimension::Bandwidth), 50e9);
  EXPECT_DOUBLE_EQ(parse_quantity("80GiB", Dimension::Bytes), 80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_quantity("1.5 us", Dimension::Time), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_quantity("989 TFLOPS", Dimension::FlopRate), 989e12);
  EXPECT_DOUBLE_EQ(parse_quantity("85%", Dimension::Dimensionless), 0.85);
  EXPECT_DOUBLE_EQ(parse_quantity("3", Dimension::Time, 1e-6), 3e-6);
  EXPECT_THROW(parse_quantity("450 GB", Dimension::Bandwidth), std::invalid_argument);
  EXPECT_THROW(parse_quantity("fast", Dimension::Bandwidth), std::invalid_argument);
  EXPECT_THROW(parse_quantity("3", Dimension::Time), std::invalid_argument);
  EXPECT_THROW(parse_quantity("3 furlongs", Dimension::Time), std::invalid_argument);
}

TEST(Time, RoundsUpSoDurationsNeverVanish) {
  EXPECT_EQ(Time::from_seconds_ceil(0.1e-12).ps(), 1);
  EXPECT_EQ(Time::from_seconds_ceil(2e-12).ps(), 2);
  EXPECT_EQ(Time::from_seconds_ceil(0).ps(), 0);
}

TEST(Engine, OneFlowAloneTakesLatencyPlusBytesOverTheBottleneck) {
  // t = latency + bytes / min(bw) = 1 us + 1e9 / 50e9.
  Engine e;
  const auto a = e.add_resource({"l1", 100e9});
  const auto b = e.add_resource({"l2", 50e9});
  const auto c = e.add_resource({"l3", 80e9});
  const auto t = finish_times(e, {flow(1e9, {{a}, {b}, {c}}, 1e-6)});
  EXPECT_NEAR(t[0], 1e-6 + 1e9 / 50e9, kTol);
}

TEST(Engine, NFlowsShareALinkEquallyAndFinishTogether) {
  // Each of N flows gets bw/N; all end at N * bytes / bw.
  Engine e;
  const auto l = e.add_resource({"link", 10e9});
  std::vector<ActivitySpec> f(5, flow(2e9, {{l}}));
  for (double t : finish_times(e, f)) EXPECT_NEAR(t, 5 * 2e9 / 10e9, kTol);
}

TEST(Engine, UnequalFlowsReshareWhenOneEnds) {
  // 1 GB and 3 GB on 10 GB/s: both at 5 GB/s until 0.2 s (1 GB done); the other has 2 GB left at
  // 10 GB/s: ends at 0.4 s.
  Engine e;
  const auto l = e.add_resource({"link", 10e9});
  const auto t = finish_times(e, {flow(1e9, {{l}}), flow(3e9, {{l}})});
  EXPECT_NEAR(t[0], 0.2, kTol);
  EXPECT_NEAR(t[1], 0.4, kTol);
  EXPECT_NEAR(e.consumed(l), 4e9, 1);  // every byte crossed the link
}

TEST(Engine, WeightedUsageAndBoundsFollowMaxMin) {
  // Weight 2 consumes twice the capacity per unit rate: x1 + 2 x2 <= 12 with equal rates gives
  // x = 4 each. A bound of 1 on a third flow frees capacity for the others.
  Engine e;
  const auto l = e.add_resource({"link", 12.0});
  e.start(flow(1e6, {{l, 1.0}}), 0);
  const auto b = e.start(flow(1e6, {{l, 2.0}}), 1);
  e.run(Time::from_seconds(1e-3));
  EXPECT_NEAR(e.rate(0), 4.0, 1e-12);
  EXPECT_NEAR(e.rate(b), 4.0, 1e-12);

  Engine e2;
  const auto l2 = e2.add_resource({"link", 12.0});
  ActivitySpec bounded = flow(1e6, {{l2}});
  bounded.bound = 1.0;
  const auto x0 = e2.start(bounded, 0);
  const auto x1 = e2.start(flow(1e6, {{l2}}), 1);
  e2.run(Time::from_seconds(1e-3));
  EXPECT_NEAR(e2.rate(x0), 1.0, 1e-12);
  EXPECT_NEAR(e2.rate(x1), 11.0, 1e-12);
}

TEST(Engine, FatPipeLimitsEachFlowAloneNotTheirSum) {
  Engine e;
  const auto sw = e.add_resource({"crossbar", 10.0, Sharing::FatPipe});
  const auto a = e.start(flow(1e6, {{sw}}), 0);
  const auto b = e.start(flow(1e6, {{sw}}), 1);
  e.run(Time::from_seconds(1e-3));
  EXPECT_NEAR(e.rate(a), 10.0, 1e-12);
  EXPECT_NEAR(e.rate(b), 10.0, 1e-12);
}

TEST(Engine, ClassicMaxMinOnThreeLinks) {
  // Links A (cap 1) and B (cap 2) in series; flow 0 crosses A and B, flow 1 only A, flow 2 only B.
  // A saturates first at level 1/2: flows 0 and 1 get 0.5; flow 2 takes B's rest: 2 - 0.5 = 1.5.
  Engine e;
  const auto A = e.add_resource({"A", 1.0});
  const auto B = e.add_resource({"B", 2.0});
  const auto f0 = e.start(flow(1e6, {{A}, {B}}), 0);
  const auto f1 = e.start(flow(1e6, {{A}}), 1);
  const auto f2 = e.start(flow(1e6, {{B}}), 2);
  e.run(Time::from_seconds(1e-3));
  EXPECT_NEAR(e.rate(f0), 0.5, 1e-12);
  EXPECT_NEAR(e.rate(f1), 0.5, 1e-12);
  EXPECT_NEAR(e.rate(f2), 1.5, 1e-12);
}

namespace {

// Max-min optimality: no capacity is exceeded, and every variable crosses a saturated constraint
// on which it has the largest rate (or sits at its bound).
void expect_max_min_optimal(const std::vector<SolverConstraint>& cons,
                            const std::vector<std::vector<SolverElement>>& els, const std::vector<SolverVariable>& vars,
                            const std::vector<double>& rates) {
  const size_t C = cons.size(), V = vars.size();
  std::vector<double> used(C, 0);
  for (size_t v = 0; v < V; ++v)
    for (const auto& e : els[v]) used[e.constraint] += e.weight * rates[v];
  for (size_t c = 0; c < C; ++c) EXPECT_LE(used[c], cons[c].capacity * (1 + 1e-9));
  for (size_t v = 0; v < V; ++v) {
    if (rates[v] >= vars[v].bound * (1 - 1e-9)) continue;
    bool bottlenecked = false;
    for (const auto& e : els[v]) {
      if (used[e.constraint] < cons[e.constraint].capacity * (1 - 1e-9)) continue;
      double max_rate = 0;
      for (size_t u = 0; u < V; ++u)
        for (const auto& f : els[u])
          if (f.constraint == e.constraint) max_rate = std::max(max_rate, rates[u]);
      if (rates[v] >= max_rate * (1 - 1e-9)) bottlenecked = true;
    }
    EXPECT_TRUE(bottlenecked) << "variable " << v;
  }
}

// A random system: `shared` constraints that every variable picks `picks` of, and `own`
// constraints per variable that no other crosses; every `bounded_every`-th variable has `bound`.
// Solved, then checked for max-min optimality.
void solve_random_and_check(uint32_t seed, int shared, int V, int picks, int own, int bounded_every, double bound) {
  std::mt19937 rng(seed);
  std::vector<SolverConstraint> cons;
  std::uniform_real_distribution<double> cap(1.0, 10.0);
  for (int c = 0; c < shared + V * own; ++c) cons.push_back({cap(rng), false});
  std::vector<std::vector<SolverElement>> els(V);
  std::vector<SolverVariable> vars(V);
  std::vector<uint32_t> idx(V);
  std::uniform_int_distribution<int> pick(0, shared - 1);
  std::uniform_real_distribution<double> w(0.5, 2.0);
  for (int v = 0; v < V; ++v) {
    for (int k = 0; k < picks; ++k) els[v].push_back({static_cast<uint32_t>(pick(rng)), w(rng)});
    for (int k = 0; k < own; ++k) els[v].push_back({static_cast<uint32_t>(shared + v * own + k), w(rng)});
    vars[v] = {els[v].data(), static_cast<uint32_t>(els[v].size()), v % bounded_every == 0 ? bound : 1e300};
    idx[v] = v;
  }
  std::vector<double> rates(V, 0);
  MaxMinSolver s;
  s.solve(cons, vars, idx, rates);
  expect_max_min_optimal(cons, els, vars, rates);
}

}  // namespace

TEST(MaxMinSolver, EveryResourceFeasibleAndEveryFlowBottlenecked) { solve_random_and_check(7, 60, 200, 4, 0, 7, 0.05); }

TEST(MaxMinSolver, ConstraintsOfOneVariableActAsItsBound) {
  // A collective's flow crosses hundreds of links no other flow of the solve crosses; the solver
  // takes them as bounds (capacity / weight). Closed form: flows 0 and 1 share S (cap 4); flow 0
  // also crosses its own P (cap 1, weight 0.5: a bound of 2) and flow 1 its own Q (cap 1). Flow 1
  // stops at 1 (Q), flow 0 at 2 (P), S keeps 1 spare. With P at cap 3 (bound 6), S saturates:
  // flow 1 still 1, flow 0 takes S's rest, 3.
  for (const double p_cap : {1.0, 3.0}) {
    std::vector<SolverConstraint> cons = {{4.0, false}, {p_cap, false}, {1.0, false}};
    std::vector<std::vector<SolverElement>> els = {{{0, 1.0}, {1, 0.5}}, {{2, 1.0}, {0, 1.0}}};
    std::vector<SolverVariable> vars = {{els[0].data(), 2, 1e300}, {els[1].data(), 2, 1e300}};
    std::vector<double> rates(2, 0);
    MaxMinSolver s;
    s.solve(cons, vars, {0, 1}, rates);
    EXPECT_DOUBLE_EQ(rates[1], 1.0);
    EXPECT_DOUBLE_EQ(rates[0], p_cap == 1.0 ? 2.0 : 3.0);
  }
  // Random instances where most constraints belong to one variable: still max-min optimal.
  solve_random_and_check(11, 8, 40, 2, 30, 5, 0.3);
}

TEST(Engine, RingAllReduceClosedForm) {
  // n GPUs in a ring, each link B: n concurrent flows of 2(n-1)/n * S bytes with latency
  // 2(n-1) * alpha finish at 2(n-1)/n * S / B + 2(n-1) * alpha.
  const int n = 8;
  const double S = 1e9, B = 100e9, alpha = 5e-6;
  Engine e;
  std::vector<ResourceId> links;
  for (int i = 0; i < n; ++i) links.push_back(e.add_resource({"l" + std::to_string(i), B}));
  std::vector<ActivitySpec> flows;
  for (int i = 0; i < n; ++i) flows.push_back(flow(2.0 * (n - 1) / n * S, {{links[i]}}, 2 * (n - 1) * alpha));
  for (double t : finish_times(e, flows)) EXPECT_NEAR(t, 2.0 * (n - 1) / n * S / B + 2 * (n - 1) * alpha, 1e-9);
}

TEST(Executor, ChainsDiamondsStreamsAndTheCriticalPath) {
  // a(1s) -> {b(2s), c(3s)} -> d(1s): makespan 5 s, critical path a c d.
  Engine e;
  const auto gpu = e.add_resource({"gpu", 1.0});
  TaskGraph g;
  auto task = [&](double s) {
    TaskSpec t;
    t.activity.work = s;
    t.activity.usages = {{gpu}};
    return t;
  };
  const auto a = g.add(task(1));
  TaskSpec tb;
  tb.activity.work = 2;
  tb.activity.bound = 1;  // on no resource, runs at its bound
  TaskSpec tc;
  tc.activity.work = 3;
  tc.activity.bound = 1;
  const auto b = g.add(tb);
  const auto c = g.add(tc);
  const auto d = g.add(task(1));
  g.add_dependency(a, b);
  g.add_dependency(a, c);
  g.add_dependency(b, d);
  g.add_dependency(c, d);
  const ExecutionResult r = execute(e, g);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan.seconds(), 5.0, kTol);
  EXPECT_EQ(r.critical_path, (std::vector<TaskId>{a, c, d}));

  // Two tasks on one stream run in order even without a dependency: 1 s + 1 s on the GPU.
  Engine e2;
  const auto gpu2 = e2.add_resource({"gpu", 1.0});
  TaskGraph g2;
  const auto s = g2.add_stream();
  TaskSpec t;
  t.activity.work = 1;
  t.activity.usages = {{gpu2}};
  const auto x = g2.add_on_stream(s, t);
  const auto y = g2.add_on_stream(s, t);
  const ExecutionResult r2 = execute(e2, g2);
  EXPECT_NEAR(r2.start[y].seconds(), r2.end[x].seconds(), kTol);
  EXPECT_NEAR(r2.makespan.seconds(), 2.0, kTol);
}

TEST(Executor, ConcurrentTasksOnOneGpuShareIt) {
  // Two 1-second kernels on the same GPU at once each get half of it: both end at 2 s.
  Engine e;
  const auto gpu = e.add_resource({"gpu", 1.0});
  TaskGraph g;
  TaskSpec t;
  t.activity.work = 1;
  t.activity.usages = {{gpu}};
  g.add(t);
  g.add(t);
  const ExecutionResult r = execute(e, g);
  EXPECT_NEAR(r.end[0].seconds(), 2.0, kTol);
  EXPECT_NEAR(r.end[1].seconds(), 2.0, kTol);
}

TEST(Executor, ACycleIsReportedNotHung) {
  Engine e;
  TaskGraph g;
  TaskSpec t;
  t.activity.work = 0;
  const auto a = g.add(t), b = g.add(t), c = g.add(t);
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  g.add_dependency(c, b);
  const ExecutionResult r = execute(e, g);
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(r.tasks_run, 1u);
}

TEST(Trace, IsValidChromeTraceAndDeterministic) {
  auto run = [] {
    Engine e;
    const auto gpu = e.add_resource({"gpu", 1.0});
    TaskGraph g;
    const auto track = g.add_track("node0 \"gpu0\"", "compute");
    for (int i = 0; i < 3; ++i) {
      TaskSpec t;
      t.activity.work = 1e-3 * (i + 1);
      t.activity.usages = {{gpu}};
      t.track = track;
      t.name = g.intern("gemm");
      t.category = 0;
      const auto id = g.add(t);
      if (id > 0) g.add_dependency(id - 1, id);
    }
    const ExecutionResult r = execute(e, g);
    std::ostringstream out;
    write_chrome_trace(g, r, {"gemm"}, out);
    return out.str();
  };
  const std::string a = run(), b = run();
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(a.find("\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(a.find("\"ts\":1000.000000"), std::string::npos);  // second kernel starts at 1 ms
  EXPECT_NE(a.find("node0 \\\"gpu0\\\""), std::string::npos);  // names are escaped
}
