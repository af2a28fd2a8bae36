#include "core/place/node_set.h"

#include <algorithm>

namespace sluice {

NodeSet::NodeSet(int32_t cluster_nodes, std::vector<NodeId> ids, std::string name)
    : ids_(std::move(ids)), bits_(cluster_nodes), name_(std::move(name)) {
  if (!std::is_sorted(ids_.begin(), ids_.end())) std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  for (NodeId n : ids_) bits_.set(n);
}

NodeSet NodeSet::all(const Cluster& cluster, std::string name) {
  std::vector<NodeId> ids(cluster.nodes.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(i);
  return NodeSet(static_cast<int32_t>(cluster.nodes.size()), std::move(ids), std::move(name));
}

NodeSet select_nodes(const Cluster& cluster, const Labels& required_labels, std::string name) {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    const Labels& have = cluster.nodes[i].labels;
    bool ok = true;
    for (const auto& [key, value] : required_labels) {
      const std::string* v = find_label(have, key);
      if (v == nullptr || *v != value) {
        ok = false;
        break;
      }
    }
    if (ok) ids.push_back(static_cast<NodeId>(i));
  }
  return NodeSet(static_cast<int32_t>(cluster.nodes.size()), std::move(ids), std::move(name));
}

}  // namespace sluice
