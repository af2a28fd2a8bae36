#include "core/model/job_shape.h"

#include <functional>
#include <string>

namespace sluice {

// A hash of everything that decides whether a job can be placed (not who it is).
uint64_t shape_hash(const Job& job) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const auto& ps : job.pod_sets) {
    mix(static_cast<uint64_t>(ps.count));
    mix(static_cast<uint64_t>(ps.min_count));
    mix(static_cast<uint64_t>(ps.gpus));
    mix(static_cast<uint64_t>(ps.gpu_milli));
    for (int r = 0; r < kMaxResources; ++r) mix(static_cast<uint64_t>(ps.requests[r]));
    mix(ps.node ? 1 + ps.node->selector.size() + 7 * ps.node->terms.size() : 0);
  }
  for (const auto& m : job.allowed_models) mix(std::hash<std::string>{}(m));
  mix(static_cast<uint64_t>(job.topology.level + 7) * 2 + job.topology.required);
  for (const auto& sl : job.topology.slices) {
    mix(static_cast<uint64_t>(sl.level + 7));
    mix(static_cast<uint64_t>(sl.size));
  }
  mix(static_cast<uint64_t>(job.gpu_locality));
  return h;
}

bool same_shape(const Job& a, const Job& b) {
  if (a.pod_sets.size() != b.pod_sets.size() || a.allowed_models != b.allowed_models ||
      a.topology != b.topology || a.gpu_locality != b.gpu_locality)
    return false;
  for (size_t i = 0; i < a.pod_sets.size(); ++i) {
    const auto& x = a.pod_sets[i];
    const auto& y = b.pod_sets[i];
    if (x.count != y.count || x.min_count != y.min_count || x.gpus != y.gpus ||
        x.gpu_milli != y.gpu_milli || !(x.requests == y.requests))
      return false;
    if ((x.node == nullptr) != (y.node == nullptr) || (x.node && !(*x.node == *y.node)))
      return false;
  }
  return true;
}

}  // namespace sluice
