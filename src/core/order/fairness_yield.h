#pragma once
// Fairness yields to arrival order in the tail (spec.ordering.fairnessYieldPercentile; off by
// default; docs/scheduling.md, "Bounded fairness").
//
// The DRF and debt terms reorder young jobs of one class away from arrival order (within their
// window, fairness_bounds.h). Where every job is strict, that reordering is what puts a few jobs
// into the class's wait tail: a job of a queue over its share is passed by later jobs while it
// is young, and its wait starts from behind. With a percentile P, a job whose wait has passed
// the P-th percentile of the waits its class's recently admitted jobs had (the last 256, at
// admission: start - submit, or - eviction) loses the fairness terms: it competes by priority
// and age alone, so the jobs that are on their way to the tail go by arrival.
//
// Deterministic from the run so far (no knowledge of the future): the threshold is the nearest-
// rank percentile of the recorded waits, computed once the class has 32 of them and again after
// every 32 admissions of the class (so that a threshold changes rarely: a change makes the next
// cycle a full one). Until a class has 32, its jobs keep the plain window. Like fairness debt,
// the recorded waits live in the scheduler's memory (a restart starts them afresh).
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "core/model/job.h"

namespace sluice {

class RecentWaits {
 public:
  static constexpr size_t kSamples = 256;    // recent admissions per class
  static constexpr int64_t kRecompute = 32;  // admissions of a class between thresholds
  static constexpr TimeNs kNone = std::numeric_limits<TimeNs>::max();

  explicit RecentWaits(int32_t percentile = 0) : percentile_(percentile) {}
  bool enabled() const { return percentile_ > 0; }
  // Records the wait of an admitted job of class value `priority`. True when the class's
  // threshold changed (the order of pending jobs may change).
  bool record(int32_t priority, TimeNs wait_ns);
  // The fairness window of a job of class value `priority`: the fairness terms apply while its
  // wait is below it. min(window_ns, threshold + 1 ns); window_ns when off or not known yet.
  TimeNs window(int32_t priority, TimeNs window_ns) const;
  // Every known threshold's window (for the check of jobs that crossed one since a cycle).
  std::vector<TimeNs> windows(TimeNs window_ns) const;

 private:
  struct Class {
    std::vector<TimeNs> ring;
    size_t next = 0;
    int64_t since = 0;  // admissions since the threshold was computed
    TimeNs threshold = kNone;
  };
  int32_t percentile_ = 0;
  std::map<int32_t, Class> classes_;
};

}  // namespace sluice
