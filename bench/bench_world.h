#pragma once
// The benchmark world of issue 2: 5,000 nodes x 8 GPUs in racks and NVLink domains, 20
// ClusterQueues in 4 cohorts, and a seeded stream of jobs (1-64 GPUs, 10% multi-node gangs,
// some fractional).
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/model/config.h"

namespace sluice::bench {

inline std::shared_ptr<Config> make_world(int nodes = 5000, int queues = 20, int cohorts = 4) {
  auto c = std::make_shared<Config>();
  Cluster& cl = c->cluster;
  cl.levels = {"block", "rack"};
  cl.domain_names.resize(2);
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.name = "node-" + std::to_string(i);
    n.cpu_milli = 192'000;
    n.memory_mib = 2 << 20;
    for (int g = 0; g < 8; ++g) {
      Gpu gpu;
      gpu.model = i % 5 == 0 ? "A100" : "H100";
      gpu.memory_mib = 80 * 1024;
      gpu.nvlink_domain = g / 4;
      gpu.numa_node = g / 4;
      gpu.pcie_switch = g / 2;
      n.gpus.push_back(gpu);
    }
    const int rack = i / 16, block = rack / 8;
    if (rack >= static_cast<int>(cl.domain_names[1].size()))
      cl.domain_names[1].push_back("rack-" + std::to_string(rack));
    if (block >= static_cast<int>(cl.domain_names[0].size()))
      cl.domain_names[0].push_back("block-" + std::to_string(block));
    n.domains = {block, rack};
    cl.nodes.push_back(std::move(n));
  }
  c->flavors.push_back({"gpu", {}, false});
  for (int k = 0; k < cohorts; ++k)
    c->cohorts.push_back({"cohort-" + std::to_string(k), {}, {}, false});
  const int64_t per_queue = static_cast<int64_t>(nodes) * 8 * 1000 / queues;
  for (int q = 0; q < queues; ++q) {
    ClusterQueue cq;
    cq.name = "team-" + std::to_string(q);
    cq.cohort = q % cohorts;
    ResourceGroup g;
    g.covered = {kGpu, kCpu, kMemory};
    FlavorQuotas fq;
    fq.flavor = 0;
    fq.resources = {{kGpu, per_queue, std::nullopt, std::nullopt},
                    {kCpu, per_queue * 24, std::nullopt, std::nullopt},
                    {kMemory, per_queue * 256, std::nullopt, std::nullopt}};
    g.flavors.push_back(fq);
    cq.resource_groups.push_back(g);
    c->cluster_queues.push_back(cq);
    c->local_queues.push_back({cq.name, "default", q, 0});
  }
  c->priority_classes = {{"low", 100}, {"normal", 500}, {"high", 1000}};
  return c;
}

// Job i of a seeded stream: 1/2/4/8 GPUs at 55/15/10/10%, 10% multi-node gangs of 2-8 pods x
// 8 GPUs, and a quarter of the 1-GPU jobs fractional.
inline Job make_bench_job(JobId id, std::mt19937_64& rng, int queues, TimeNs submit_ns) {
  Job j;
  j.id = id;
  j.name = "job-" + std::to_string(id);
  j.namespace_ = "default";
  j.queue = "team-" + std::to_string(rng() % queues);
  static const int32_t prios[] = {100, 500, 1000};
  j.priority = prios[rng() % 3];
  j.submit_ns = submit_ns;
  PodSet ps;
  const int roll = static_cast<int>(rng() % 100);
  int pods = 1, gpus = 1, milli = 1000;
  if (roll < 55) {
    gpus = 1;
    if (rng() % 4 == 0) milli = 250 * static_cast<int>(1 + rng() % 3);
  } else if (roll < 70) {
    gpus = 2;
  } else if (roll < 80) {
    gpus = 4;
  } else if (roll < 90) {
    gpus = 8;
  } else {
    gpus = 8;
    pods = 2 + static_cast<int>(rng() % 7);
    j.topology = {1, false};  // prefer one rack
  }
  ps.count = pods;
  ps.gpus = gpus;
  ps.gpu_milli = milli;
  ps.requests[kGpu] = static_cast<int64_t>(gpus) * milli;
  ps.requests[kCpu] = 8000LL * gpus;
  ps.requests[kMemory] = 32LL * 1024 * gpus;
  j.pod_sets.push_back(ps);
  return j;
}

}  // namespace sluice::bench
