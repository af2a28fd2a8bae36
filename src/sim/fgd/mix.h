#pragma once
// Pod mixes derived from a trace, to check that a policy tuned on the default trace holds on
// workloads it was not tuned on (the workload families of the FGD artifact). Each is a
// deterministic rewrite of the pod list (fixed seed), so every policy and seed sees the same mix.
//
// A mix is `default`, a family at a share `FAMILY:SHARE`, or several joined by `+`
// (`gpuspec:0.2+cpu:0.3`, applied left to right). Families (share in 0..1):
//   sharing:S    S of the GPU pods share a GPU (whole 1-GPU pods become sharing pods, milli drawn
//                from the trace's sharing pods; the default trace has 0.44)
//   multigpu:S   S of the GPU pods want several GPUs (whole 1-GPU pods become copies of the
//                trace's multi-GPU pods; default 0.01)
//   gpuspec:S    S of the GPU pods may only use one GPU model (drawn by the cluster's GPUs of each
//                model that can hold the pod; default 0)
//   gpuspecuniform:S  as gpuspec, the model drawn uniformly: the small models are pinned far more
//                per GPU (scarce models)
//   cpu:S        S of the pods are CPU-only (clones of the trace's CPU-only pods are added;
//                default 0.13)
// A share below the trace's own leaves the family as it is. Named mixes (earlier sessions):
//   sharing = sharing:0.7, multigpu = multigpu:0.12, constrained = gpuspec:0.4, cpuheavy = cpu:0.4
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
