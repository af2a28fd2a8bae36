#pragma once
// Small hand-made clusters and jobs for the placement tests (no YAML loader involved).
#include <string>
#include <variant>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/job.h"
#include "core/place/cluster_alloc.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"

namespace sluice::testing {

// A node with `gpus` GPUs of `model`, `nvlink_domains` NVLink domains of equal size.
inline Node make_node(std::string name, int gpus, std::string model = "H100",
                      int64_t cpu_milli = 64000, int64_t memory_mib = 512 * 1024,
                      std::vector<int32_t> domains = {}, int nvlink_domains = 1) {
  Node n;
  n.name = std::move(name);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  n.domains = std::move(domains);
  for (int g = 0; g < gpus; ++g) {
    Gpu gpu;
    gpu.model = model;
    gpu.memory_mib = 80 * 1024;
    gpu.nvlink_domain = nvlink_domains > 0 ? g / std::max(1, gpus / nvlink_domains) : g;
    gpu.numa_node = gpu.nvlink_domain;
    gpu.pcie_switch = g / 2;
    n.gpus.push_back(gpu);
  }
  return n;
}

inline Job make_job(JobId id, int32_t pods, int32_t gpus, int32_t gpu_milli = 1000,
                    int64_t cpu_milli = 1000, int64_t memory_mib = 1024) {
  Job j;
  j.id = id;
  j.name = "job-" + std::to_string(id);
  PodSet ps;
  ps.count = pods;
  ps.gpus = gpus;
  ps.gpu_milli = gpu_milli;
  ps.requests[kCpu] = cpu_milli;
  ps.requests[kMemory] = memory_mib;
  ps.requests[kGpu] = int64_t{gpus} * gpu_milli;
  j.pod_sets.push_back(ps);
  return j;
}

// 2 blocks x 2 racks x 2 nodes of `gpus` H100s: node n is in block n/4 and rack n/2.
inline Cluster block_rack_cluster(int gpus) {
  Cluster c;
  c.levels = {"block", "rack"};
  c.domain_names = {{"block-0", "block-1"}, {"rack-0", "rack-1", "rack-2", "rack-3"}};
  for (int n = 0; n < 8; ++n)
    c.nodes.push_back(
        make_node("n" + std::to_string(n), gpus, "H100", 64000, 512 * 1024, {n / 4, n / 2}));
  return c;
}

using PlaceResult = std::variant<Placement, PlaceFailure>;
inline bool placed(const PlaceResult& r) {
  return std::holds_alternative<Placement>(r);
}
inline const Placement& placement(const PlaceResult& r) {
  return std::get<Placement>(r);
}
inline const PlaceFailure& failure(const PlaceResult& r) {
  return std::get<PlaceFailure>(r);
}
inline NodeId node_of(const PlaceResult& r, size_t pod = 0) {
  return placement(r).pods.at(pod).node;
}

}  // namespace sluice::testing
