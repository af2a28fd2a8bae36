#pragma once
// What every trace reader returns: jobs with their true run times, and bad rows as
// "file:line: what is wrong" messages. Readers know nothing of the scheduler; check_against()
// then drops rows the configuration cannot take (unknown queue or priority class).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice::sim {

struct TraceJob {
  Job job;                 // id, queue, priority class, pods, submit_ns; walltime_ns = estimate
  TimeNs duration_ns = 0;  // the true run time, known only to the simulator
  // Deadline: the job should complete by this time (Chronus's expected completion time); 0 =
  // none. Only the simulator's report reads it (deadline satisfaction per class).
  TimeNs complete_by_ns = 0;
  std::string where;  // "file:line" of the row, for messages
};

struct TraceOutput {
  std::vector<TraceJob> jobs;       // in trace order
  std::vector<std::string> errors;  // one per bad row (the row is dropped)
  int64_t rows = 0;                 // data rows read, good and bad
};

// Gives a GPU-only job `gpus` whole GPUs as a gang: one pod when it fits on a node of
// `gpus_per_node`, else the fewest pods of equal size that do (16 -> 2 x 8, 12 -> 2 x 6).
void set_gpu_shape(Job& job, int32_t gpus, int32_t gpus_per_node);

// Most GPUs on any node of the cluster (at least 1).
int32_t max_gpus_per_node(const Config& config);

// Resolves priority classes (a defined WorkloadPriorityClass, else the built-in low/normal/
// medium/high/critical values) and moves rows whose queue or class the configuration lacks into
// `errors`.
void check_against(TraceOutput& trace, const Config& config);

// The traces directory: $SLUICE_TRACES when set, else `../shared/traces` under `repo_root`.
std::string traces_dir(const std::string& repo_root);

}  // namespace sluice::sim
