#pragma once
// Right-sizing from measured GPU use (`sluice advise`, docs/cli.md): the smallest GPU model or
// MIG slice of the cluster that a job's measured peak memory fits, with headroom, and the
// GPU-hours a job requested against those it used. Pure arithmetic: no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

// A GPU shape a pod could run on: a whole GPU model ("H100", 80 GiB) or a MIG slice
// ("1g.20gb", 20 GiB, 1 compute slice of 7).
struct GpuShape {
  std::string name;
  int64_t memory_mib = 0;
  int32_t compute_slices = 7;  // a MIG slice's "Ng"; a whole GPU counts as 7 (the most)
  bool mig = false;
};

// The memory of a MIG profile: "1g.20gb", "3g.40gb", "1g.10gb+me" or the full resource name
// "nvidia.com/mig-1g.10gb" (GB as named by NVIDIA, read as GiB). nullopt: not a MIG profile.
std::optional<GpuShape> mig_shape(std::string_view profile);

// The distinct shapes of a cluster: each GPU model (largest memory seen) and each MIG profile,
// sorted by memory, then compute slices, then name.
std::vector<GpuShape> distinct_shapes(std::vector<GpuShape> shapes);

// The smallest shape whose memory holds peak_mib plus headroom (0.2: 20% more), and which is
// smaller than the requested memory (requested_mib); nullopt: nothing smaller fits. Among
// shapes of equal memory the one with fewer compute slices wins, then a MIG slice over a whole
// GPU (a slice leaves the rest of its GPU to others).
std::optional<GpuShape> smallest_fit(const std::vector<GpuShape>& shapes, int64_t peak_mib,
                                     int64_t requested_mib, double headroom = 0.2);

// The right-sizing policy (spec.rightSize: auto; docs/scheduling.md, "Right-sizing"): where a
// recurring job with a measured history goes instead of the GPU it asked for.

// The GPU shapes of the configuration's cluster: each model with its memory and each MIG
// profile (distinct_shapes()).
std::vector<GpuShape> cluster_shapes(const Config& config);

// What right-sizing decided for one job: the shape it is placed on, from how many earlier runs,
// and the peak that decided it. The original request is the job itself.
struct RightSizeTarget {
  GpuShape shape;
  int32_t runs = 0;  // measured earlier runs of the job (its history)
  int64_t peak_mib = 0;
};

// The smallest shape of `shapes` that `job` may be moved to with a history peak of `peak_mib`:
// nullopt when the job cannot be right-sized (a pod set asks for no GPU, a fraction or a MIG
// slice; a MIG slice only for pods of one GPU, and only one `mig_ok` accepts: its queue covers
// that resource) or nothing smaller than the GPU it asked for fits. The GPU it asked for: the
// largest memory among its allowed models (any model: the cluster's largest).
std::optional<GpuShape> right_size_shape(const Job& job, const std::vector<GpuShape>& shapes,
                                         int64_t peak_mib, double headroom,
                                         const std::vector<std::string>& mig_ok);

// `job` as placed on `shape`: a model: its allowed models become that one; a MIG profile
// (`mig_resource`, the profile's resource id): each pod asks for one slice instead of its GPU.
Job right_sized(const Job& job, const GpuShape& shape, ResourceId mig_resource);

// The MIG profiles (full resource names, "nvidia.com/mig-1g.10gb") some resource group of
// ClusterQueue `queue` covers: the slices its jobs may be moved to.
std::vector<std::string> covered_mig_profiles(const Config& config, QueueId queue);

// GPU-hours of one job: requested = GPUs x run time; used = requested x mean utilisation.
struct GpuHours {
  double requested = 0;
  double used = 0;
};
GpuHours gpu_hours(double gpus, int64_t run_seconds, int32_t mean_util_pct);

// "11 GiB", "13.2 GiB", "512 MiB".
std::string mib_text(int64_t mib);

}  // namespace sluice
