#pragma once
// The configuration `sluice up` writes for itself: the local nodes as a Cluster (mirroring what
// its agents will report) and, without --config, one queue over them.
#include <string>
#include <vector>

namespace sluice::cli {

// One node group mirroring the local agents.
std::string local_cluster_doc(int nodes, const std::string& gpus_spec);

// The local nodes and one queue over them.
std::string local_cluster_yaml(int nodes, const std::string& gpus_spec);

// Whether any document of the files is a Cluster. Unreadable files count as having one: the
// server's loader then reports them with file:line.
bool has_cluster_doc(const std::vector<std::string>& files);

}  // namespace sluice::cli
