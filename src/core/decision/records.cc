#include "core/decision/records.h"

namespace sluice {

void release_in(const RunningRecord& r, QuotaTree& quota, ClusterAlloc& alloc) {
  alloc.release(r.job, r.admission.placement);
  for (const auto& u : r.admission.usage)
    quota.add_usage(r.admission.queue, u.flavor, u.resource, -u.amount);
}

void commit_in(const RunningRecord& r, QuotaTree& quota, ClusterAlloc& alloc) {
  alloc.commit(r.job, r.admission.placement);
  for (const auto& u : r.admission.usage)
    quota.add_usage(r.admission.queue, u.flavor, u.resource, u.amount);
}

}  // namespace sluice
