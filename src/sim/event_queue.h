#pragma once
// The simulator's event queue: a min-heap ordered by virtual time, then by the sequence number
// given at push, so events at the same time come out in the order they were scheduled. Every
// ordering is total (house rule 3): two runs over the same input pop the same sequence.
#include <cstdint>
#include <queue>
#include <vector>

#include "core/model/job.h"

namespace sluice::sim {

enum class EventKind : uint8_t {
  kArrival,     // a trace job is submitted; `a` = index into the trace
  kCompletion,  // a running job ends; `a` = job id, `b` = the start it belongs to (stale if not)
  kNodeDown,    // `a` = node id
  kNodeUp,      // `a` = node id
  kCycle,       // a scheduling cycle (only with a cycle interval)
  // Node pools (sim/autoscale.h): `a` = node id, `b` = the slot's generation (stale if not).
  kNodeJoin,     // a requested node is ready
  kSpotNotice,   // the provider announces it takes the spot node back
  kSpotReclaim,  // ... and takes it
  kScaleCheck,   // a node's idle time may have run out
};

struct Event {
  TimeNs time_ns = 0;
  uint64_t seq = 0;  // assigned by EventQueue::push
  EventKind kind = EventKind::kArrival;
  uint64_t a = 0;
  uint64_t b = 0;
};

class EventQueue {
 public:
  // Schedules an event; returns its sequence number.
  uint64_t push(TimeNs time_ns, EventKind kind, uint64_t a = 0, uint64_t b = 0);
  // Schedules many events at once, known up front (a trace's arrivals), with the sequence
  // numbers push() would have given them one by one. They wait in a sorted array that pop()
  // merges with the heap, so the heap holds only what the run schedules (a million arrivals
  // made every heap operation ~20 levels deep). The order popped is the same either way.
  // (The events' `seq` is ignored and assigned here, in the order given.)
  void push_all(std::vector<Event> events);
  bool empty() const { return heap_.empty() && next_ == sorted_.size(); }
  size_t size() const { return heap_.size() + (sorted_.size() - next_); }
  const Event& top() const { return from_sorted() ? sorted_[next_] : heap_.top(); }
  Event pop();
  uint64_t pushed() const { return next_seq_; }

 private:
  bool from_sorted() const {
    return next_ < sorted_.size() && (heap_.empty() || Later{}(heap_.top(), sorted_[next_]));
  }
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      if (x.time_ns != y.time_ns) return x.time_ns > y.time_ns;
      return x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::vector<Event> sorted_;  // push_all's events, earliest first; [next_, end) not yet popped
  size_t next_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace sluice::sim
