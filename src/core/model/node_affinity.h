#pragma once
// Where a pod set may run, as Kubernetes says it: nodeSelector, required node affinity
// (nodeSelectorTerms: OR of terms, each an AND of requirements) and the taints its pods
// tolerate. sluice uses them as Kueue's flavor assigner does (a flavor whose nodeLabels
// contradict them, or whose nodeTaints are not tolerated, is skipped) and, as kube-scheduler
// would, to pick nodes (docs/scheduling.md, "Node selectors and taints").
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/model/cluster.h"

namespace sluice {

enum class NodeOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct NodeRequirement {
  std::string key;
  NodeOp op = NodeOp::kIn;
  std::vector<std::string> values;
  bool operator==(const NodeRequirement&) const = default;
};

// A toleration: key "" with exists tolerates every taint; effect "" every effect.
struct Toleration {
  std::string key;
  bool exists = false;  // operator Exists (else Equal: value must match)
  std::string value;
  std::string effect;
  bool operator==(const Toleration&) const = default;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule or NoExecute
  bool operator==(const Taint&) const = default;
};

struct NodeAffinity {
  Labels selector;                                  // nodeSelector, sorted by key
  std::vector<std::vector<NodeRequirement>> terms;  // required affinity; empty: none
  std::vector<Toleration> tolerations;
  bool constrains_nodes() const { return !selector.empty() || !terms.empty(); }
  bool operator==(const NodeAffinity&) const = default;
};

// Whether `labels` satisfy the selector and the terms. With `keys`, only requirements on those
// keys count, and a term left without any matches everything (Kueue's check of a flavor's
// nodeLabels: keys no flavor of the resource group has are the node scheduler's business).
bool node_matches(const NodeAffinity& a, const Labels& labels,
                  const std::set<std::string>* keys = nullptr);
// The first NoSchedule or NoExecute taint the tolerations do not tolerate; nullptr when none.
const Taint* untolerated_taint(const std::vector<Taint>& taints,
                               const std::vector<Toleration>& tolerations);

}  // namespace sluice
