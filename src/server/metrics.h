#pragma once
// Prometheus text exposition (format 0.0.4), written by hand: counters, gauges and histograms
// with labels, kept in ordered maps so the output is stable.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::server {

using LabelSet = std::vector<std::pair<std::string, std::string>>;

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size()) {}
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket, not cumulative
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Writes one metric family at a time.
class PromWriter {
 public:
  void family(const std::string& name, const std::string& type, const std::string& help);
  void sample(const std::string& name, const LabelSet& labels, double value);
  void histogram(const std::string& name, const LabelSet& labels, const Histogram& h);
  void append(const PromWriter& other) { out_ += other.out_; }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

std::string escape_label(const std::string& v);
std::string format_double(double v);

// Counters and histograms the server accumulates (gauges are computed at scrape time).
struct Metrics {
  std::map<LabelSet, Histogram> admission_wait;         // cluster_queue, priority_class, class
  std::map<LabelSet, double> preemptions;               // cluster_queue, reason
  std::map<std::string, double> preempted_gpu_seconds;  // cluster_queue
  std::map<std::string, double> submitted;              // cluster_queue
  std::map<std::string, double> rejected;               // reason
  std::map<LabelSet, double> finished;                  // cluster_queue, state
  std::map<LabelSet, double> deadlines;  // cluster_queue, priority_class, outcome (met, missed)
  std::map<std::string, Histogram> cycle_seconds;  // mode
  // Written by the store's thread: guarded by its own mutex, never by the state's.
  mutable std::mutex commit_mu;
  Histogram commit_seconds{{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}};
  // Writes (submissions, decisions, agents' reports...) that shared one commit: group commit.
  Histogram commit_writes{{1, 2, 4, 8, 16, 32, 64, 128, 256, 1024}};
  uint64_t cycles = 0;
  double stalled_seconds = 0;  // the server's own stalls, given back to the agents' leases
  double last_cycle_unix_s = 0;

  static Histogram wait_histogram();
  static Histogram cycle_histogram();
};

}  // namespace sluice::server
