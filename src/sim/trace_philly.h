#pragma once
// Reader for the Philly-derived per-virtual-cluster CSV (Chronus artifact, trace_job_*.csv):
//   job_id,user,num_gpu,submit_time,...,duration,...,best_effort,...
// Columns are found by header name; `job_id`, `user`, `num_gpu`, `submit_time` and `duration`
// are required, `best_effort` is optional (0). Each row becomes one GPU-only job:
//   queue = `user` (the VC name) in namespace "default", priority class `low` when best_effort
//   is 1 (preemptible) else `high` (not preemptible), num_gpu GPUs shaped by set_gpu_shape(),
//   submit = submit_time s, true run time and walltime estimate = duration s; a strict row's
//   `expect_time_list` (optional) is its deadline, that many seconds after its submission.
#include <string>

#include "sim/trace.h"

namespace sluice::sim {

struct PhillyOptions {
  int32_t gpus_per_node = 8;
  std::string best_effort_class = "low";
  std::string strict_class = "high";
  std::string namespace_ = "default";
};

// `name` is used in messages (file:line); `text` is the whole file.
TraceOutput read_philly(const std::string& name, const std::string& text,
                        const PhillyOptions& options);

}  // namespace sluice::sim
