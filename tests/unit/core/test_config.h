#pragma once
// Builders for small configurations in C++ (tests that must not depend on the YAML loader).
#include <memory>
#include <string>

#include "core/model/config.h"

namespace sluice::testing {

// A cluster of `nodes` nodes with `gpus` H100s each, racks of `per_rack` nodes.
inline Cluster make_cluster(int nodes, int gpus, int per_rack = 4) {
  Cluster c;
  c.levels = {"rack"};
  c.domain_names.resize(1);
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.name = "n" + std::to_string(i);
    n.cpu_milli = 128'000;
    n.memory_mib = 1 << 20;
    for (int g = 0; g < gpus; ++g) {
      Gpu gpu;
      gpu.model = "H100";
      gpu.memory_mib = 80 * 1024;
      gpu.nvlink_domain = g / 4;
      gpu.numa_node = g / 4;
      gpu.pcie_switch = g / 2;
      n.gpus.push_back(gpu);
    }
    const int rack = i / per_rack;
    if (rack >= static_cast<int>(c.domain_names[0].size()))
      c.domain_names[0].push_back("rack" + std::to_string(rack));
    n.domains = {rack};
    c.nodes.push_back(n);
  }
  return c;
}

// Adds a ClusterQueue with a GPU quota on flavor 0 and a LocalQueue of the same name in
// namespace "default". Creates flavor "default" and cohort `cohort` when missing.
inline QueueId add_queue(Config& c, const std::string& name, int64_t gpus,
                         std::optional<int64_t> borrowing = std::nullopt,
                         const std::string& cohort = "all",
                         QueueingStrategy strategy = QueueingStrategy::kBestEffortFIFO) {
  if (c.flavors.empty()) c.flavors.push_back({"default", {}, false});
  ClusterQueue q;
  q.name = name;
  q.strategy = strategy;
  if (!cohort.empty()) {
    auto id = c.find_cohort(cohort);
    if (!id) {
      c.cohorts.push_back({cohort, std::nullopt, {}, true});
      id = static_cast<CohortId>(c.cohorts.size() - 1);
    }
    q.cohort = *id;
  }
  ResourceGroup g;
  g.covered = {kGpu};
  FlavorQuotas fq;
  fq.flavor = 0;
  fq.resources.push_back(
      {kGpu, gpus * kMilliPerGpu,
       borrowing ? std::optional<int64_t>(*borrowing * kMilliPerGpu) : std::nullopt, std::nullopt});
  g.flavors.push_back(fq);
  q.resource_groups.push_back(g);
  c.cluster_queues.push_back(q);
  const auto id = static_cast<QueueId>(c.cluster_queues.size() - 1);
  c.local_queues.push_back({name, "default", id, 0});
  return id;
}

inline Job make_job(JobId id, const std::string& queue, int gpus_per_pod, int pods = 1,
                    TimeNs submit_ns = 0, int32_t priority = 0) {
  Job j;
  j.id = id;
  j.name = "job" + std::to_string(id);
  j.namespace_ = "default";
  j.queue = queue;
  j.priority = priority;
  j.submit_ns = submit_ns;
  PodSet ps;
  ps.count = pods;
  ps.gpus = gpus_per_pod;
  ps.gpu_milli = 1000;
  ps.requests[kGpu] = gpus_per_pod * kMilliPerGpu;
  ps.requests[kCpu] = 1000;
  ps.requests[kMemory] = 1024;
  j.pod_sets.push_back(ps);
  return j;
}

}  // namespace sluice::testing
