#pragma once
// A node's room as the autoscaler's packing sees it (scale-up and consolidation): free
// milli-GPU per device, CPU and memory, and first-fit placement of one pod on it.
#include <cstdint>
#include <vector>

#include "core/model/config.h"
#include "core/scale/autoscaler.h"

namespace sluice::scale {

struct Bin {
  std::vector<int32_t> gpu_free;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

inline Bin empty_bin(const Node& shape) {
  Bin b;
  b.gpu_free.assign(shape.gpus.size(), static_cast<int32_t>(kMilliPerGpu));
  b.cpu_milli = shape.cpu_milli;
  b.memory_mib = shape.memory_mib;
  return b;
}

// Takes one pod's room from `b`; false (and `b` unchanged) when it does not fit.
inline bool take(Bin& b, const PodNeed& p) {
  if (b.cpu_milli < p.cpu_milli || b.memory_mib < p.memory_mib) return false;
  const bool fraction = p.gpus == 1 && p.gpu_milli < kMilliPerGpu;
  std::vector<size_t> picked;
  for (size_t g = 0; g < b.gpu_free.size() && static_cast<int32_t>(picked.size()) < p.gpus; ++g)
    if (fraction ? b.gpu_free[g] >= p.gpu_milli : b.gpu_free[g] == kMilliPerGpu)
      picked.push_back(g);
  if (static_cast<int32_t>(picked.size()) < p.gpus) return false;
  for (size_t g : picked) b.gpu_free[g] -= fraction ? p.gpu_milli : kMilliPerGpu;
  b.cpu_milli -= p.cpu_milli;
  b.memory_mib -= p.memory_mib;
  return true;
}

}  // namespace sluice::scale
