#pragma once
// Right-sizing in the simulator (SimOptions::right_size; docs/simulator.md, "Right-sizing"):
// the server's policy (core/model/right_size.h) on trace jobs whose GPU memory comes from a
// documented model, since the traces carry none.
//
// The model. A job family (TraceJob::family: the runs of one recurring job) has a typical peak
// per GPU drawn from a log-normal distribution, median 35 GiB and sigma 1, capped at the
// cluster's largest GPU (an 80 GiB GPU: 55% of families peak at 40 GiB or less, the share that
// Cankur et al., "Characterizing Production GPU Workloads using System-wide Telemetry Data",
// arXiv:2502.18680, 2025, report for the jobs that requested 80 GB GPUs on Perlmutter; the
// spread is our assumption). Each run peaks at its family's peak times a factor uniform in
// [0.9, 1.1]. Draws hash the family name (and the run's trace index) with the seed: the same
// job gets the same memory in every variant of a configuration.
//
// The policy. A job is right-sized when its family has a history (earlier runs of it that
// completed: their largest peak) and a smaller shape fits that peak plus headroom. A run
// whose own peak exceeds its shape runs out of memory 60 s into the run (or at its end, if
// shorter) and is submitted again whole, as requested; its wait then counts to the whole
// run's start.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/config.h"
#include "core/model/right_size.h"
#include "sim/trace.h"

namespace sluice::sim {

// The model's peak (MiB per GPU) of a family and of one run of it; gpu_mib: the largest GPU.
int64_t family_peak_mib(const std::string& family, uint64_t seed, int64_t gpu_mib);
int64_t run_peak_mib(int64_t family_peak, uint64_t index, uint64_t seed, int64_t gpu_mib);

class RightSizer {
 public:
  RightSizer(const Config& config, const std::vector<TraceJob>& jobs, double headroom,
             uint64_t seed);
  // Trace job `i` as it is submitted (`job`: as the trace has it, in ClusterQueue `queue`):
  // right-sized when its family has a history and a smaller shape fits.
  Job submit(size_t i, const Job& job, QueueId queue);
  bool right_sized(size_t i) const { return shape_mib_[i] > 0; }
  // Whether a run of trace job `i` runs out of memory (right-sized and peaking above it).
  bool runs_out(size_t i) const { return right_sized(i) && peak_[i] > shape_mib_[i]; }
  // Whole GPUs of a right-sized job's slice, in milli-GPU per pod (a slice counts its share of
  // the GPU's compute); -1: as requested.
  int64_t slice_milli(size_t i) const { return slice_milli_[i]; }
  // Trace job `i` completed: its peak joins its family's history.
  void completed(size_t i);
  // Trace job `i` ran out of memory: it runs as requested from now on.
  void retried(size_t i) {
    shape_mib_[i] = 0;
    slice_milli_[i] = -1;
  }

 private:
  const Config& config_;
  const std::vector<TraceJob>& jobs_;
  double headroom_;
  std::vector<GpuShape> shapes_;
  std::vector<int64_t> peak_;         // per trace job: its run's peak, MiB per GPU
  std::vector<int64_t> shape_mib_;    // per trace job: its shape's memory; 0: as requested
  std::vector<int64_t> slice_milli_;  // per trace job: slice_milli()
  std::unordered_map<std::string, int64_t> history_;  // family -> largest completed peak
};

}  // namespace sluice::sim
