#include "core/model/cluster.h"

#include <algorithm>

namespace sluice {

const std::string* find_label(const Labels& labels, const std::string& key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& kv, const std::string& k) { return kv.first < k; });
  if (it == labels.end() || it->first != key) return nullptr;
  return &it->second;
}

int Cluster::level_index(const std::string& name) const {
  if (name == "node") return static_cast<int>(levels.size());
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i] == name) return static_cast<int>(i);
  return -1;
}

int64_t Cluster::total_gpus() const {
  int64_t n = 0;
  for (const auto& node : nodes) n += static_cast<int64_t>(node.gpus.size());
  return n;
}

}  // namespace sluice
