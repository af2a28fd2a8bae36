#pragma once
// Pod mixes derived from a trace, to check that a policy tuned on the default trace holds on
// workloads it was not tuned on. Each is a deterministic rewrite of the pod list (fixed seed), so
// every policy and seed sees the same mix:
//   default      the trace as is
//   sharing      half of the whole 1-GPU pods become sharing pods (milli drawn from the trace's
//                sharing pods): much more GPU sharing
//   multigpu     one in five 1-GPU pods becomes a copy of a multi-GPU pod of the trace
//   constrained  40% of the GPU pods may only use one GPU model (drawn by the cluster's GPUs of
//                each model that can hold the pod)
#include <string>
#include <vector>

#include "core/model/result.h"
#include "sim/fgd/trace.h"

namespace sluice::sim::fgd {

const std::vector<std::string>& mix_names();
Result<std::vector<TracePod>> apply_mix(const std::vector<TracePod>& pods,
                                        const std::vector<TraceNode>& nodes,
                                        const std::string& mix);

}  // namespace sluice::sim::fgd
