#pragma once
// Reader for the Philly-derived per-virtual-cluster CSV (Chronus artifact, trace_job_*.csv):
//   job_id,user,num_gpu,submit_time,...,duration,...,best_effort,...
// Columns are found by header name; `job_id`, `user`, `num_gpu`, `submit_time` and `duration`
// are required, `best_effort` is optional (0). Each row becomes one GPU-only job:
//   queue = `user` (the VC name) in namespace "default", priority class `low` when best_effort
//   is 1 (preemptible) else `high` (not preemptible), num_gpu GPUs shaped by set_gpu_shape(),
//   submit = submit_time s, true run time and walltime estimate = duration s.
// `expect_time_list` / `expect_value_list` (optional) are Chronus's utility: a strict job has
// one time (its deadline, that many seconds after its submission), a soft job a '-'-separated
// list of times and values ("159-189-229-289" / "10-8-5-2": 10 if done within 159 s, 8 within
// 189 s...). A strict or soft row's first time is its deadline (TraceJob::complete_by_ns) and
// the list its utility (TraceJob::utility); a best-effort row's (its submit time) is ignored.
// Malformed lists (lengths that differ, items that are not numbers, times that go down, values
// that go up) make the row bad.
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
