#include "core/model/job.h"

namespace sluice {

ResourceVec Job::total_requests() const {
  ResourceVec total;
  for (const auto& ps : pod_sets) total += ps.requests.scaled(ps.count);
  return total;
}

int32_t Job::pod_count() const {
  int32_t n = 0;
  for (const auto& ps : pod_sets) n += ps.count;
  return n;
}

}  // namespace sluice
