// Activity semantics and the selective (per-component) re-solve, against closed forms and against
// a full solve of the whole system.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "sim/engine.hpp"
#include "sim/max_min_solver.hpp"

using namespace stacksim::sim;

namespace {

ActivitySpec flow(double work, std::vector<Usage> usages, double latency_s = 0, double bound = kUnbounded) {
  ActivitySpec a;
  a.work = work;
  a.usages.assign(usages.begin(), usages.end());
  a.latency = Time::from_seconds(latency_s);
  a.bound = bound;
  return a;
}

constexpr double kTol = 1e-9;

}  // namespace

TEST(Engine, DegenerateActivitiesFollowTheirLatencyAndBound) {
  // work = 0: ends at latency. No usages, unbounded: ends right after its latency. No usages,
  // bound b: rate b, ends at latency + work / b = 2 us + 6 / 3 s.
  Engine e;
  const auto link = e.add_resource({"link", 10.0});
  std::vector<double> end(3, -1);
  e.on_completion([&](ActivityId, uint64_t tag) { end[tag] = e.now().seconds(); });
  e.start(flow(0, {{link}}, 1e-6), 0);
  e.start(flow(5, {}, 3e-6), 1);
  e.start(flow(6, {}, 2e-6, 3.0), 2);
  e.run();
  EXPECT_NEAR(end[0], 1e-6, 1e-15);
  EXPECT_NEAR(end[1], 3e-6, 1e-15);
  EXPECT_NEAR(end[2], 2e-6 + 2.0, kTol);
  EXPECT_EQ(e.consumed(link), 0.0);  // zero work never flowed
}

TEST(Engine, ConsumptionIntegratesWeightTimesRate) {
  // An activity of weight w moving W units consumes w * W of the resource: 2 * 3 = 6 units, at
  // rate C / w = 5, so it takes W / 5 = 0.6 s.
  Engine e;
  const auto link = e.add_resource({"link", 10.0});
  double end = -1;
  e.on_completion([&](ActivityId, uint64_t) { end = e.now().seconds(); });
  e.start(flow(3, {{link, 2.0}}), 0);
  e.run();
  EXPECT_NEAR(end, 0.6, kTol);
  EXPECT_NEAR(e.consumed(link), 6.0, 1e-9);
}

TEST(Engine, ConsumptionIsUpToDateMidRun) {
  // Two flows of 10 units on a link of 4: 2 each. Stopped at t = 1 s, 4 units have crossed; at
  // the end all 20.
  Engine e;
  const auto link = e.add_resource({"link", 4.0});
  e.start(flow(10, {{link}}), 0);
  e.start(flow(10, {{link}}), 1);
  e.schedule_timer(Time::from_seconds(1.0), 0);
  e.run(Time::from_seconds(1.0));
  EXPECT_NEAR(e.consumed(link), 4.0, 1e-9);
  e.run();
  EXPECT_NEAR(e.consumed(link), 20.0, 1e-9);
}

TEST(Engine, AggregatedFlowsMatchTheirIndividualFlows) {
  // k identical flows as one activity of weight k on the shared link: per-flow rate C / (k + m)
  // with m other flows, exactly as k separate activities. k = 3, m = 1, C = 8: rate 2.
  Engine e;
  const auto link = e.add_resource({"link", 8.0});
  const auto agg = e.start(flow(100, {{link, 3.0}}), 0);
  const auto other = e.start(flow(100, {{link, 1.0}}), 1);
  e.run(Time::zero());
  EXPECT_NEAR(e.rate(agg), 2.0, 1e-12);
  EXPECT_NEAR(e.rate(other), 2.0, 1e-12);
}

TEST(Engine, FatPipeAndSharedLinkTogether) {
  // Two flows through a fat-pipe crossbar (10 each) then one shared link of 12: the link is the
  // bottleneck, 6 each. A third flow on the crossbar alone takes the full 10.
  Engine e;
  const auto xbar = e.add_resource({"xbar", 10.0, Sharing::FatPipe});
  const auto link = e.add_resource({"link", 12.0});
  const auto a = e.start(flow(1e6, {{xbar}, {link}}), 0);
  const auto b = e.start(flow(1e6, {{xbar}, {link}}), 1);
  const auto c = e.start(flow(1e6, {{xbar}}), 2);
  e.run(Time::zero());
  EXPECT_NEAR(e.rate(a), 6.0, 1e-12);
  EXPECT_NEAR(e.rate(b), 6.0, 1e-12);
  EXPECT_NEAR(e.rate(c), 10.0, 1e-12);
}

TEST(Engine, ParkingLotMaxMin) {
  // Parking lot: links L1, L2 (capacity 1 each) in series; a long flow crosses both, one short
  // flow on each. Each link has two flows, both saturate at 1/2: every flow gets 1/2. Then
  // bound the long flow at 0.2: the short flows take 1 - 0.2 = 0.8 each.
  Engine e;
  const auto l1 = e.add_resource({"L1", 1.0});
  const auto l2 = e.add_resource({"L2", 1.0});
  const auto lng = e.start(flow(1e6, {{l1}, {l2}}), 0);
  const auto s1 = e.start(flow(1e6, {{l1}}), 1);
  const auto s2 = e.start(flow(1e6, {{l2}}), 2);
  e.run(Time::zero());
  EXPECT_NEAR(e.rate(lng), 0.5, 1e-12);
  EXPECT_NEAR(e.rate(s1), 0.5, 1e-12);
  EXPECT_NEAR(e.rate(s2), 0.5, 1e-12);

  Engine f;
  const auto m1 = f.add_resource({"L1", 1.0});
  const auto m2 = f.add_resource({"L2", 1.0});
  const auto blng = f.start(flow(1e6, {{m1}, {m2}}, 0, 0.2), 0);
  const auto t1 = f.start(flow(1e6, {{m1}}), 1);
  const auto t2 = f.start(flow(1e6, {{m2}}), 2);
  f.run(Time::zero());
  EXPECT_NEAR(f.rate(blng), 0.2, 1e-12);
  EXPECT_NEAR(f.rate(t1), 0.8, 1e-12);
  EXPECT_NEAR(f.rate(t2), 0.8, 1e-12);
}

TEST(Engine, HandlersStartActivitiesThatJoinTheCurrentBatch) {
  // A completion handler starts a zero-latency flow at the same instant; it is solved with the
  // batch: 1 GB at 10 GB/s after the first (0.1 s) ends at 0.2 s.
  Engine e;
  const auto link = e.add_resource({"link", 10e9});
  std::vector<double> end(2, -1);
  e.on_completion([&](ActivityId, uint64_t tag) {
    end[tag] = e.now().seconds();
    if (tag == 0) e.start(flow(1e9, {{link}}), 1);
  });
  e.start(flow(1e9, {{link}}), 0);
  e.run();
  EXPECT_NEAR(end[0], 0.1, kTol);
  EXPECT_NEAR(end[1], 0.2, kTol);
}

namespace {

// Random system: links of random capacity (a few fat pipes), activities over 1-4 random links
// with random weights, some bounded, of random size. After each step the engine's rates (from
// selective re-solves) must equal a full solve of every flowing activity.
struct RandomSystem {
  std::vector<ResourceSpec> links;
  std::vector<ActivitySpec> acts;
};

RandomSystem random_system(uint32_t seed, int num_links, int num_acts) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cap(1.0, 10.0), w(0.5, 3.0), work(0.5, 20.0);
  std::uniform_int_distribution<int> link(0, num_links - 1), hops(1, 4), coin(0, 9);
  RandomSystem s;
  for (int l = 0; l < num_links; ++l)
    s.links.push_back({"l" + std::to_string(l), cap(rng), coin(rng) == 0 ? Sharing::FatPipe : Sharing::Shared});
  for (int a = 0; a < num_acts; ++a) {
    ActivitySpec spec;
    spec.work = work(rng);
    const int h = hops(rng);
    for (int k = 0; k < h; ++k) spec.usages.push_back({static_cast<ResourceId>(link(rng)), w(rng)});
    if (coin(rng) < 2) spec.bound = cap(rng) * 0.3;
    s.acts.push_back(std::move(spec));
  }
  return s;
}

}  // namespace

TEST(Engine, SelectiveResolveEqualsAFullSolve) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const RandomSystem sys = random_system(seed, 40, 120);
    Engine e;
    std::vector<SolverConstraint> cons;
    for (const auto& l : sys.links) {
      e.add_resource(l);
      cons.push_back({l.capacity, l.sharing == Sharing::FatPipe});
    }
    std::vector<bool> done(sys.acts.size(), false);
    std::vector<ActivityId> ids;
    e.on_completion([&](ActivityId, uint64_t tag) { done[tag] = true; });
    size_t next = 0;
    int checks = 0;
    // Start activities in waves of 10 and advance the clock in steps, so both starts and ends
    // change components between checks.
    for (int step = 0; step < 60; ++step) {
      for (int k = 0; k < 10 && next < sys.acts.size(); ++k, ++next) ids.push_back(e.start(sys.acts[next], next));
      e.run(e.now() + Time::from_seconds(0.3));
      // Reference: one full solve over every activity still flowing.
      std::vector<std::vector<SolverElement>> els;
      std::vector<uint32_t> which;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (done[i]) continue;
        std::vector<SolverElement> el;
        for (const Usage& u : sys.acts[i].usages) el.push_back({u.resource, u.weight});
        els.push_back(std::move(el));
        which.push_back(static_cast<uint32_t>(i));
      }
      std::vector<SolverVariable> vars;
      std::vector<uint32_t> all;
      for (size_t v = 0; v < els.size(); ++v) {
        vars.push_back({els[v].data(), static_cast<uint32_t>(els[v].size()), sys.acts[which[v]].bound});
        all.push_back(static_cast<uint32_t>(v));
      }
      std::vector<double> rates(vars.size());
      MaxMinSolver full;
      full.solve(cons, vars, all, rates);
      for (size_t v = 0; v < which.size(); ++v) {
        const double got = e.rate(ids[which[v]]);
        EXPECT_NEAR(got, rates[v], 1e-12 * rates[v]) << "seed " << seed << " step " << step << " act " << which[v];
        ++checks;
      }
    }
    EXPECT_GT(checks, 100);
  }
}

TEST(Engine, IndependentEnginesInThreadsAgreeBitForBit) {
  // No global state: the same system run in 4 threads at once gives identical finish times.
  const RandomSystem sys = random_system(9, 30, 200);
  auto run = [&](std::vector<int64_t>& out) {
    Engine e;
    for (const auto& l : sys.links) e.add_resource(l);
    out.assign(sys.acts.size(), -1);
    e.on_completion([&](ActivityId, uint64_t tag) { out[tag] = e.now().ps(); });
    for (size_t i = 0; i < sys.acts.size(); ++i) e.start(sys.acts[i], i);
    e.run();
  };
  std::vector<std::vector<int64_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back(run, std::ref(r));
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    EXPECT_EQ(r, results[0]);
    for (int64_t t : r) EXPECT_GE(t, 0);  // every activity finished
  }
}

TEST(Engine, RunningPastTheHorizonIsAnErrorNotASilentStop) {
  // 1e7 units at 1 unit/s end after ~116 days, past the ~26-day horizon of int64 picoseconds: a
  // run to completion must say so; a run to an earlier instant just stops there.
  Engine e;
  const auto r = e.add_resource({"slow", 1.0});
  e.start(flow(1e7, {{r}}), 0);
  EXPECT_EQ(e.run(Time::from_seconds(10)), Time::from_seconds(0));
  EXPECT_THROW(e.run(), HorizonError);
  // A prediction past the horizon that became stale is not an error: 2e6 units (~23 days at full
  // rate) first share the link with a flow of weight 9 (both at 0.1, so predicted after ~231
  // days), which leaves after 1 s; then it runs at 1 and ends at 2e6 - 0.1 + 1 s.
  Engine f;
  const auto s = f.add_resource({"link", 1.0});
  f.start(flow(2e6, {{s}}), 0);
  f.start(flow(0.1, {{s, 9.0}}), 1);
  EXPECT_NEAR(f.run().seconds(), 2e6 + 0.9, 1e-3);
}
