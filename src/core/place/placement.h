#pragma once
// Where a job's pods go, and why a job could not be placed.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/cluster.h"

namespace sluice {

// One device (or a share of one) given to a pod.
struct GpuShare {
  int16_t gpu = 0;         // index into Node::gpus
  int16_t mig_slice = -1;  // index into Gpu::mig, or -1 for the GPU itself
  int32_t milli = 1000;    // share of the GPU (1000 for whole GPUs and MIG slices)
  bool operator==(const GpuShare&) const = default;
};

struct PodPlacement {
  NodeId node = 0;
  int32_t pod_set = 0;    // index into Job::pod_sets
  int32_t pod_index = 0;  // 0..count-1 within the pod set
  std::vector<GpuShare> gpus;
  bool operator==(const PodPlacement&) const = default;
};

struct Placement {
  std::vector<PodPlacement> pods;  // pod-set order, then pod index
  bool operator==(const Placement&) const = default;
};

// Why placement failed; `detail` is plain words for a person, e.g. "no node has 8 free GPUs in
// one NVLink domain" or "gang needs 4 nodes, 3 fit".
enum class PlaceFailCode : uint8_t {
  kNoNodes,           // no ready node matches the flavor / model / label filters at all
  kInsufficient,      // some pods fit, not all (gang all-or-nothing)
  kTopology,          // fits in the cluster but not inside one domain of the required level
  kGpuLocality,       // a pod needs GPUs in one NVLink domain and no node has them free
};

struct PlaceFailure {
  PlaceFailCode code = PlaceFailCode::kInsufficient;
  int32_t pods_needed = 0;
  int32_t pods_fit = 0;
  std::string detail;
};

}  // namespace sluice
