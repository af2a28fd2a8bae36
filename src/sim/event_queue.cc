#include "sim/event_queue.h"

namespace sluice::sim {

uint64_t EventQueue::push(TimeNs time_ns, EventKind kind, uint64_t a, uint64_t b) {
  const uint64_t seq = next_seq_++;
  heap_.push(Event{time_ns, seq, kind, a, b});
  return seq;
}

Event EventQueue::pop() {
  Event e = heap_.top();
  heap_.pop();
  return e;
}

}  // namespace sluice::sim
