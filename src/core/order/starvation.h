#pragma once
// Whose capacity a starving job's claim holds back (docs/scheduling.md, "Starvation freedom").
//
// A job that waited the aging horizon is *starving*: it ranks first and, when it cannot start,
// claims capacity: later jobs of the cycle are held back so that running work drains towards
// it. Against jobs of a higher priority class the claim waits longer: it holds back only jobs
// of its own class and lower until the job has waited the class horizon
// (4 aging horizons), and every job after.
//
// Why (issue 19): under sustained overload (Philly MIX1 at 1.2x load) best-effort jobs reached
// the aging horizon and their claims drained capacity against strict jobs for as long as they
// waited to fit; the strict p99 wait was then worse than with plain priority order. The
// guarantee keeps its form, with two bounds: a job starts within the aging horizon plus one
// running job's runtime behind work of its own class and lower, and within the class horizon
// plus one runtime behind any work.
#include <cstdint>

#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

// The class horizon: 4 aging horizons.
TimeNs class_horizon(const SchedulerPolicy& policy);

// Highest configured priority class value; INT32_MIN with no classes (claims then hold all).
int32_t top_priority(const Config& config);

// Whether the claim of starving job `holder` holds back every job at `now`: its class is the
// highest, or it waited the class horizon.
bool claim_holds_all(const Job& holder, const SchedulerPolicy& policy, int32_t top, TimeNs now);

// Whether the claim of starving job `holder` holds back `job` at `now`.
bool claim_holds(const Job& holder, const Job& job, const SchedulerPolicy& policy, int32_t top,
                 TimeNs now);

}  // namespace sluice
