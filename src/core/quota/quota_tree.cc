#include "core/quota/quota_tree.h"

#include <algorithm>
#include <cassert>

namespace sluice {

namespace {
int64_t sat_add(int64_t a, int64_t b) {
  return std::min(kUnlimited, a + b);
}
}  // namespace

QuotaTree::QuotaTree(const Config& config)
    : config_(&config),
      num_queues_(static_cast<int>(config.cluster_queues.size())),
      num_flavors_(std::max<int>(1, static_cast<int>(config.flavors.size()))) {
  const int num_nodes = num_queues_ + static_cast<int>(config.cohorts.size());
  parent_.assign(num_nodes, -1);
  cells_.assign(static_cast<size_t>(num_nodes) * num_flavors_ * kMaxResources, Cell{});
  group_of_.assign(num_queues_, std::vector<int8_t>(kMaxResources, -1));

  auto load_groups = [&](int node, const std::vector<ResourceGroup>& groups) {
    for (const auto& g : groups)
      for (const auto& fq : g.flavors)
        for (const auto& rq : fq.resources) {
          Cell& c = at(node, fq.flavor, rq.resource);
          c.nominal = rq.nominal;
          c.borrowing_limit = rq.borrowing_limit.value_or(-1);
          c.lending_limit = rq.lending_limit.value_or(-1);
        }
  };
  for (int q = 0; q < num_queues_; ++q) {
    const auto& cq = config.cluster_queues[q];
    if (cq.cohort) parent_[q] = num_queues_ + *cq.cohort;
    load_groups(q, cq.resource_groups);
    for (size_t gi = 0; gi < cq.resource_groups.size(); ++gi)
      for (ResourceId r : cq.resource_groups[gi].covered) group_of_[q][r] = static_cast<int8_t>(gi);
  }
  for (size_t c = 0; c < config.cohorts.size(); ++c) {
    const int node = num_queues_ + static_cast<int>(c);
    if (config.cohorts[c].parent) parent_[node] = num_queues_ + *config.cohorts[c].parent;
    load_groups(node, config.cohorts[c].resource_groups);
  }

  // subtree and guaranteed, bottom-up. The loader rejects cohort cycles, so a node's depth is
  // bounded by the number of cohorts; process nodes deepest first.
  std::vector<int> depth(num_nodes, 0);
  for (int n = 0; n < num_nodes; ++n) {
    int d = 0;
    for (int p = parent_[n]; p >= 0 && d <= num_nodes; p = parent_[p]) ++d;
    depth[n] = d;
  }
  std::vector<int> order(num_nodes);
  for (int n = 0; n < num_nodes; ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  for (int n : order)
    for (FlavorId f = 0; f < num_flavors_; ++f)
      for (int r = 0; r < kMaxResources; ++r) at(n, f, r).subtree = at(n, f, r).nominal;
  for (int n : order) {
    for (FlavorId f = 0; f < num_flavors_; ++f)
      for (int r = 0; r < kMaxResources; ++r) {
        Cell& c = at(n, f, r);
        c.guaranteed = c.lending_limit >= 0 ? std::max<int64_t>(0, c.subtree - c.lending_limit) : 0;
        if (parent_[n] >= 0) at(parent_[n], f, r).subtree += c.subtree - c.guaranteed;
      }
  }
}

int QuotaTree::root(int node) const {
  int n = node;
  for (int i = 0; i < static_cast<int>(parent_.size()) && parent_[n] >= 0; ++i) n = parent_[n];
  return n;
}

int QuotaTree::group_of(QueueId q, ResourceId r) const {
  return group_of_[q][r];
}

const ResourceQuota* QuotaTree::quota(QueueId q, FlavorId f, ResourceId r) const {
  int g = group_of_[q][r];
  if (g < 0) return nullptr;
  for (const auto& fq : config_->cluster_queues[q].resource_groups[g].flavors)
    if (fq.flavor == f) return fq.find(r);
  return nullptr;
}

int64_t QuotaTree::available_node(int node, FlavorId f, ResourceId r) const {
  const Cell& c = at(node, f, r);
  if (parent_[node] < 0) return c.subtree - c.usage;
  int64_t local = std::max<int64_t>(0, c.guaranteed - c.usage);
  int64_t from_parent = available_node(parent_[node], f, r);
  if (c.borrowing_limit >= 0) {
    int64_t stored_in_parent = c.subtree - c.guaranteed;
    int64_t used_in_parent = std::max<int64_t>(0, c.usage - c.guaranteed);
    from_parent = std::min(from_parent, stored_in_parent - used_in_parent + c.borrowing_limit);
  }
  return local + from_parent;
}

int64_t QuotaTree::available(QueueId q, FlavorId f, ResourceId r) const {
  if (!managed(q, f, r)) return kUnlimited;
  return available_node(q, f, r);
}

int64_t QuotaTree::nominal(QueueId q, FlavorId f, ResourceId r) const {
  return at(q, f, r).nominal;
}

int64_t QuotaTree::borrowed(QueueId q, FlavorId f, ResourceId r) const {
  const Cell& c = at(q, f, r);
  return std::max<int64_t>(0, c.usage - c.nominal);
}

int64_t QuotaTree::lendable(QueueId q, FlavorId f, ResourceId r) const {
  const Cell& c = at(q, f, r);
  int64_t unused = std::max<int64_t>(0, c.nominal - c.usage);
  return c.lending_limit >= 0 ? std::min(unused, c.lending_limit) : unused;
}

int64_t QuotaTree::max_available(QueueId q, FlavorId f, ResourceId r) const {
  if (!managed(q, f, r)) return kUnlimited;
  // available() with zero usage everywhere, walking from the root down to q.
  std::vector<int> path;
  for (int n = q; n >= 0 && path.size() <= parent_.size(); n = parent_[n]) path.push_back(n);
  int64_t avail = at(path.back(), f, r).subtree;
  for (size_t i = path.size() - 1; i-- > 0;) {
    const Cell& c = at(path[i], f, r);
    int64_t from_parent = avail;
    if (c.borrowing_limit >= 0)
      from_parent = std::min(from_parent, c.subtree - c.guaranteed + c.borrowing_limit);
    avail = sat_add(c.guaranteed, from_parent);
  }
  return avail;
}

void QuotaTree::add_usage(QueueId q, FlavorId f, ResourceId r, int64_t amount) {
  // Propagate the change of max(0, usage - guaranteed) to each ancestor.
  int node = q;
  int64_t delta = amount;
  for (int steps = 0; node >= 0 && delta != 0 && steps <= static_cast<int>(parent_.size());
       ++steps) {
    Cell& c = at(node, f, r);
    int64_t before = std::max<int64_t>(0, c.usage - c.guaranteed);
    c.usage += delta;
    int64_t after = std::max<int64_t>(0, c.usage - c.guaranteed);
    delta = after - before;
    node = parent_[node];
  }
}

}  // namespace sluice
