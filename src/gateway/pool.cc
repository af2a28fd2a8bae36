// A pool's choice of backend and the inputs of its replica estimate (/v1/scale).
#include <cmath>

#include "gateway/proxy.h"

namespace sluice::gateway {

int Pool::healthy_backends() const {
  int n = 0;
  for (const auto& b : backends) n += b->healthy ? 1 : 0;
  return n;
}

Backend* Pool::pick() {
  Backend* best = nullptr;
  const std::size_t n = backends.size();
  for (std::size_t k = 0; k < n; ++k) {
    Backend* b = backends[(rr + k) % n].get();
    if (!b->healthy || b->in_flight >= cfg.max_in_flight) continue;
    if (!best || b->in_flight < best->in_flight) best = b;
  }
  if (best) ++rr;
  return best;
}

void Pool::note_arrival(std::int64_t now_s) {
  auto slot = static_cast<std::size_t>(now_s % kRateWindowS);
  if (rate_sec[slot] != now_s) {
    rate_sec[slot] = now_s;
    rate_count[slot] = 0;
  }
  ++rate_count[slot];
}

double Pool::offered_rate(std::int64_t now_s) const {
  std::uint64_t total = 0;
  for (int i = 0; i < kRateWindowS; ++i) {
    if (rate_sec[i] > now_s - kRateWindowS && rate_sec[i] <= now_s) total += rate_count[i];
  }
  return static_cast<double>(total) / kRateWindowS;
}

// Replicas needed so that the offered rate is served (Little's law: concurrency = rate x
// latency) and the current queue drains within one queue timeout.
int Pool::desired_replicas(std::int64_t now_s) const {
  double w = upstream_ewma_s;
  if (w <= 0.0) return static_cast<int>(backends.size());
  double needed =
      offered_rate(now_s) * w + queued * w / (static_cast<double>(cfg.queue_timeout_ms) / 1000.0);
  int r = static_cast<int>(std::ceil(needed / cfg.max_in_flight - 1e-9));
  return std::max(r, queued + in_flight > 0 ? 1 : 0);
}

}  // namespace sluice::gateway
