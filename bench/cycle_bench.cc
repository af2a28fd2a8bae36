// The scheduling-cycle benchmark of issue 2 (not a test): prints figures, with a naive
// first-fit scheduler run in the same process as the baseline.
//
//   build/cycle_bench [--jobs 100000] [--nodes 5000] [--seed 42] [--ordering kueue]
//                     [--what-if 0]
//
// Figures: full-cycle decisions/s over the whole backlog (one decision per pending job:
// admitted with a placement, or a pending reason), admissions/s, the latency of an
// incremental cycle when 100 jobs arrive into the backlog, heap bytes per pending job, and a
// digest of the decisions (equal digests: the same decisions). The second cycle is also run as
// a full one on the same state (a what-if): the incremental cycle must admit exactly what it
// admits, and the digest over both full cycles does not depend on whether the second cycle was
// incremental (an incremental cycle lists only the jobs it looked at as pending). `--what-if 0`
// leaves that out, so that callgrind's count of run_cycle covers the two cycles alone.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "bench_world.h"
#include "core/cycle/scheduler.h"

using namespace sluice;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this thread: on a shared machine wall time also measures the wait for a core.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// What a cycle decided, as one number: two runs made the same decisions when they print the
// same (a change that is meant to be only faster keeps it).
uint64_t digest(const CycleResult& r, uint64_t h) {
  auto add = [&h](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
  };
  for (const Admission& a : r.admitted) {
    add(a.job);
    for (const PodPlacement& pod : a.placement.pods) {
      add(static_cast<uint64_t>(pod.node));
      for (const GpuShare& g : pod.gpus)
        add(static_cast<uint64_t>(g.gpu) << 32 ^ static_cast<uint64_t>(g.milli));
    }
  }
  add(r.pending.size());
  return h;
}

size_t heap_in_use() {
  return mallinfo2().uordblks;
}
// The same plus the blocks malloc mapped on their own (hblkhd: arrays over its mmap threshold,
// such as a hash table's buckets), which uordblks leaves out.
size_t heap_and_mapped() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Baseline: FIFO first fit by linear scan over nodes, whole GPUs per pod, no quota, no
// topology. What a simple scheduler does.
size_t naive_cycle(const Config& c, const std::vector<Job>& jobs) {
  std::vector<int> free_gpus(c.cluster.nodes.size(), 8);
  std::vector<int> trial;
  size_t admitted = 0;
  for (const auto& j : jobs) {
    const auto& ps = j.pod_sets[0];
    trial = free_gpus;
    int placed = 0;
    for (int p = 0; p < ps.count; ++p)
      for (size_t n = 0; n < trial.size(); ++n)
        if (trial[n] >= ps.gpus) {
          trial[n] -= ps.gpus;
          ++placed;
          break;
        }
    if (placed == ps.count) {
      free_gpus.swap(trial);
      ++admitted;
    }
  }
  return admitted;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 100'000, nodes = 5000;
  uint64_t seed = 42;
  bool kueue = false;  // --ordering kueue: Kueue's cycle (docs/scheduling.md, "Ordering")
  bool what_if = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ordering")) kueue = !std::strcmp(argv[i + 1], "kueue");
    if (!std::strcmp(argv[i], "--what-if")) what_if = std::strcmp(argv[i + 1], "0") != 0;
  }
  auto config = bench::make_world(nodes);
  if (kueue) config->policy.ordering = OrderingMode::kKueue;
  std::mt19937_64 rng(seed);
  std::vector<Job> stream;
  stream.reserve(jobs + 100);
  for (int i = 0; i < jobs + 100; ++i)
    stream.push_back(bench::make_bench_job(i + 1, rng, 20, static_cast<TimeNs>(i) * 1'000'000));

  Scheduler s(config);
  const size_t heap0 = heap_in_use(), mapped0 = heap_and_mapped();
  for (int i = 0; i < jobs; ++i) s.submit(stream[i]);
  const size_t heap1 = heap_in_use(), mapped1 = heap_and_mapped();
  const TimeNs now = static_cast<TimeNs>(jobs) * 1'000'000;

  auto t0 = Clock::now();
  double c0 = cpu_ms();
  CycleResult full = s.run_cycle(now);
  const double full_ms = ms_since(t0);
  const double full_cpu_ms = cpu_ms() - c0;
  const size_t decided = full.admitted.size() + full.pending.size();
  s.apply(full, now);

  for (int i = jobs; i < jobs + 100; ++i) s.submit(stream[i]);
  t0 = Clock::now();
  c0 = cpu_ms();
  CycleResult inc = s.run_cycle(now + kNsPerSec);
  const double inc_ms = ms_since(t0);
  const double inc_cpu_ms = cpu_ms() - c0;
  const CycleResult inc_full =
      what_if ? s.run_cycle(now + kNsPerSec, Scheduler::CycleMode::kFull) : inc;

  std::vector<Job> backlog(stream.begin(), stream.begin() + jobs);
  t0 = Clock::now();
  const size_t naive_admitted = naive_cycle(*config, backlog);
  const double naive_ms = ms_since(t0);

  std::printf(
      "cluster: %d nodes x 8 GPUs, 20 ClusterQueues in 4 cohorts, %d pending jobs (%s order)\n",
      nodes, jobs, kueue ? "Kueue's" : "sluice's");
  std::printf(
      "full cycle:        %.1f ms, %.1f ms CPU, %zu decisions (%zu admitted, %zu pending)\n",
      full_ms, full_cpu_ms, decided, full.admitted.size(), full.pending.size());
  std::printf("  decisions/s:     %.0f\n", decided / (full_ms / 1000));
  std::printf("  admissions/s:    %.0f\n", full.admitted.size() / (full_ms / 1000));
  std::printf("  evaluated:       %lld jobs (quota + placement computed)\n",
              static_cast<long long>(full.evaluated));
  std::printf(
      "incremental cycle: %.2f ms, %.2f ms CPU (100 arrivals into the backlog; %zu admitted, "
      "%lld evaluated)\n",
      inc_ms, inc_cpu_ms, inc.admitted.size(), static_cast<long long>(inc.evaluated));
  if (what_if)
    std::printf("  same as full:    %s (the second cycle run full admits %zu)\n",
                inc.admitted == inc_full.admitted ? "yes" : "NO", inc_full.admitted.size());
  std::printf("memory:            %.0f bytes per pending job (heap)\n",
              static_cast<double>(heap1 - heap0) / jobs);
  std::printf("                   %.0f bytes per pending job with mapped blocks\n",
              static_cast<double>(mapped1 - mapped0) / jobs);
  std::printf(
      "baseline (naive first-fit linear scan, no quota/topology): %.1f ms, %zu admitted "
      "-> sluice full cycle is %.2fx its speed\n",
      naive_ms, naive_admitted, naive_ms / full_ms);
  std::printf("decisions digest:  %016llx (full and incremental cycle)\n",
              static_cast<unsigned long long>(digest(inc, digest(full, 0xcbf29ce484222325ULL))));
  if (what_if)
    std::printf(
        "full-cycle digest: %016llx (full cycle, and the second cycle run full)\n",
        static_cast<unsigned long long>(digest(inc_full, digest(full, 0xcbf29ce484222325ULL))));
  std::string why;
  if (inc.admitted != inc_full.admitted) {
    std::printf("INCREMENTAL CYCLE DIFFERS FROM A FULL ONE\n");
    return 1;
  }
  if (!s.check_invariants(&why)) {
    std::printf("INVARIANT BROKEN: %s\n", why.c_str());
    return 1;
  }
  return 0;
}
