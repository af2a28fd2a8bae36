// The scheduling-cycle benchmark (bench/cycle_bench.cc's world and job stream) under a chosen GPU
// scoring policy, to price a policy before making it the default (issue 4: binpack vs fgdpack).
// Not a test: prints figures.
//
//   build/bench/sim_cycle_policy [--policy binpack|spread|bestfit|fgd|fgdpack|fgdmix] [--jobs
//   100000]
//                                [--nodes 5000] [--seed 42]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_world.h"
#include "core/cycle/scheduler.h"

using namespace sluice;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int jobs = 100'000, nodes = 5000;
  uint64_t seed = 42;
  std::string policy = "binpack";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--policy")) policy = argv[i + 1];
  }
  const std::pair<const char*, ScoringPolicy> kPolicies[] = {
      {"binpack", ScoringPolicy::kBinPack}, {"spread", ScoringPolicy::kSpread},
      {"bestfit", ScoringPolicy::kBestFit}, {"fgd", ScoringPolicy::kFgd},
      {"fgdpack", ScoringPolicy::kFgdPack}, {"fgdmix", ScoringPolicy::kFgdMix}};
  bool known = false;
  auto config = bench::make_world(nodes);
  for (const auto& [name, p] : kPolicies)
    if (policy == name) {
      config->policy.gpu_scoring = p;
      known = true;
    }
  if (!known) {
    std::fprintf(stderr, "unknown --policy %s\n", policy.c_str());
    return 2;
  }
  std::mt19937_64 rng(seed);
  std::vector<Job> stream;
  stream.reserve(static_cast<size_t>(jobs) + 100);
  for (int i = 0; i < jobs + 100; ++i)
    stream.push_back(bench::make_bench_job(i + 1, rng, 20, static_cast<TimeNs>(i) * 1'000'000));
  Scheduler s(config);
  for (int i = 0; i < jobs; ++i) s.submit(stream[static_cast<size_t>(i)]);
  const TimeNs now = static_cast<TimeNs>(jobs) * 1'000'000;
  auto t0 = Clock::now();
  CycleResult full = s.run_cycle(now);
  const double full_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const size_t decided = full.admitted.size() + full.pending.size();
  s.apply(full, now);
  for (int i = jobs; i < jobs + 100; ++i) s.submit(stream[static_cast<size_t>(i)]);
  t0 = Clock::now();
  CycleResult inc = s.run_cycle(now + kNsPerSec);
  const double inc_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("policy %s: %d nodes x 8 GPUs, %d pending jobs\n", policy.c_str(), nodes, jobs);
  std::printf("full cycle:        %.1f ms, %zu decisions (%zu admitted), %.0f decisions/s\n",
              full_ms, decided, full.admitted.size(), decided / (full_ms / 1000));
  std::printf("incremental cycle: %.2f ms (100 arrivals; %zu admitted)\n", inc_ms,
              inc.admitted.size());
  return 0;
}
