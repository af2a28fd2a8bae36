#pragma once
// Kueue's quota semantics over the cohort tree: a ClusterQueue uses its nominal quota per flavor
// and resource, may borrow unused quota of its cohort up to borrowingLimit, lends at most
// lendingLimit, and cohorts nest (a cohort may hold quota of its own).
//
// Per node n (ClusterQueue or cohort) and flavor-resource fr:
//   subtree(n)    = nominal(n) + sum over children c of (subtree(c) - guaranteed(c))
//   guaranteed(n) = lendingLimit(n) set ? max(0, subtree(n) - lendingLimit(n)) : 0
//   usage(cohort) = sum over children c of max(0, usage(c) - guaranteed(c))
//   available(n)  = root:  subtree(n) - usage(n)
//                   other: max(0, guaranteed(n) - usage(n)) + min(available(parent),
//                          borrowingLimit set ? subtree(n) - guaranteed(n)
//                                               - max(0, usage(n) - guaranteed(n)) + borrowingLimit
//                                             : inf)
// A job fits a ClusterQueue's flavor when, for every quota-managed resource, its request is at
// most available(queue). These are Kueue's hierarchical formulas; see docs/scheduling.md.
#include <cstdint>
#include <limits>
#include <vector>

#include "core/model/config.h"

namespace sluice {

inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

class QuotaTree {
 public:
  explicit QuotaTree(const Config& config);

  // Is (flavor, resource) quota-managed for this queue: some resource group covers `r` and lists
  // `f`, with an explicit quota entry for `r`.
  bool managed(QueueId q, FlavorId f, ResourceId r) const { return quota(q, f, r) != nullptr; }
  // The resource group of queue q that covers r, or -1.
  int group_of(QueueId q, ResourceId r) const;

  int64_t available(QueueId q, FlavorId f, ResourceId r) const;
  int64_t usage(QueueId q, FlavorId f, ResourceId r) const { return at(q, f, r).usage; }
  int64_t nominal(QueueId q, FlavorId f, ResourceId r) const;
  // Borrowed from the cohort: usage above nominal.
  int64_t borrowed(QueueId q, FlavorId f, ResourceId r) const;
  // Lent to the cohort: unused nominal that others use, bounded by the lending limit
  // (reported for metrics; approximated as min(lendable, unused) when the cohort borrows).
  int64_t lendable(QueueId q, FlavorId f, ResourceId r) const;
  // Largest amount queue q could ever use of (f, r) with the rest of the cohort idle.
  int64_t max_available(QueueId q, FlavorId f, ResourceId r) const;

  // May queue q use more than its nominal quota of (f, r): it has a cohort and no zero
  // borrowingLimit.
  bool can_borrow(QueueId q, FlavorId f, ResourceId r) const {
    return parent_[q] >= 0 && at(q, f, r).borrowing_limit != 0;
  }

  // Any node (queue or cohort): its subtree quota and usage as in the formulas above (Kueue's
  // SubtreeQuota and Usage; a queue's subtree is its nominal quota).
  int64_t node_subtree(int node, FlavorId f, ResourceId r) const { return at(node, f, r).subtree; }
  int64_t node_usage(int node, FlavorId f, ResourceId r) const { return at(node, f, r).usage; }
  // Its guaranteed quota (kept from the cohort by a lending limit; 0 without one).
  int64_t node_guaranteed(int node, FlavorId f, ResourceId r) const {
    return at(node, f, r).guaranteed;
  }
  int num_nodes() const { return static_cast<int>(parent_.size()); }

  // Adds (or with a negative amount releases) usage of a ClusterQueue and propagates it up.
  void add_usage(QueueId q, FlavorId f, ResourceId r, int64_t amount);

  int num_queues() const { return num_queues_; }
  int num_flavors() const { return num_flavors_; }
  // Parent node of queue q (cohort node index) or -1. Node indexes: queues 0..Q-1, cohorts Q...
  int parent(int node) const { return parent_[node]; }
  int root(int node) const;

 private:
  struct Cell {
    int64_t nominal = 0;
    int64_t subtree = 0;
    int64_t guaranteed = 0;
    int64_t usage = 0;
    int64_t borrowing_limit = -1;  // -1: none
    int64_t lending_limit = -1;    // -1: none
  };
  size_t index(int node, FlavorId f, ResourceId r) const {
    return (static_cast<size_t>(node) * num_flavors_ + f) * kMaxResources + r;
  }
  const Cell& at(int node, FlavorId f, ResourceId r) const { return cells_[index(node, f, r)]; }
  Cell& at(int node, FlavorId f, ResourceId r) { return cells_[index(node, f, r)]; }
  const ResourceQuota* quota(QueueId q, FlavorId f, ResourceId r) const;
  int64_t available_node(int node, FlavorId f, ResourceId r) const;

  const Config* config_;
  int num_queues_ = 0;
  int num_flavors_ = 0;
  std::vector<int> parent_;  // per node
  std::vector<Cell> cells_;
  std::vector<std::vector<int8_t>> group_of_;  // [queue][resource] -> group or -1
};

}  // namespace sluice
