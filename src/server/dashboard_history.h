#pragma once
// The web dashboard's memory (docs/dashboard.md): the server samples what the dashboard draws
// every few seconds (ServerState::dashboard_sample) and keeps the last `capacity` samples in a
// ring, so that a browser that opens the page sees the last hour "over time", not only now.
// Bounded: capacity samples of a few KB each; old ones fall off. Thread-safe (its own mutex):
// the scheduling loop adds, HTTP handlers read, neither under the state's lock.
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::server {

// One sample as the state gives it: what to draw at `t` (unix seconds), and the admission-wait
// histogram per priority class, cumulative since the start (bucket counts, not cumulative over
// buckets), from which the ring derives the wait p99 of a recent window.
struct DashboardSample {
  double t = 0;
  nlohmann::json data;  // {"classes": {PC: {...}}, "nodes", "queues", "namespaces", ...}
  std::map<std::string, std::vector<uint64_t>> wait_counts;  // priority class -> per bucket
};

// The q-quantile (0 < q <= 1) of observations counted per bucket of `bounds` (upper bounds;
// counts has one more entry, for +Inf), interpolated linearly within its bucket as Prometheus'
// histogram_quantile does; the +Inf bucket answers its lower bound. NaN when there are none.
double histogram_quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                          double q);

class DashboardHistory {
 public:
  // wait_bounds: the admission-wait histogram's bounds; window_s: the waits a sample's p99
  // covers (admissions in the last window_s seconds).
  DashboardHistory(size_t capacity, double interval_s, std::vector<double> wait_bounds,
                   double window_s = 60);

  // Adds a sample (completing data["classes"][pc]["wait_p99_s"]); the oldest goes past
  // capacity.
  void add(DashboardSample s);
  // {"interval_s", "capacity", "window_s", "samples": [data...]}: the samples after `after_t`
  // (0: all), oldest first.
  nlohmann::json since(double after_t) const;
  size_t size() const;
  double interval_s() const { return interval_s_; }

 private:
  const size_t capacity_;
  const double interval_s_;
  const std::vector<double> wait_bounds_;
  const double window_s_;
  mutable std::mutex mu_;
  std::deque<DashboardSample> samples_;
};

}  // namespace sluice::server
