#pragma once
// The nodes a flavor (label selector) allows. Built once per flavor and cached by the caller;
// readiness is not part of it (ClusterAlloc knows which nodes are ready now).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/cluster.h"
#include "core/place/node_bits.h"

namespace sluice {

class NodeSet {
 public:
  NodeSet() = default;
  // `ids` must be valid node ids of a cluster with `cluster_nodes` nodes; duplicates are dropped.
  NodeSet(int32_t cluster_nodes, std::vector<NodeId> ids, std::string name = "");
  static NodeSet all(const Cluster& cluster, std::string name = "");

  const std::vector<NodeId>& ids() const { return ids_; }  // ascending
  const NodeBits& bits() const { return bits_; }
  bool contains(NodeId n) const { return n >= 0 && n < bits_.size() && bits_.test(n); }
  int32_t size() const { return static_cast<int32_t>(ids_.size()); }
  bool empty() const { return ids_.empty(); }
  // Shown in failure reasons ("no H100 node matches flavor h100-spot"); usually the flavor name.
  const std::string& name() const { return name_; }

 private:
  std::vector<NodeId> ids_;
  NodeBits bits_;
  std::string name_;
};

// Nodes that carry every (key, value) of `required_labels`, ready or not.
NodeSet select_nodes(const Cluster& cluster, const Labels& required_labels, std::string name = "");

}  // namespace sluice
