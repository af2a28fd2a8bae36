#pragma once
// The backfill reservation of the highest-ranked job that cannot be placed now: the earliest
// time running jobs (and those admitted earlier in the cycle) free enough, by their walltimes,
// and the nodes it gets then. Jobs admitted later in the cycle may start only if they end
// before that time or stay off those nodes.
#include <map>
#include <utility>
#include <vector>

#include "core/decision/decisions.h"
#include "core/decision/records.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"

namespace sluice {

// When a job's capacity comes free: at `at` (start + walltime), for (at, id) order.
struct JobEnd {
  TimeNs at = 0;
  JobId id = 0;
  const Job* job = nullptr;
  const Placement* placement = nullptr;
};
// Running jobs by expected end (start + walltime, then id).
using RunningEnds = std::map<std::pair<TimeNs, JobId>, const RunningRecord*>;

// `job` must not fit `nodes` on `alloc` now. `admitted_now`: the cycle's admissions' ends (any
// order). Walks running_ends in order and usually stops after a few hundred, so it neither
// copies nor sorts them all. An empty Reservation (job 0) when it would not fit even once
// everything ended.
Reservation reserve(const Job& job, const NodeSet& nodes, const Placer& placer,
                    const ClusterAlloc& alloc, const RunningEnds& running_ends,
                    std::vector<JobEnd> admitted_now, TimeNs now);

}  // namespace sluice
