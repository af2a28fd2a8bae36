// The configuration `sluice up` writes for itself (up_yaml.h).
#include "cli/up_yaml.h"

#include <yaml-cpp/yaml.h>

#include <exception>

namespace sluice::cli {

namespace {

struct LocalGpus {
  int count = 8;
  std::string model = "H100";
};

// What the local agents will report (fake:COUNTxMODEL only).
LocalGpus local_gpus(const std::string& gpus_spec) {
  LocalGpus g;
  if (gpus_spec.rfind("fake:", 0) == 0) {
    const std::string s = gpus_spec.substr(5);
    const auto x = s.find('x');
    if (x != std::string::npos) {
      try {
        g.count = std::stoi(s.substr(0, x));
      } catch (...) {
      }
      g.model = s.substr(x + 1);
      g.model = g.model.substr(0, g.model.find_first_of(":,"));
    }
  }
  return g;
}

}  // namespace

std::string local_cluster_doc(int nodes, const std::string& gpus_spec) {
  const LocalGpus g = local_gpus(gpus_spec);
  return "apiVersion: sluice.dev/v1alpha1\nkind: Cluster\nmetadata: {name: local}\nspec:\n"
         "  nodeGroups:\n  - namePrefix: local-\n    count: " +
         std::to_string(nodes) +
         "\n    cpu: 16\n    memory: 64Gi\n    gpus: {count: " + std::to_string(g.count) +
         ", model: " + g.model + "}\n";
}

std::string local_cluster_yaml(int nodes, const std::string& gpus_spec) {
  const LocalGpus g = local_gpus(gpus_spec);
  return local_cluster_doc(nodes, gpus_spec) +
         "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: "
         "{name: default}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
         "metadata: {name: default}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n"
         "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n    flavors:\n    - name: default\n"
         "      resources:\n      - {name: nvidia.com/gpu, nominalQuota: " +
         std::to_string(g.count * nodes) +
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
