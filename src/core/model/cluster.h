#pragma once
// The physical cluster: nodes, their GPUs and the topology above and inside nodes.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/resources.h"

namespace sluice {

using NodeId = int32_t;
// Labels are kept sorted by key so lookups and comparisons are deterministic.
using Labels = std::vector<std::pair<std::string, std::string>>;
const std::string* find_label(const Labels& labels, const std::string& key);

struct MigSlice {
  ResourceId profile = 0;  // e.g. the id of "nvidia.com/mig-1g.10gb"
};

struct Gpu {
  std::string model;  // "H100", "A100", ... (allowed-model filters match this)
  int64_t memory_mib = 0;
  int32_t nvlink_domain = 0;  // GPUs of one node with equal ids are NVLink-connected
  int32_t numa_node = 0;
  int32_t pcie_switch = 0;
  std::vector<MigSlice> mig;  // non-empty: partitioned; only its slices are allocatable
};

struct Node {
  std::string name;
  Labels labels;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<Gpu> gpus;
  // Domain id of this node at each Cluster::levels entry (outermost first).
  std::vector<int32_t> domains;
  bool ready = true;
};

struct Cluster {
  std::string name;
  // Topology levels above the node, outermost first, e.g. {"block", "rack"}. A job's topology
  // request names one of these or "node" (TopologyRequest::level == levels.size()).
  std::vector<std::string> levels;
  // domain_names[level][id] = the domain's name (e.g. "rack-07").
  std::vector<std::vector<std::string>> domain_names;
  std::vector<Node> nodes;

  int level_index(const std::string& name) const;  // -1 when unknown; levels.size() for "node"
  int64_t total_gpus() const;
};

}  // namespace sluice
