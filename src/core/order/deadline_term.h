#pragma once
// The deadline term of the composite score (docs/scheduling.md, "Deadlines").
//
//   deadline_term(job) = w_deadline * clamp(window - slack0, 0, window) / horizon
//   slack0             = complete_by - walltime - submit   (the slack at submission)
//   window             = min(horizon, cap * horizon / w_deadline)
//
// In the units of the age term (w_age per horizon of waiting), a job with a deadline ranks as if
// it had been submitted (w_deadline / w_age) x (window - slack0) earlier: at w_deadline = w_age,
// jobs whose slack is inside the window go by their latest start time (submit + slack0), earliest
// first (EDF); a slack beyond the window counts as the window (no boost). `horizon` is the aging
// horizon (1 h without aging).
//
// Why the slack at submission and not at `now`: every pending job's slack shrinks at the same
// rate, so the order of slacks never changes with time, and a term of slack0 keeps the queue's
// time-free sort key (score.h) exact. What a term of the slack at `now` would add, the age term
// already does: it rises by the same amount for every job.
//
// Bounds: the term is at most `cap`, half the smallest gap between two priority classes (as for
// the fairness terms: fairness_bounds.h), so it never reorders jobs of different classes; and it
// does not touch starvation (starving jobs rank first, oldest first, whatever their score), so
// the starvation guarantee holds. w_deadline 0 (and ordering: kueue) disables it.
#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

double deadline_term(const Job& job, const SchedulerPolicy& policy, double cap);

}  // namespace sluice
