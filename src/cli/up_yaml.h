#pragma once
// The configuration `sluice up` writes for itself: the local nodes as a Cluster (mirroring what
// its agents will report) and, without --config, one queue over them.
#include <string>
#include <vector>

#include "agent/gpu.h"
#include "core/model/result.h"

namespace sluice::cli {

// The GPUs each local agent will report, as groups: `fake:SPEC` read by the agent's own parser
// (agent::parse_fake_spec: a bad spec is an error, with its message), `none` no GPUs; for
// anything else (`auto`: NVML, found only once the agents start) 8 x H100 are assumed, and an
// unknown spec is reported by the agents.
Result<std::vector<agent::FakeGpuGroup>> local_gpus(const std::string& gpus_spec);

// One node group mirroring the local agents: `nodes` nodes local-0... with `gpus` each.
// Node labels (`--node-label KEY=VALUE`), checked as Kubernetes checks a label: a key of an
// optional DNS-subdomain prefix and a name of at most 63 of [A-Za-z0-9._-] (alphanumeric at both
// ends), a value of at most 63 of the same (or empty).
using NodeLabels = std::vector<std::pair<std::string, std::string>>;
Result<NodeLabels> parse_node_labels(const std::vector<std::string>& specs);
std::string local_cluster_doc(int nodes, const std::vector<agent::FakeGpuGroup>& gpus,
                              const NodeLabels& labels = {});

// The local nodes and one queue over them (ClusterQueue and LocalQueue "default").
std::string local_cluster_yaml(int nodes, const std::vector<agent::FakeGpuGroup>& gpus,
                               const NodeLabels& labels = {});

// Whether any document of the files is a Cluster. Unreadable files count as having one: the
// server's loader then reports them with file:line.
bool has_cluster_doc(const std::vector<std::string>& files);

}  // namespace sluice::cli
