#pragma once
// Trace variants: a workload of the same family as a trace, derived at run time from the trace
// and the seed (nothing is written to disk). Used to check that a policy's figures hold on
// workloads nobody tuned for (`sluice sim compare --variant`, bench/philly_variants.sh).
//
// A variant is a comma-separated list of steps, applied in this order whatever the spelling:
//   resample          bootstrap: as many jobs as the trace, drawn uniformly with replacement
//                     (each keeps its queue, size, run time, class and submit time)
//   shift-vcs         each queue's arrivals rotated by its own random offset within the
//                     arrival span (the queues' bursts meet at other times; load is unchanged)
//   best-effort=P     a share P in [0, 1] of the jobs best-effort: strict jobs become
//                     best-effort (or the other way) at random until the expected share is P
//   strict            every job strict (best-effort=0)
//   slack=F           F in [0, 10]: each deadline's slack (the time it allows beyond the job's
//                     run time) multiplied by F, and each step of its utility with it (0.5:
//                     deadline-heavy; deadlines already shorter than the run time stay)
//   load=X            X in [0.1, 10]: inter-arrival times divided by X (1.5: 50% more load)
//   jitter=S          S in [0, 3600] seconds: each submit time moved by a uniform draw in
//                     [-S, S], kept within the arrival span
//   walltime-error=F  F in [1, 100]: each walltime estimate becomes the job's run time times a
//                     log-uniform draw in [1/F, F] (the trace's estimates are the run times;
//                     this makes them wrong both ways, as users' are)
//   replica=K         K >= 0: the jitter's and walltime-error's own draws (the other steps'
//                     draws do not change): replicas of one workload
//   seed=N            the variant's draws use seed N instead of the run's --seed
//   base              no change (a name for the trace itself in a table)
// Every draw comes from one generator (the run's, or seed=N's).
#include <optional>
#include <string>

#include "sim/rng.h"
#include "sim/trace.h"

namespace sluice::sim {

struct TraceVariant {
  bool resample = false;
  bool shift_vcs = false;
  std::optional<double> best_effort_share;  // none: as in the trace
  double slack = 1.0;                       // deadlines' slack factor; 1: as in the trace
  double load = 1.0;
  TimeNs jitter_ns = 0;
  double walltime_error = 1;  // 1: estimates as in the trace
  uint64_t replica = 0;
  std::optional<uint64_t> seed;  // none: the run's generator
};

// The classes a variant gives strict and best-effort jobs (the Philly reader's).
struct VariantClasses {
  std::string strict = "high";
  std::string best_effort = "low";
};

// Parses a variant spec; an error names the bad step.
std::optional<TraceVariant> parse_variant(const std::string& spec, std::string* error);

// Applies `v` to the jobs of `trace` (before check_against()). Jobs a resample draws twice get
// new ids (1, 2, 3... in draw order) and names suffixed `~k`.
void apply_variant(TraceOutput& trace, const TraceVariant& v, const VariantClasses& classes,
                   Rng& rng);

}  // namespace sluice::sim
