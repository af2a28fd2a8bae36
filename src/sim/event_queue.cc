#include "sim/event_queue.h"

#include <algorithm>

namespace sluice::sim {

uint64_t EventQueue::push(TimeNs time_ns, EventKind kind, uint64_t a, uint64_t b) {
  const uint64_t seq = next_seq_++;
  heap_.push(Event{time_ns, seq, kind, a, b});
  return seq;
}

void EventQueue::push_all(const std::vector<std::pair<TimeNs, EventKind>>& when,
                          const std::vector<uint64_t>& a) {
  // The not-yet-popped rest of an earlier batch joins the heap (rare: one batch per run).
  for (; next_ < sorted_.size(); ++next_) heap_.push(sorted_[next_]);
  sorted_.clear();
  next_ = 0;
  sorted_.reserve(when.size());
  for (size_t i = 0; i < when.size(); ++i)
    sorted_.push_back(Event{when[i].first, next_seq_++, when[i].second, a[i], 0});
  std::sort(sorted_.begin(), sorted_.end(), [](const Event& x, const Event& y) {
    return Later{}(y, x);  // earliest first: (time, seq) ascending
  });
}

Event EventQueue::pop() {
  if (from_sorted()) return sorted_[next_++];
  Event e = heap_.top();
  heap_.pop();
  return e;
}

}  // namespace sluice::sim
