#pragma once
// Prometheus text exposition (format 0.0.4), written by hand: counters, gauges and cumulative
// histograms with fixed buckets. Values are integers (counts, nanoseconds) until rendering.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::gateway {

// Latency histogram with fixed bucket bounds from 0.5 ms to 60 s.
class Histogram {
 public:
  static constexpr std::array<double, 16> kBoundsSeconds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,   0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};

  void observe_ns(std::int64_t ns);
  std::uint64_t count() const { return count_; }
  std::int64_t sum_ns() const { return sum_ns_; }
  // Non-cumulative count of bucket i; index kBoundsSeconds.size() is the +Inf overflow.
  std::uint64_t bucket(std::size_t i) const { return buckets_[i]; }
  // Upper bound (seconds) of the bucket holding quantile q, a coarse estimate.
  double quantile_upper_bound(double q) const;

 private:
  std::array<std::uint64_t, kBoundsSeconds.size() + 1> buckets_{};
  std::uint64_t count_ = 0;
  std::int64_t sum_ns_ = 0;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

// Appends metric families to a string. Each family is opened once with HELP and TYPE and all of
// its samples follow it, as the format requires.
class PromWriter {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void sample(std::string_view name, const Labels& labels, std::uint64_t value);
  void sample(std::string_view name, const Labels& labels, std::int64_t value);
  // Writes name_bucket{...,le=...}, name_sum and name_count for one labelled histogram.
  void histogram(std::string_view name, const Labels& labels, const Histogram& h);
  const std::string& text() const { return out_; }

 private:
  void labels_(const Labels& labels, const char* extra_key = nullptr,
               std::string_view extra_value = {});
  std::string out_;
};

std::string escape_label_value(std::string_view v);

}  // namespace sluice::gateway
