#pragma once
// Admitted state as input: a job document's `status.admission` (Kueue's Workload admission:
// the ClusterQueue, per pod set the flavor of each resource, optionally the nodes and devices
// its pods hold) and when it was admitted. `sluice plan` starts from it and the server's
// state export writes it (docs/config.md, "Admitted state").
//
//   status:
//     admission:
//       clusterQueue: team-a
//       podSetAssignments:
//       - name: main                     # optional when the job has one pod set
//         flavors: {nvidia.com/gpu: h100, cpu: default}
//         count: 2                       # optional; the pod set's count, or fewer down to
//                                        #   its minCount (partially admitted)
//         nodes: [n1, n2]                # optional (sluice): one node per pod
//         gpus: [[0, 1], ["3/2"]]        # optional, with nodes: devices per pod ("GPU/slice")
//       bestEffort: true                 # optional (sluice): admitted over its budget
//       fallbackShape: 1                 # optional (sluice): runs spec.fallback.shapes[0]
//     admissionTime: 120                 # seconds, like spec.submitTime (default: submitTime)
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/place/placement.h"

namespace sluice {

class Scheduler;
struct LoadOutput;

// One pod set's assignment, names resolved and checked against the configuration.
struct AdmittedPodSet {
  // Flavor of each resource the pod set requests, in resource id order.
  std::vector<std::pair<ResourceId, FlavorId>> flavors;
  // Per pod (pod index order): its node, and its devices when given. Empty: not given, the
  // pods are placed when the state is loaded (load_state()).
  std::vector<NodeId> nodes;
  std::vector<std::vector<GpuShare>> gpus;  // empty, or one (possibly empty) list per pod
  FlavorId flavor_of(ResourceId r) const;
};

struct AdmittedStatus {
  QueueId queue = 0;
  TimeNs admitted_ns = 0;
  std::vector<AdmittedPodSet> pod_sets;  // parallel to the pod sets it runs with
  int32_t shape = -1;                    // index into job.fallback.shapes; -1: as requested
  std::vector<int32_t> pod_set_counts;   // partial admission: pods per pod set; empty: all
  bool best_effort = false;
  std::string where;  // "file:line" of status.admission, for errors found when loading
};

// Puts a loaded state into a fresh scheduler: every job with an admission as running (through
// Scheduler::restore_running, as after a daemon restart), then every other job as pending, in
// document order. Admitted jobs go in by admission time, then id; those that name no nodes are
// placed as a cycle would place them (the placer, on the nodes of their flavors, against what
// was restored before them), those that name nodes but no devices get devices on those nodes
// the same way. A job whose usage is over what its ClusterQueue may use, or that does not fit
// the nodes, is an error ("file:line: status.admission: ..."). Returns the errors (empty: done).
std::vector<std::string> load_state(Scheduler& s, const LoadOutput& out);
// The first half of load_state(): only the jobs with an admission (a scenario submits the
// others over time).
std::vector<std::string> restore_admitted(Scheduler& s, const LoadOutput& out);

// The time a loaded state describes: the Snapshot's time, else the latest submit or admission
// time of its jobs (0 without jobs).
TimeNs state_time(const LoadOutput& out);

}  // namespace sluice
