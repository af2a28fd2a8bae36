#pragma once
// The FGD placement experiment (FGD_EXPERIMENT.md): pods of a trace arrive one at a time on the
// trace's nodes, never leave, and are placed by one policy through sluice's own Placer (the same
// ClusterAlloc, search and scorer objects production uses); the curve records the GPU
// allocation ratio against the share of capacity that has arrived.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "sim/fgd/trace.h"

namespace sluice::sim::fgd {

// Every policy the experiment knows: the paper's six, then sluice's own.
const std::vector<std::string>& policy_names();
// The paper's name for a policy in fgd_expected_alloc_default.csv ("06-FGD"); "" when unpublished.
std::string published_name(const std::string& policy);

struct RunResult {
  uint64_t seed = 0;
  Curve curve{};     // allocation ratio (%) by arrived share (%) 0..130
  int64_t pods = 0;  // arrived (after inflation)
  int64_t placed = 0;
  int64_t gpu_milli_capacity = 0;
  int64_t gpu_milli_used = 0;
};

struct ExperimentOptions {
  double inflate = 1.3;        // workload = this share of cluster GPU capacity
  double fgd_coverage = 0.95;  // typical pods cover this share of the pods
};

// One run: `pods` is the original pod list (after the mix); `seed` drives the shuffle, the
// inflation clones, the node tie order and the Random policy. Errors: unknown policy.
Result<RunResult> run_experiment(const std::vector<TraceNode>& nodes,
                                 const std::vector<TracePod>& pods, const std::string& policy,
                                 uint64_t seed, const ExperimentOptions& options = {});

}  // namespace sluice::sim::fgd
