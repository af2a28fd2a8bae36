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
std::optional<LocalQueueId> Config::local_queue_of(const Job& job) const {
  const auto i = static_cast<size_t>(job.local_queue);
  // An exact (namespace, name) match is what find_local_queue finds first; a "*" queue could
  // have been shadowed by a namespace's own queue of that name added since.
  if (job.local_queue >= 0 && i < local_queues.size() && local_queues[i].name == job.queue &&
      local_queues[i].namespace_ == job.namespace_)
    return job.local_queue;
  return find_local_queue(job.namespace_, job.queue);
}

std::vector<std::string> Config::local_queue_names(const std::string& ns) const {
  std::vector<std::string> out;
  for (const auto& q : local_queues)
    if (q.namespace_ == ns || q.namespace_ == "*") out.push_back(q.name);
  return out;
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
