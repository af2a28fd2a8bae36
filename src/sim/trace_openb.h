#pragma once
// Reader for the Alibaba GPU cluster trace of 2023 (`openb`, alibaba/clusterdata,
// cluster-trace-gpu-v2023; ../shared/traces/alibaba-openb/):
//   pods:  name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//          deletion_time,scheduled_time
//   nodes: sn,cpu_milli,memory_mib,gpu,model
// Each pod becomes a one-pod job (docs/simulator.md, "openb"):
//   requests: cpu_milli, memory_mib, num_gpu GPUs of gpu_milli each (gpu_milli < 1000 only with
//     one GPU: a shared fraction; num_gpu 0: a CPU-only job), allowed models = gpu_spec split on
//     '|' (empty: any model);
//   class: qos LS and Guaranteed -> `high` (not preemptible), Burstable -> `normal`
//     (preemptible), BE -> `low` (preemptible);
//   submit = creation_time; true run time = deletion_time - scheduled_time, or
//     deletion_time - creation_time for a pod the original cluster never scheduled (its whole
//     life in the trace; the simulated cluster may run it). Without a creation_time column pods
//     arrive one per second in file order; without deletion_time each runs `default_duration_ns`.
//   queue: one LocalQueue (`queue`, namespace `namespace_`): the trace names no team.
#include <string>
#include <vector>

#include "sim/trace.h"

namespace sluice::sim {

struct OpenbOptions {
  std::string queue = "openb";
  std::string namespace_ = "default";
  std::string high_class = "high";      // qos LS, Guaranteed
  std::string normal_class = "normal";  // qos Burstable
  std::string low_class = "low";        // qos BE
  TimeNs default_duration_ns = 86400 * kNsPerSec;
};

// `name` is used in messages (file:line); `text` is the whole pod list.
TraceOutput read_openb(const std::string& name, const std::string& text,
                       const OpenbOptions& options);

// True when `text` starts with the openb node list header (`sn,...`).
bool is_openb_node_list(const std::string& text);

// The openb node list as the text of a sluice `Cluster` document (one node per row: name `sn`,
// cpu, memory, `gpu` GPUs of `model`), to be loaded with the queue files. Bad rows go to
// `errors` as "file:line: what" and are left out.
std::string openb_nodes_to_cluster_yaml(const std::string& name, const std::string& text,
                                        std::vector<std::string>& errors);

}  // namespace sluice::sim
