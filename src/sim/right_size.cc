// Right-sizing in the simulator: the memory model and the history (sim/right_size.h).
#include "sim/right_size.h"

#include <algorithm>
#include <cmath>

#include "core/model/splitmix.h"

namespace sluice::sim {

namespace {

constexpr double kGi = 1024.0;
constexpr double kMedianMib = 35 * kGi;  // P(peak <= 40 GiB) = 0.55 with sigma 1
constexpr double kSigma = 1.0;

uint64_t fnv(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Uniform in (0, 1) from a 64-bit value.
double unit(uint64_t x) {
  return (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53;
}

}  // namespace

int64_t family_peak_mib(const std::string& family, uint64_t seed, int64_t gpu_mib) {
  const uint64_t a = splitmix64(fnv(family) ^ seed);
  const double z = std::sqrt(-2 * std::log(unit(a))) * std::cos(2 * M_PI * unit(splitmix64(a)));
  const double mib = kMedianMib * std::exp(kSigma * z);
  return std::clamp<int64_t>(static_cast<int64_t>(mib), 512, gpu_mib);
}

int64_t run_peak_mib(int64_t family_peak, uint64_t index, uint64_t seed, int64_t gpu_mib) {
  const double f = 0.9 + 0.2 * unit(splitmix64(index ^ splitmix64(seed)));
  return std::min<int64_t>(static_cast<int64_t>(static_cast<double>(family_peak) * f), gpu_mib);
}

RightSizer::RightSizer(const Config& config, const std::vector<TraceJob>& jobs, double headroom,
                       uint64_t seed)
    : config_(config), jobs_(jobs), headroom_(headroom), shapes_(cluster_shapes(config)) {
  int64_t gpu_mib = 0;
  for (const GpuShape& s : shapes_)
    if (!s.mig) gpu_mib = std::max(gpu_mib, s.memory_mib);
  peak_.resize(jobs.size());
  shape_mib_.assign(jobs.size(), 0);
  slice_milli_.assign(jobs.size(), -1);
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!jobs[i].family.empty())
      peak_[i] = run_peak_mib(family_peak_mib(jobs[i].family, seed, gpu_mib), i, seed, gpu_mib);
}

Job RightSizer::submit(size_t i, const Job& job, QueueId queue) {
  const auto h = history_.find(jobs_[i].family);
  if (jobs_[i].family.empty() || h == history_.end()) return job;
  const auto shape =
      right_size_shape(job, shapes_, h->second, headroom_, covered_mig_profiles(config_, queue));
  if (!shape) return job;
  ResourceId mig = 0;
  if (shape->mig) {
    const auto id = config_.resources.find(std::string(kMigPrefix) + shape->name);
    if (!id) return job;
    mig = *id;
    slice_milli_[i] = kMilliPerGpu * shape->compute_slices / 7;
  }
  shape_mib_[i] = shape->memory_mib;
  return sluice::right_sized(job, *shape, mig);
}

void RightSizer::completed(size_t i) {
  if (jobs_[i].family.empty()) return;
  auto [it, fresh] = history_.try_emplace(jobs_[i].family, peak_[i]);
  if (!fresh) it->second = std::max(it->second, peak_[i]);
}

}  // namespace sluice::sim
