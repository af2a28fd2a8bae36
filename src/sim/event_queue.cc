#include "sim/event_queue.h"

#include <algorithm>

namespace sluice::sim {

uint64_t EventQueue::push(TimeNs time_ns, EventKind kind, uint64_t a, uint64_t b) {
  const uint64_t seq = next_seq_++;
  heap_.push(Event{time_ns, seq, kind, a, b});
  return seq;
}

void EventQueue::push_all(std::vector<Event> events) {
  // The not-yet-popped rest of an earlier batch joins the heap (rare: one batch per run).
  for (; next_ < sorted_.size(); ++next_) heap_.push(sorted_[next_]);
  sorted_ = std::move(events);
  next_ = 0;
  for (Event& e : sorted_) e.seq = next_seq_++;
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
