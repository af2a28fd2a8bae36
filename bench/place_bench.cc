// Placement micro-benchmarks on a large cluster: 5,000 nodes x 8 GPUs, 32 nodes per rack, 8 racks
// per block; half the nodes have one 8-GPU NVLink domain, half two of 4. Target: >= 100,000
// place() decisions/s on one core across a realistic pending mix (BM_PendingMix).
#include <benchmark/benchmark.h>

#include <random>

#include "core/place/cluster_alloc.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"

namespace sluice {
namespace {

constexpr int kNodes = 5000;

const Cluster& big_cluster() {
  static const Cluster c = [] {
    Cluster c;
    c.levels = {"block", "rack"};
    for (int n = 0; n < kNodes; ++n) {
      Node node;
      node.name = "node-" + std::to_string(n);
      node.cpu_milli = 128000;
      node.memory_mib = 1024 * 1024;
      node.domains = {n / 256, n / 32};
      for (int g = 0; g < 8; ++g) {
        Gpu gpu;
        gpu.model = n % 5 == 0 ? "A100" : "H100";
        gpu.nvlink_domain = n % 2 ? g / 4 : 0;
        gpu.numa_node = g / 4;
        gpu.pcie_switch = g / 2;
        node.gpus.push_back(gpu);
      }
      c.nodes.push_back(std::move(node));
    }
    return c;
  }();
  return c;
}

Job job(JobId id, int pods, int gpus, int milli = 1000) {
  Job j;
  j.id = id;
  PodSet ps;
  ps.count = pods;
  ps.gpus = gpus;
  ps.gpu_milli = milli;
  ps.requests[kCpu] = 4000 * std::max(1, gpus);
  ps.requests[kMemory] = 16384;
  ps.requests[kGpu] = int64_t{gpus} * milli;
  j.pod_sets.push_back(ps);
  return j;
}

// A job of the pending mix: 1-64 GPUs, 10% multi-node gangs, 15% fractional.
Job mixed_job(JobId id, std::mt19937_64& rng) {
  const int r = static_cast<int>(rng() % 100);
  if (r < 15) return job(id, 1, 1, 100 * (1 + static_cast<int>(rng() % 9)));
  if (r < 90) {
    static const int kGpus[] = {1, 1, 1, 2, 2, 4, 4, 8};
    return job(id, 1, kGpus[rng() % 8]);
  }
  Job j = job(id, 2 << (rng() % 3), 8);  // 2, 4 or 8 pods x 8 GPUs (16-64 GPUs)
  j.topology = {1, false};               // preferred: one rack
  return j;
}

// Fills the cluster to about `fill` of its GPUs with the mix.
void load(ClusterAlloc& alloc, const Placer& placer, const NodeSet& all, double fill) {
  std::mt19937_64 rng(42);
  const double target = fill * kNodes * 8 * 1000;
  JobId id = 1'000'000;
  while (static_cast<double>(alloc.gpu_milli_used()) < target) {
    const Job j = mixed_job(id++, rng);
    auto r = placer.place(j, all, alloc);
    if (auto* p = std::get_if<Placement>(&r)) alloc.commit(j, *p);
    if (id > 2'000'000) break;
  }
}

// cap: PlacerOptions::max_candidates (64 for the FGD figures of issue 2; 0, every feasible node
// with node-state grouping, is what the scheduler runs).
void run_shape(benchmark::State& state, const Job& j, double fill, ScoringPolicy pol,
               int32_t cap = 64) {
  const Cluster& c = big_cluster();
  ClusterAlloc alloc(c);
  PlacerOptions opt;
  opt.max_candidates = cap;
  Placer placer(c, pol, opt);
  const NodeSet all = NodeSet::all(c);
  load(alloc, placer, all, fill);
  int64_t ok = 0;
  for (auto _ : state) {
    auto r = placer.place(j, all, alloc);
    ok += std::holds_alternative<Placement>(r);
    benchmark::DoNotOptimize(r);
  }
  state.counters["placed"] = static_cast<double>(ok) / static_cast<double>(state.iterations());
  state.counters["gpu_used_pct"] =
      100.0 * static_cast<double>(alloc.gpu_milli_used()) / (kNodes * 8000.0);
}

void BM_Place1Gpu(benchmark::State& s) {
  run_shape(s, job(1, 1, 1), 0.7, ScoringPolicy::kBinPack);
}
void BM_Place8Gpu(benchmark::State& s) {
  run_shape(s, job(1, 1, 8), 0.7, ScoringPolicy::kBinPack);
}
void BM_PlaceGang64Gpu(benchmark::State& s) {
  run_shape(s, job(1, 8, 8), 0.7, ScoringPolicy::kBinPack);
}
void BM_PlaceGang64GpuRackRequired(benchmark::State& s) {
  Job j = job(1, 8, 8);
  j.topology = {1, true};
  run_shape(s, j, 0.7, ScoringPolicy::kBinPack);
}
void BM_PlaceFractional(benchmark::State& s) {
  run_shape(s, job(1, 1, 1, 300), 0.7, ScoringPolicy::kBinPack);
}
void BM_PlaceFailingWhenFull8Gpu(benchmark::State& s) {
  run_shape(s, job(1, 1, 8), 1.0, ScoringPolicy::kBinPack);
}
void BM_PlaceFailingWhenFullGang(benchmark::State& s) {
  run_shape(s, job(1, 8, 8), 1.0, ScoringPolicy::kBinPack);
}
void BM_Place1GpuFgd(benchmark::State& s) {
  run_shape(s, job(1, 1, 1), 0.7, ScoringPolicy::kFgd);
}
void BM_PlaceFractionalFgd(benchmark::State& s) {
  run_shape(s, job(1, 1, 1, 300), 0.7, ScoringPolicy::kFgd);
}
// The default policy as the scheduler runs it: uncapped.
void BM_Place1GpuFgdPack(benchmark::State& s) {
  run_shape(s, job(1, 1, 1), 0.7, ScoringPolicy::kFgdPack, 0);
}
void BM_Place8GpuFgdPack(benchmark::State& s) {
  run_shape(s, job(1, 1, 8), 0.7, ScoringPolicy::kFgdPack, 0);
}
void BM_PlaceFractionalFgdPack(benchmark::State& s) {
  run_shape(s, job(1, 1, 1, 300), 0.7, ScoringPolicy::kFgdPack, 0);
}

// The cycle's workload: 100,000 pending jobs against a cluster at 60%; each is placed and
// committed when it fits. items/s = place() decisions per second. Args: policy, candidate cap.
void BM_PendingMix(benchmark::State& state) {
  const Cluster& c = big_cluster();
  const auto pol = static_cast<ScoringPolicy>(state.range(0));
  PlacerOptions opt;
  opt.max_candidates = static_cast<int32_t>(state.range(1));
  Placer placer(c, pol, opt);
  const NodeSet all = NodeSet::all(c);
  std::mt19937_64 rng(7);
  std::vector<Job> pending;
  for (JobId id = 1; id <= 100'000; ++id) pending.push_back(mixed_job(id, rng));
  int64_t decisions = 0, placed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterAlloc alloc(c);
    load(alloc, placer, all, 0.6);
    state.ResumeTiming();
    for (const Job& j : pending) {
      auto r = placer.place(j, all, alloc);
      if (auto* p = std::get_if<Placement>(&r)) {
        alloc.commit(j, *p);
        ++placed;
      }
      ++decisions;
    }
  }
  state.SetItemsProcessed(decisions);
  state.counters["placed"] = static_cast<double>(placed) / static_cast<double>(decisions);
}

BENCHMARK(BM_Place1Gpu);
BENCHMARK(BM_Place8Gpu);
BENCHMARK(BM_PlaceGang64Gpu);
BENCHMARK(BM_PlaceGang64GpuRackRequired);
BENCHMARK(BM_PlaceFractional);
BENCHMARK(BM_PlaceFailingWhenFull8Gpu);
BENCHMARK(BM_PlaceFailingWhenFullGang);
BENCHMARK(BM_Place1GpuFgd);
BENCHMARK(BM_PlaceFractionalFgd);
BENCHMARK(BM_Place1GpuFgdPack);
BENCHMARK(BM_Place8GpuFgdPack);
BENCHMARK(BM_PlaceFractionalFgdPack);
BENCHMARK(BM_PendingMix)
    ->Args({static_cast<int>(ScoringPolicy::kBinPack), 64})
    ->Args({static_cast<int>(ScoringPolicy::kFgd), 64})
    ->Args({static_cast<int>(ScoringPolicy::kFgdPack), 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
