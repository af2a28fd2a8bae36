#pragma once
// `sluice run`: a command line becomes a sluice Job document (docs/config.md "Job"), built here
// so the tests can check the document without a server.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_http.h"

namespace sluice::cli {

struct RunArgs {
  std::string queue;       // empty: the namespace's LocalQueue "default" (the server's rule)
  std::string namespace_;  // empty: the server's default ("default")
  int gpus = -1;           // -1: not given
  int gang = 1;            // pods of `gpus` GPUs each
  // Slurm's -N (sluice run --nodes, sbatch -N): the gang's pods each on a node of their own
  // (spec.maxPodsPerNode 1).
  bool one_per_node = false;
  // Slurm's -N/--nodes, -n/--ntasks, --ntasks-per-node on `sluice run` (task_layout); -1: not
  // given. With more than one task a node each pod runs `srun -- COMMAND`, a process a task.
  int nodes = -1;
  int ntasks = -1;
  int ntasks_per_node = -1;
  std::string gpu_fraction;             // "0.5" or "500m"; implies one GPU per pod
  std::vector<std::string> gpu_models;  // spec.gpuModels: only these GPU models; empty: any
  std::string cpu;                      // quantity as in YAML: "4", "500m"
  std::string memory;                   // "16Gi"
  std::string priority_class;
  std::string walltime;          // Slurm's --time formats (client_time.h): "90", "1:30:00", "2h"
  std::string complete_by;       // deadline, RFC 3339 (spec.completeBy); empty: none
  std::string complete_within;   // deadline, a duration after submission (spec.completeWithin)
  std::string name;              // empty: derived from the command
  std::vector<std::string> env;  // K=V, on top of the exported ones
  // Slurm's --export (client_export.h) over caller_env (environ-style; nullptr: empty).
  std::string export_spec = "ALL";
  const char* const* caller_env = nullptr;
  // The job's working directory (--chdir): absolute, or relative to cwd; empty: cwd. Both
  // empty: the agent's per-pod directory, as for submitted documents.
  std::string chdir;
  std::string cwd;
  // Slurm's job control (docs/cli.md): --dependency, --hold, --array, --output, --error.
  std::string dependency;
  bool hold = false;
  std::string array;
  std::string output;
  std::string error;
  bool interactive = false;
  // --pty (Slurm's srun --pty): one pod under a pseudo-terminal that `sluice run` attaches to
  // (client_pty.h); the caller's TERM goes with it even under --export=NONE.
  bool pty = false;
  bool preemptible = false;
  bool no_preemptible = false;
  bool no_spot = false;  // spec.spot: false: never on a spot node (docs/autoscaling.md)
  // --right-size auto|off: spec.rightSize (docs/scheduling.md, "Right-sizing"); "": not set.
  std::string right_size;
  std::vector<std::string> command;
};

// Slurm's tasks as sluice pods: -N K gives K pods on distinct nodes, each holding its node's
// tasks (--ntasks-per-node, else -n split over the nodes); -n alone gives a pod a task, on any
// nodes. `error` says what is wrong ("" when fine).
struct TaskLayout {
  int pods = 1;
  int per_pod = 1;  // tasks a pod holds
  int ntasks = 1;
  bool one_per_node = false;
  std::string error;
};
TaskLayout task_layout(int nodes, int ntasks, int ntasks_per_node);
// The layout's pods into `r` (gang, one_per_node) and, where a pod holds more than one task or
// the tasks are not the pods, SLURM_NTASKS_PER_NODE and SLURM_NTASKS into its env.
void apply_task_layout(const TaskLayout& layout, RunArgs& r);

// The Job document, or a message naming the bad option (exit 1). `name_suffix` makes the
// default name unique ("train-py-k3x9"); the caller derives it from the clock.
Outcome<nlohmann::json> build_run_job(const RunArgs& args, const std::string& name_suffix);

// "python3" + "/usr/bin/train.py" -> "train-py": the default job name's stem, a DNS label.
std::string name_from_command(const std::vector<std::string>& command);

}  // namespace sluice::cli
