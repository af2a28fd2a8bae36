#pragma once
// Bounds on what the fairness terms of the composite score (DRF share, fairness debt) may do to
// the order (docs/scheduling.md, "Ordering").
//
// Unbounded, the terms (up to w_drf x 4 + w_debt x 4) outweigh hours of aging and the gap
// between priority classes: an equal-priority job of a queue over its share was passed by every
// later job of the other queues until it starved, and a best-effort job of a queue under its
// share outranked a strict job of one over it. Measured on the Philly MIX1 variants, that made
// the strict p99 wait worse than plain priority-then-arrival order (docs/simulator.md, "MIX1
// variants"). Two bounds:
//
//   1. Window: the terms apply to a job only during its first `window` of waiting (the aging
//      horizon / 30: 2 min at the default 1 h). A job that waited longer competes by priority
//      and age alone, so among equal priorities later jobs pass it only while it is young.
//   2. Cap: the terms together take at most half the smallest gap between two priority classes
//      (in score units), so they never reorder jobs of different classes.
#include <cstdint>

#include "core/model/config.h"

namespace sluice {

struct FairnessBounds {
  TimeNs window_ns = 0;  // the terms apply while wait < window
  double cap = 0;        // most the terms may subtract; +inf with fewer than two classes
};

FairnessBounds fairness_bounds(const Config& config, double priority_scale);

// The fairness part of a score, for a job that has waited `waited_ns`: -min(penalty, cap)
// while waited < window, else 0. `penalty` = w_drf x drf_share + w_debt x debt (>= 0).
double bounded_fairness(double penalty, const FairnessBounds& b, TimeNs waited_ns);
// The same with the window of the job's class (RecentWaits::window, fairness_yield.h).
double bounded_fairness(double penalty, const FairnessBounds& b, TimeNs waited_ns,
                        TimeNs window_ns);

}  // namespace sluice
