#pragma once
// What one pod of a run is told besides its placement (docs/workloads.md): its command and env,
// from the job, its pod set, the distributed launcher's variables of its gang (GangEnv) and its
// completion index. Pure functions of the job, the admission and the run's peers.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/decision/decisions.h"
#include "core/model/job.h"
#include "proto/protocol.h"

namespace sluice::server {

// The pod's rank in its gang: pod sets in order, pods in order within a set (a PyTorchJob's
// Master is rank 0, its Workers 1..n), counting the pods placed. `pod` indexes
// admission.placement.pods.
int32_t pod_rank(const Admission& admission, size_t pod);

// The host part of an agent address ("http://10.0.0.5:7070" -> "10.0.0.5", "[::1]" -> "::1").
std::string address_host(const std::string& address);

// The port a gang's rank-0 pod listens on for its peers (MASTER_PORT): the first port from a
// start derived from the job id, within [kFirst, kFirst + kCount), that no other running gang
// with its rank-0 pod on the same node uses. Pods share their node's network, unlike
// Kubernetes pods, so a fixed port would collide.
struct MasterPorts {
  static constexpr int32_t kFirst = 29500;
  static constexpr int32_t kCount = 2000;
  static int32_t pick(JobId job, const std::set<int32_t>& used_on_node);
};

// Fills as.command and as.env of pod `pod`:
//   1. the job's command and env; the pod set's command (if any) and env on top;
//   2. for a GangEnv: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, NODE_RANK, LOCAL_RANK and
//      torchrun's PET_* names (kMpi also K_MPI_JOB_ROLE and SLUICE_HOSTFILE), each unless the
//      job set it itself;
//   3. JOB_COMPLETION_INDEX: `completion` (>= 0, an Indexed Job's run) or the pod's index in its
//      child job (a JobSet's Indexed replicated job);
//   4. Slurm's names: SLURM_JOB_ID, SLURM_JOB_NAME, and for a task of an array
//      SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT/MIN/MAX (and the same as
//      SLUICE_ARRAY_*), each unless the job set it; as.output_path/error_path from the job's
//      spec.output/spec.error (expand_file_pattern).
void pod_command_env(const Job& job, const Admission& admission, size_t pod,
                     const std::vector<proto::PeerPod>& peers, int32_t master_port,
                     int32_t completion, proto::Assignment& as);

// Slurm's filename pattern: %j job id, %A the array's id (the job's without an array), %a the
// task index (0 without an array), %x the job name, %u the submitter, %n the pod's node in the
// job (SLURM_NODEID), %t its rank (SLURM_PROCID: a file per pod), %% a '%'. An unknown
// %-letter stays as it is.
std::string expand_file_pattern(const std::string& pattern, const Job& job, int32_t node = 0,
                                int32_t task = 0);

}  // namespace sluice::server
