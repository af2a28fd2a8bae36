#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>

namespace sluice::sim {
namespace {

TEST(EventQueue, OrdersByTimeThenSequence) {
  EventQueue q;
  q.push(20, EventKind::kCompletion, 1);
  q.push(10, EventKind::kArrival, 2);
  q.push(20, EventKind::kArrival, 3);  // same time as job 1: pushed later, pops later
  q.push(5, EventKind::kNodeDown, 4);
  q.push(10, EventKind::kArrival, 5);
  std::vector<std::pair<TimeNs, uint64_t>> got;
  while (!q.empty()) {
    const Event e = q.pop();
    got.emplace_back(e.time_ns, e.a);
  }
  // (time, a): 5/4 first; the two at 10 in push order (2, 5); the two at 20 in push order (1, 3).
  const std::vector<std::pair<TimeNs, uint64_t>> want = {
      {5, 4}, {10, 2}, {10, 5}, {20, 1}, {20, 3}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(q.pushed(), 5u);
}

TEST(EventQueue, EventsPushedWhilePoppingKeepTheOrder) {
  EventQueue q;
  q.push(10, EventKind::kArrival, 1);
  q.push(10, EventKind::kArrival, 2);
  EXPECT_EQ(q.pop().a, 1u);
  q.push(10, EventKind::kCycle, 3);  // same time, later sequence: after job 2
  q.push(9, EventKind::kCycle, 4);   // earlier time: first
  EXPECT_EQ(q.pop().a, 4u);
  EXPECT_EQ(q.pop().a, 2u);
  EXPECT_EQ(q.pop().a, 3u);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, PushAllPopsWhatPushingOneByOneWould) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 50; ++round) {
    EventQueue all, one;
    std::vector<Event> batch;
    for (uint64_t i = 0; i < 200; ++i) {
      batch.push_back({static_cast<TimeNs>(rng() % 50), 0, EventKind::kArrival, i, 0});
      one.push(batch.back().time_ns, EventKind::kArrival, i);
    }
    all.push_all(batch);
    EXPECT_EQ(all.size(), one.size());
    // While popping, the run schedules more (some at the time being popped, some earlier).
    uint64_t extra = 1000;
    while (!one.empty()) {
      ASSERT_FALSE(all.empty());
      const Event x = all.pop(), y = one.pop();
      ASSERT_EQ(std::tie(x.time_ns, x.seq, x.a), std::tie(y.time_ns, y.seq, y.a));
      if (rng() % 3 == 0) {
        const TimeNs t = x.time_ns + static_cast<TimeNs>(rng() % 5);
        all.push(t, EventKind::kCompletion, extra);
        one.push(t, EventKind::kCompletion, extra);
        ++extra;
      }
    }
    EXPECT_TRUE(all.empty());
    EXPECT_EQ(all.pushed(), one.pushed());
  }
}

}  // namespace
}  // namespace sluice::sim
