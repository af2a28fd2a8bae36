#include "sim/event_queue.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sluice::sim
