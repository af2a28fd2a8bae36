#pragma once
// A seeded synthetic workload for scale tests: teams (the configuration's LocalQueues), Poisson
// arrivals whose rate swings over a day (diurnal bursts), GPU counts 1/2/4/8 at 70/10/15/5% plus
// an optional share of large gangs, log-uniform run times, and a mix of priority classes and
// preemptible jobs. Same options and generator state -> the same jobs.
#include <cstdint>
#include <string>

#include "core/model/config.h"
#include "sim/rng.h"
#include "sim/trace.h"

namespace sluice::sim {

struct SyntheticOptions {
  int64_t jobs = 10000;
  double arrival_rate_per_s = 0.1;  // mean over a day
  double diurnal_amplitude = 0.5;   // rate(t) = mean * (1 + A * sin(2 pi t / 1 day)), A in [0, 1)
  double min_duration_s = 60;
  double max_duration_s = 8 * 3600;
  double large_gang_fraction = 0;  // share of jobs that are large gangs
  int32_t large_gang_gpus = 64;
  double high_priority_fraction = 0.2;  // class `high`; the rest `low`
  double preemptible_fraction = 0.5;
  int32_t gpus_per_node = 8;
};

// Draws from `rng` (the run's one seeded generator). Teams are the configuration's LocalQueues
// (namespace "*" becomes "default"), drawn uniformly. Sizes of the mix: 1 GPU 70%, 2 GPUs 10%, 4
// GPUs 15%, 8 GPUs 5% of the jobs that are not large gangs. Errors: no LocalQueue, or options out
// of range (then no jobs).
TraceOutput generate_synthetic(const SyntheticOptions& options, const Config& config, Rng& rng);

}  // namespace sluice::sim
