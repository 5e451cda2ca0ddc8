// The event queue and the engine's event discipline: order by (time, insertion sequence).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/engine.hpp"
#include "sim/event_queue.hpp"

using namespace stacksim::sim;

TEST(EventQueue, PopsByTimeThenInsertionOrder) {
  // Expected order: a stable sort of the pushes by time (equal times keep their push order).
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> t(0, 50);  // few distinct times: many ties
  struct Push {
    int64_t time_ps;
    uint64_t payload;
    uint8_t kind;
  };
  std::vector<Push> pushes;
  EventQueue q;
  for (uint64_t i = 0; i < 5000; ++i) {
    const Push p{t(rng), i, static_cast<uint8_t>(i % (EventQueue::kMaxKind + 1))};
    pushes.push_back(p);
    q.push(Time::from_ps(p.time_ps), p.kind, p.payload);
  }
  std::stable_sort(pushes.begin(), pushes.end(), [](const Push& a, const Push& b) { return a.time_ps < b.time_ps; });
  ASSERT_EQ(q.size(), pushes.size());
  for (const Push& p : pushes) {
    ASSERT_FALSE(q.empty());
    const EventQueue::Entry e = q.pop();
    EXPECT_EQ(e.time.ps(), p.time_ps);
    EXPECT_EQ(e.payload, p.payload);
    EXPECT_EQ(e.kind(), p.kind);
  }
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, InterleavedPushAndPopStayOrdered) {
  // Hold model: pop the minimum, push it back later; popped times never decrease, and equal
  // times come out in push order (payload = push index, increasing).
  EventQueue q;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> inc(0, 3);
  uint64_t pushed = 0;
  for (int i = 0; i < 100; ++i) q.push(Time::from_ps(inc(rng)), 0, pushed++);
  Time last = Time::zero();
  uint64_t last_payload = 0;
  for (int i = 0; i < 20000; ++i) {
    const EventQueue::Entry e = q.pop();
    ASSERT_GE(e.time, last);
    if (e.time == last && i > 0) {
      ASSERT_GT(e.payload, last_payload);
    }
    last = e.time;
    last_payload = e.payload;
    q.push(e.time + Time::from_ps(inc(rng)), 0, pushed++);
  }
}

TEST(Engine, TimersAtOneTimeFireInSchedulingOrderAsOneBatch) {
  // Timers at equal times fire in the order scheduled; one scheduled by a handler for the current
  // time joins the running batch (still one batch), and runs after those already queued.
  Engine e;
  std::vector<uint64_t> fired;
  e.on_timer([&](uint64_t tag) {
    fired.push_back(tag);
    if (tag == 1) e.schedule_timer(e.now(), 9);
  });
  const Time t = Time::from_seconds(1e-6);
  for (uint64_t tag : {3, 1, 2}) e.schedule_timer(t, tag);
  e.run();
  EXPECT_EQ(fired, (std::vector<uint64_t>{3, 1, 2, 9}));
  EXPECT_EQ(e.stats().batches, 1u);
  EXPECT_EQ(e.stats().events, 4u);
  EXPECT_EQ(e.now(), t);
}

TEST(Engine, RunStopsBeforeEventsPastTheLimit) {
  // run(until) processes events at times <= until only; a later run continues.
  Engine e;
  std::vector<uint64_t> fired;
  e.on_timer([&](uint64_t tag) { fired.push_back(tag); });
  e.schedule_timer(Time::from_ps(10), 1);
  e.schedule_timer(Time::from_ps(20), 2);
  EXPECT_EQ(e.run(Time::from_ps(15)).ps(), 10);
  EXPECT_EQ(fired, (std::vector<uint64_t>{1}));
  EXPECT_EQ(e.run().ps(), 20);
  EXPECT_EQ(fired, (std::vector<uint64_t>{1, 2}));
}
