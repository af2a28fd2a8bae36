#include "core/model/config.h"

namespace sluice {

const ResourceQuota* FlavorQuotas::find(ResourceId r) const {
  for (const auto& q : resources)
    if (q.resource == r) return &q;
  return nullptr;
}

namespace {
template <class V>
std::optional<int32_t> index_by_name(const V& v, const std::string& name) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].name == name) return static_cast<int32_t>(i);
  return std::nullopt;
}
}  // namespace

std::optional<FlavorId> Config::find_flavor(const std::string& name) const {
  return index_by_name(flavors, name);
}
std::optional<QueueId> Config::find_cluster_queue(const std::string& name) const {
  return index_by_name(cluster_queues, name);
}
std::optional<CohortId> Config::find_cohort(const std::string& name) const {
  return index_by_name(cohorts, name);
}
std::optional<LocalQueueId> Config::find_local_queue(const std::string& ns,
                                                     const std::string& name) const {
  for (size_t i = 0; i < local_queues.size(); ++i)
    if (local_queues[i].name == name && local_queues[i].namespace_ == ns)
      return static_cast<int32_t>(i);
  for (size_t i = 0; i < local_queues.size(); ++i)
    if (local_queues[i].name == name && local_queues[i].namespace_ == "*")
      return static_cast<int32_t>(i);
  return std::nullopt;
}
const PriorityClass* Config::find_priority_class(const std::string& name) const {
  auto i = index_by_name(priority_classes, name);
  return i ? &priority_classes[*i] : nullptr;
}
const Budget* Config::find_budget(const std::string& ns) const {
  for (const auto& b : budgets)
    if (b.namespace_ == ns) return &b;
  return nullptr;
}

int64_t Budget::weight_milli(const std::string& model) const {
  for (const auto& [m, w] : weights_milli)
    if (m == model) return w;
  return default_weight_milli;
}

}  // namespace sluice
