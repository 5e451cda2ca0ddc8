// Task-graph replay: start order, critical path and determinism.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "sim/engine.hpp"
#include "sim/task_graph.hpp"
#include "sim/trace.hpp"

using namespace stacksim::sim;

namespace {

TaskSpec on(ResourceId r, double seconds) {
  TaskSpec t;
  t.activity.work = seconds;
  t.activity.usages = {{r, 1.0}};
  return t;
}

TaskSpec delay(double seconds) {
  TaskSpec t;
  t.activity.latency = Time::from_seconds(seconds);
  return t;
}

constexpr double kTol = 1e-9;

}  // namespace

TEST(Executor, SimultaneousReadinessAndCriticalPathTies) {
  // Tasks 0 and 1 (1 s delays) end together; 0 releases task 3, 1 releases task 2; both start at
  // 1 s. Tasks 2 and 3 are zero-work, so both end at 1 s and task 4 has two predecessors ending
  // together: the critical path takes the lower id, 2, and then 2's only predecessor, 1.
  Engine e;
  TaskGraph g;
  const auto t0 = g.add(delay(1));
  const auto t1 = g.add(delay(1));
  const auto t2 = g.add(delay(0));
  const auto t3 = g.add(delay(0));
  const auto t4 = g.add(delay(0));
  g.add_dependency(t0, t3);
  g.add_dependency(t1, t2);
  g.add_dependency(t3, t4);
  g.add_dependency(t2, t4);
  const ExecutionResult r = execute(e, g);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.start[t2].seconds(), 1.0, kTol);
  EXPECT_NEAR(r.start[t3].seconds(), 1.0, kTol);
  EXPECT_EQ(r.critical_path, (std::vector<TaskId>{t1, t2, t4}));
}

TEST(Executor, StreamOrderAndDependenciesCombine) {
  // Stream s: a(1 s) then b(1 s) on one GPU; c(0.5 s, no resource, bound 1) must precede b too.
  // b starts at max(end a, end c) = 1 s, ends 2 s; with c taking 1.5 s, b starts at 1.5 s.
  for (double c_s : {0.5, 1.5}) {
    Engine e;
    const auto gpu = e.add_resource({"gpu", 1.0});
    TaskGraph g;
    const auto s = g.add_stream();
    const auto a = g.add_on_stream(s, on(gpu, 1));
    TaskSpec tc;
    tc.activity.work = c_s;
    tc.activity.bound = 1.0;
    const auto c = g.add(tc);
    const auto b = g.add_on_stream(s, on(gpu, 1));
    g.add_dependency(c, b);
    const ExecutionResult r = execute(e, g);
    ASSERT_TRUE(r.completed);
    EXPECT_NEAR(r.start[b].seconds(), std::max(1.0, c_s), kTol);
    EXPECT_NEAR(r.makespan.seconds(), std::max(1.0, c_s) + 1.0, kTol);
    EXPECT_EQ(r.critical_path, (std::vector<TaskId>{c_s > 1 ? c : a, b}));
  }
}

TEST(Executor, PipelineBubbleClosedForm) {
  // GPipe-style forward pass: p stages (one GPU each), m micro-batches of t seconds per stage,
  // each micro-batch after the previous on its stage (stream) and after the previous stage
  // (dependency). Makespan (m + p - 1) * t; critical path length m + p - 1.
  const int p = 4, m = 6;
  const double t = 0.25;
  Engine e;
  TaskGraph g;
  std::vector<ResourceId> gpu;
  std::vector<StreamId> stream;
  for (int s = 0; s < p; ++s) {
    gpu.push_back(e.add_resource({"gpu" + std::to_string(s), 1.0}));
    stream.push_back(g.add_stream());
  }
  std::vector<std::vector<TaskId>> id(p, std::vector<TaskId>(m));
  for (int mb = 0; mb < m; ++mb)
    for (int s = 0; s < p; ++s) {
      id[s][mb] = g.add_on_stream(stream[s], on(gpu[s], t));
      if (s > 0) g.add_dependency(id[s - 1][mb], id[s][mb]);
    }
  const ExecutionResult r = execute(e, g);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan.seconds(), (m + p - 1) * t, kTol);
  EXPECT_EQ(r.critical_path.size(), static_cast<size_t>(m + p - 1));
  EXPECT_EQ(r.critical_path.back(), id[p - 1][m - 1]);
}

TEST(Executor, ReplayIsDeterministic) {
  // A random DAG over shared links replayed twice: identical start/end vectors, critical paths
  // and trace bytes.
  auto run = [](std::vector<Time>& start, std::vector<Time>& end, std::vector<TaskId>& path, std::string& trace) {
    std::mt19937 rng(21);
    std::uniform_int_distribution<int> res(0, 7), pred(0, 3);
    std::uniform_real_distribution<double> work(0.1, 2.0);
    Engine e;
    for (int i = 0; i < 8; ++i) e.add_resource({"r" + std::to_string(i), 1.0 + i});
    TaskGraph g;
    const auto track = g.add_track("node", "row");
    for (TaskId i = 0; i < 2000; ++i) {
      TaskSpec t;
      t.activity.work = work(rng);
      t.activity.usages = {{static_cast<ResourceId>(res(rng)), 1.0}, {static_cast<ResourceId>(res(rng)), 0.5}};
      t.track = track;
      t.name = g.intern("t" + std::to_string(i % 5));
      const auto id = g.add(t);
      const int np = id == 0 ? 0 : pred(rng);
      for (int k = 0; k < np; ++k) g.add_dependency(std::uniform_int_distribution<TaskId>(0, id - 1)(rng), id);
    }
    const ExecutionResult r = execute(e, g);
    EXPECT_TRUE(r.completed);
    start = r.start;
    end = r.end;
    path = r.critical_path;
    std::ostringstream out;
    write_chrome_trace(g, r, {}, out);
    trace = out.str();
  };
  std::vector<Time> s1, e1, s2, e2;
  std::vector<TaskId> p1, p2;
  std::string t1, t2;
  run(s1, e1, p1, t1);
  run(s2, e2, p2, t2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(t1, t2);
  EXPECT_FALSE(p1.empty());
}

TEST(Executor, EmptyGraphAndSelfDependency) {
  Engine e;
  TaskGraph g;
  const ExecutionResult r = execute(e, g);
  EXPECT_TRUE(r.completed);
  EXPECT_EQ(r.makespan, Time::zero());
  const auto a = g.add(delay(1));
  EXPECT_THROW(g.add_dependency(a, a), std::invalid_argument);
  EXPECT_THROW(g.add_dependency(a, 7), std::out_of_range);
}

TEST(Trace, ProcessesInFirstSeenOrderAndUntrackedTasksSkipped) {
  // Tracks (B,x), (A,y), (B,z): processes B -> pid 1, A -> pid 2; tids are track + 1. One task
  // without a track is not written. Times: 1.5 us start, 2.25 us duration.
  Engine e;
  TaskGraph g;
  const auto tx = g.add_track("B", "x");
  g.add_track("A", "y");
  g.add_track("B", "z");
  TaskSpec first = delay(1.5e-6);
  const auto a = g.add(first);  // no track
  TaskSpec second = delay(2.25e-6);
  second.track = tx;
  second.name = g.intern("k");
  second.category = 1;
  const auto b = g.add(second);
  g.add_dependency(a, b);
  const ExecutionResult r = execute(e, g);
  std::ostringstream out;
  write_chrome_trace(g, r, {"zero", "one"}, out);
  const std::string s = out.str();
  EXPECT_NE(s.find("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"B\"}}"),
            std::string::npos);
  EXPECT_NE(s.find("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"tid\":0,\"args\":{\"name\":\"A\"}}"),
            std::string::npos);
  EXPECT_NE(s.find("\"pid\":1,\"tid\":3,\"args\":{\"name\":\"z\"}"), std::string::npos);
  EXPECT_NE(
      s.find("{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1.500000,\"dur\":2.250000,\"name\":\"k\",\"cat\":\"one\"}"),
      std::string::npos);
  size_t x_events = 0;
  for (size_t p = s.find("\"ph\":\"X\""); p != std::string::npos; p = s.find("\"ph\":\"X\"", p + 1)) ++x_events;
  EXPECT_EQ(x_events, 1u);
}
