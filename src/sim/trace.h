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

// One step of a job's utility (Chronus's `expect_time_list` / `expect_value_list`): the job
// earns `value` when it completes within `within_ns` of its submission.
struct ValueStep {
  TimeNs within_ns = 0;
  int64_t value = 0;
};

struct TraceJob {
  Job job;                 // id, queue, priority class, pods, submit_ns; walltime_ns = estimate
  TimeNs duration_ns = 0;  // the true run time, known only to the simulator
  // Deadline: the job should complete by this time (Chronus's expected completion time, the
  // first of its list); 0 = none. The simulator gives it to the scheduler (its deadline term)
  // and the report counts deadlines met per class.
  TimeNs complete_by_ns = 0;
  // Utility: what completing earns, by when (times non-decreasing, values non-increasing; the
  // first value is the full value). Empty: none. Only the report reads it (earned_value()).
  std::vector<ValueStep> utility;
  std::string where;  // "file:line" of the row, for messages
  // What the runs of one recurring job share (right-sizing's history key, sim/right_size.h);
  // Philly: its VC, DL model and GPU count. "": the job does not recur.
  std::string family;
};

struct TraceOutput {
  std::vector<TraceJob> jobs;       // in trace order
  std::vector<std::string> errors;  // one per bad row (the row is dropped)
  int64_t rows = 0;                 // data rows read, good and bad
};

// What a job with `utility` earns when it ends at `end_ns` (-1: never): the value of the first
// step it completed within (end - submit <= within_ns), 0 after the last step or never.
int64_t earned_value(const std::vector<ValueStep>& utility, TimeNs submit_ns, TimeNs end_ns);

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
