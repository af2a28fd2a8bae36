#include "sim/trace_synthetic.h"

#include <numbers>

namespace sluice::sim {

TraceOutput generate_synthetic(const SyntheticOptions& o, const Config& config, Rng& rng) {
  TraceOutput out;
  const std::string where = "synthetic";
  if (config.local_queues.empty()) out.errors.push_back(where + ": the config has no LocalQueue");
  if (o.jobs < 0 || o.jobs > 10'000'000) out.errors.push_back(where + ": jobs must be 0..1e7");
  if (!(o.arrival_rate_per_s > 0)) out.errors.push_back(where + ": arrival rate must be > 0");
  if (!(o.diurnal_amplitude >= 0 && o.diurnal_amplitude < 1))
    out.errors.push_back(where + ": diurnal amplitude must be in [0, 1)");
  if (!(o.min_duration_s > 0 && o.min_duration_s <= o.max_duration_s))
    out.errors.push_back(where + ": durations need 0 < min <= max");
  if (o.large_gang_gpus < 1) out.errors.push_back(where + ": large gang GPUs must be >= 1");
  if (!out.errors.empty()) return out;

  constexpr double kDay = 86400;
  const double peak = o.arrival_rate_per_s * (1 + o.diurnal_amplitude);
  double t = 0;
  out.jobs.reserve(static_cast<size_t>(o.jobs));
  for (int64_t i = 0; i < o.jobs; ++i) {
    // 1. Arrival: thinning of a Poisson process at the peak rate. Acceptance is at least
    //    (1 - A) / (1 + A) > 0; the bound only guards against a pathological generator.
    for (int tries = 0; tries < 1'000'000; ++tries) {
      t += rng.exponential(peak);
      const double rate = o.arrival_rate_per_s *
                          (1 + o.diurnal_amplitude * std::sin(2 * std::numbers::pi * t / kDay));
      if (rng.uniform() * peak < rate) break;
    }
    // 2. Team, size, run time, class.
    const auto& lq = config.local_queues[rng.below(config.local_queues.size())];
    int32_t gpus = 1;
    if (rng.uniform() < o.large_gang_fraction) {
      gpus = o.large_gang_gpus;
    } else {
      const double u = rng.uniform();
      gpus = u < 0.70 ? 1 : u < 0.80 ? 2 : u < 0.95 ? 4 : 8;
    }
    const double dur_s = rng.log_uniform(o.min_duration_s, o.max_duration_s);
    const bool high = rng.uniform() < o.high_priority_fraction;
    const bool preemptible = rng.uniform() < o.preemptible_fraction;

    TraceJob tj;
    tj.where = where + ":" + std::to_string(i + 1);
    Job& j = tj.job;
    j.id = static_cast<JobId>(i + 1);
    j.name = "syn-" + std::to_string(i + 1);
    j.namespace_ = lq.namespace_ == "*" ? "default" : lq.namespace_;
    j.queue = lq.name;
    j.exec_mut().priority_class = high ? "high" : "low";
    j.preemptible = preemptible;
    j.submit_ns = static_cast<TimeNs>(std::llround(t * 1e9));
    tj.duration_ns = static_cast<TimeNs>(std::llround(dur_s * 1e9));
    j.walltime_ns = tj.duration_ns;
    set_gpu_shape(j, gpus, o.gpus_per_node);
    out.jobs.push_back(std::move(tj));
    ++out.rows;
  }
  return out;
}

}  // namespace sluice::sim
