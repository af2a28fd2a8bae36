#pragma once
// What a job's pods run and who runs them (and the name of its priority class): read by the
// server, its readers and the agents, never by the core's decisions. A Job keeps it aside
// (Job::exec(), PodSet::exec(): shared_box.h), so that the scheduler's pending jobs hold only what
// it decides on.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sluice {

using JobId = uint64_t;

// The environment a gang's pods get for a distributed launcher, besides sluice's own SLUICE_*
// (docs/workloads.md): kTorch: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK
// and torchrun's PET_* (PyTorchJob, JobSet, `sluice run --gang`); kMpi: the same plus the
// launcher's hostfile (MPIJob).
enum class GangEnv : uint8_t { kNone, kTorch, kMpi };

// batch/v1 Job completions (Kubernetes semantics on sluice's slots): the job's pods (its
// `parallelism`) are admitted and placed together as usual; together they run `total` pod runs,
// each slot starting the next one as its previous one succeeds. Indexed: run i gets
// JOB_COMPLETION_INDEX=i. total 0: every pod runs once (a gang).
struct Completions {
  int32_t total = 0;
  bool indexed = false;
  bool operator==(const Completions&) const = default;
};

// What one pod set's pods run where it differs from the job's (Kubeflow replica specs, JobSet
// replicated jobs, pod groups): empty command: the job's; env: added to the job's, winning.
struct PodSetExec {
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;
  // The first container's image (Kubernetes kinds): run in it where the node has a container
  // runtime (docs/workloads.md, "Images"). "": the command runs on the node.
  std::string image;
  bool image_args_only = false;  // only `args` were given: they follow the image's entrypoint
};

struct JobExec {
  // Its WorkloadPriorityClass's name as given ("" = default): what the API shows and a saved
  // state names; the core decides on the resolved value (Job::priority).
  std::string priority_class;
  // What the agent runs.
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;
  GangEnv gang_env = GangEnv::kNone;
  Completions completions;
  // Who runs it: the submitter (token name, "anonymous" without auth) and the unix ids its pods
  // run as on a root agent. A submission sets them from securityContext.runAsUser/runAsGroup;
  // the server then resolves them against the token (-1: none: the agent's per-namespace uid).
  std::string user;
  int64_t run_as_uid = -1;
  int64_t run_as_gid = -1;
  // The submitter's own unix ids as its client reported them (a server without tokens only;
  // -1: none). A root agent runs the pods as them when no run_as_uid is set and the job's
  // working directory exists on its node (the node shares the submitter's filesystem).
  int64_t submitter_uid = -1;
  int64_t submitter_gid = -1;
  // Where the pods start (spec.workingDir, `sluice run`'s directory): absolute; "" = the
  // agent's per-pod directory.
  std::string working_dir;
  // Slurm-style job control, read by the server (docs/cli.md): spec.dependency as given
  // ("afterok:12:13,singleton": job_control.h parses it), spec.hold (submitted held),
  // spec.array ("0-99%10": the server makes one job per task), and the spec.output/spec.error
  // file patterns (%j, %a, %A, %x, %u).
  std::string dependency;
  bool hold = false;
  std::string array;
  std::string output;
  std::string error;
  // spec.tty (`sluice run --pty`): its one pod runs under a pseudo-terminal that its owner
  // attaches to (docs/cli.md, "Interactive sessions").
  bool tty = false;
  // A task of an array (set by the server): its index, the array's id (its first task's job
  // id) and its throttle (%N: at most N tasks pending in the scheduler or running; 0: none).
  int32_t array_task = -1;
  JobId array_job = 0;
  int32_t array_throttle = 0;
  bool operator==(const JobExec&) const = default;
};

}  // namespace sluice
