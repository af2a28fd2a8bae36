#pragma once
// FGD's expected workload from pods counted by shape (fgd_scorer.h's typical_pods() from a list
// of pods counts them the same way): what a scheduler refreshing its workload builds without a
// vector entry per pod.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/place/fgd_scorer.h"

namespace sluice {

// Pods by shape: (cpu_milli, gpus, gpu_milli, model_mask) -> number of pods.
using PodShapeCounts = std::map<std::tuple<int64_t, int32_t, int32_t, uint64_t>, int64_t>;

// The most frequent shapes that together cover `coverage` (0..1) of the pods counted, as
// typical_pods() gives them for the same pods.
std::vector<TypicalPod> typical_pods(const PodShapeCounts& counts, double coverage);

}  // namespace sluice
