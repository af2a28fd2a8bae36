// The configuration `sluice up` writes for itself (up_yaml.h).
#include "cli/up_yaml.h"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <exception>

namespace sluice::cli {

namespace {

// `gpus:` of the node group: the map form for one model (as a Cluster is usually written), a
// list in the agent's order for several, each group its own NVLink domain as the agent makes
// it; nothing for none.
std::string gpus_field(const std::vector<agent::FakeGpuGroup>& gpus) {
  if (gpus.empty()) return "";
  if (gpus.size() == 1)
    return "    gpus: {count: " + std::to_string(gpus[0].count) + ", model: " + gpus[0].model +
           "}\n";
  std::string out = "    gpus:\n";
  for (size_t i = 0; i < gpus.size(); ++i)
    out += "    - {count: " + std::to_string(gpus[i].count) + ", model: " + gpus[i].model +
           ", nvlinkDomain: " + std::to_string(i) + "}\n";
  return out;
}

}  // namespace

Result<std::vector<agent::FakeGpuGroup>> local_gpus(const std::string& gpus_spec) {
  if (gpus_spec.rfind("fake:", 0) == 0) {
    auto groups = agent::parse_fake_spec(std::string_view(gpus_spec).substr(5));
    if (!groups) return Error{"--gpus: " + groups.error()};
    return *groups;
  }
  if (gpus_spec == "none") return std::vector<agent::FakeGpuGroup>{};
  return std::vector<agent::FakeGpuGroup>{{.count = 8, .model = "H100"}};
}

namespace {

bool label_name(std::string_view s) {  // [A-Za-z0-9._-], at most 63, alphanumeric at both ends
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

bool label_key(std::string_view k) {
  const auto slash = k.find('/');
  if (slash == std::string_view::npos) return label_name(k);
  const std::string_view prefix = k.substr(0, slash);
  const bool prefix_ok = !prefix.empty() && prefix.size() <= 253 &&
                         std::all_of(prefix.begin(), prefix.end(), [](char c) {
                           return std::islower(static_cast<unsigned char>(c)) ||
                                  std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
                                  c == '-';
                         });
  return prefix_ok && label_name(k.substr(slash + 1));
}

std::string labels_field(const NodeLabels& labels) {
  if (labels.empty()) return {};
  std::string out = "    labels: {";
  for (size_t i = 0; i < labels.size(); ++i)  // JSON strings: valid YAML, whatever the text
    out += (i ? ", " : "") + nlohmann::json(labels[i].first).dump() + ": " +
           nlohmann::json(labels[i].second).dump();
  return out + "}\n";
}

}  // namespace

Result<NodeLabels> parse_node_labels(const std::vector<std::string>& specs) {
  NodeLabels out;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    const std::string key = spec.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
    if (eq == std::string::npos || !label_key(key) || (!value.empty() && !label_name(value)))
      return Error{"--node-label " + nlohmann::json(spec).dump() +
                   ": expected KEY=VALUE as a Kubernetes label (gpu.example.com/class=a, "
                   "zone=z1)"};
    out.emplace_back(key, value);
  }
  return out;
}

std::string local_cluster_doc(int nodes, const std::vector<agent::FakeGpuGroup>& gpus,
                              const NodeLabels& labels) {
  return "apiVersion: sluice.dev/v1alpha1\nkind: Cluster\nmetadata: {name: local}\nspec:\n"
         "  nodeGroups:\n  - namePrefix: local-\n    count: " +
         std::to_string(nodes) + "\n    cpu: 16\n    memory: 64Gi\n" + labels_field(labels) +
         gpus_field(gpus);
}

std::string local_cluster_yaml(int nodes, const std::vector<agent::FakeGpuGroup>& gpus,
                               const NodeLabels& labels) {
  int64_t gpus_per_node = 0;
  for (const auto& g : gpus) gpus_per_node += g.count;
  return local_cluster_doc(nodes, gpus, labels) +
         "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: "
         "{name: default}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
         "metadata: {name: default}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n"
         "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n    flavors:\n    - name: default\n"
         "      resources:\n      - {name: nvidia.com/gpu, nominalQuota: " +
         std::to_string(gpus_per_node * nodes) +
         "}\n      - {name: cpu, nominalQuota: " + std::to_string(16 * nodes) +
         "}\n      - {name: memory, nominalQuota: " + std::to_string(64 * nodes) +
         "Gi}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
         "metadata: {name: default, namespace: default}\nspec: {clusterQueue: default}\n";
}

bool has_cluster_doc(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    try {
      for (const auto& doc : YAML::LoadAllFromFile(f))
        if (doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() &&
            doc["kind"].Scalar() == "Cluster")
          return true;
    } catch (const std::exception&) {
      return true;
    }
  }
  return false;
}

}  // namespace sluice::cli
