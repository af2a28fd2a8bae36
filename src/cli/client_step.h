#pragma once
// `srun` inside a sluice job: a job step (docs/cli.md, "Job steps (srun inside a batch
// script)"). The pure part, so the tests check it without processes: srun's options, which
// tasks of a step run on which node, and the environment of each task.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::cli {

using EnvMap = std::map<std::string, std::string>;

// srun's options that sluice reads (anything else is an error, so a typo does not run the
// command somewhere unexpected): -n/--ntasks, -N/--nodes, --ntasks-per-node; the command
// follows (after `--` or the first word that is not an option). `batch`: the pod command of a
// multi-node sbatch job (`srun --batch -- SCRIPT...`, internal).
struct SrunArgs {
  int ntasks = -1;
  int nodes = -1;
  int ntasks_per_node = -1;
  bool batch = false;
  std::vector<std::string> command;
};

// The options, or what is wrong ("srun: --mpi=pmix is not an srun option sluice knows").
std::optional<std::string> parse_srun_args(const std::vector<std::string>& words, SrunArgs& out);

// Which tasks of a step run where. Slurm's block distribution: node i runs tasks
// [first[i], first[i] + count[i]); nodes with no task do not take part.
struct StepLayout {
  int nodes = 1;   // nodes taking part (the first `nodes` of the job's)
  int ntasks = 1;  // tasks in the step
  std::vector<int> first, count;
};

// The layout from the job's environment (SLUICE_GANG_SIZE: the job's pods are its nodes;
// SLURM_NTASKS_PER_NODE, SLURM_NTASKS)
// and srun's options, or what is wrong (more nodes or tasks than the job has).
std::optional<std::string> step_layout(const EnvMap& job_env, const SrunArgs& args,
                                       StepLayout& out);

// The environment of task `local` of pod `node` (its SLUICE_POD_INDEX) of a step: `leader` (the
// environment srun was called with: what the script exported) with this node's own values of
// node-local variables
// (`own`: CUDA_VISIBLE_DEVICES, SLURM_NODEID, SLUICE_*, HOSTNAME) and the task's Slurm
// variables (SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_ID, SLURM_STEP_NUM_TASKS, ...; RANK,
// LOCAL_RANK, WORLD_SIZE where the job has torch's variables).
EnvMap task_env(const EnvMap& leader, const EnvMap& own, const StepLayout& layout, int node,
                int local, int step_id);

// A step as the batch pod writes it for the other pods: command, environment, directory and
// layout.
nlohmann::json step_spec(const std::vector<std::string>& command, const EnvMap& env,
                         const std::string& cwd, const StepLayout& layout);
// Reads one back; false when the document is not a step.
bool read_step_spec(const nlohmann::json& doc, std::vector<std::string>& command, EnvMap& env,
                    std::string& cwd, StepLayout& layout);

// "KEY=VALUE" entries (environ) as a map.
EnvMap env_map(const char* const* environ_entries);

}  // namespace sluice::cli
