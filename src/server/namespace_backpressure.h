#pragma once
// Backpressure per namespace (issue 41): a cap on a namespace's pending jobs and a submission
// rate (a token bucket of jobs), so that one member cannot fill the database, the event log and
// the server's memory for everyone. Answered 429 with a Retry-After (413 for a submission larger
// than a burst), before anything is written. docs/api.md, "Fairness between callers".
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/job.h"

namespace sluice::server {

struct BackpressureLimits {
  int64_t max_pending = 10'000;  // pending jobs per namespace; 0: no cap
  double submit_rate = 200;      // jobs a second per namespace; 0: no limit
  int64_t submit_burst = 5'000;  // jobs a namespace may submit at once
};

// Why a submission is refused, for its answer.
struct BackpressureRefusal {
  int status = 429;
  std::string error;
  std::string detail;
  int retry_after_s = 0;
  const char* metric = "";  // sluice_jobs_rejected_total's reason
};

class NamespaceBackpressure {
 public:
  explicit NamespaceBackpressure(BackpressureLimits limits) : limits_(limits) {}

  // The count of pending jobs: every change of a job's state to or from pending, or a recount.
  void count_pending(const std::string& ns, int64_t delta);
  void clear_pending() { pending_.clear(); }
  int64_t pending(const std::string& ns) const;

  // Whether `wanted` (jobs per namespace) may be submitted at `now`; nullopt: yes.
  std::optional<BackpressureRefusal> check(const std::map<std::string, int64_t>& wanted,
                                           TimeNs now);
  // Takes the submitted jobs from their namespaces' buckets.
  void charge(const std::map<std::string, int64_t>& wanted, TimeNs now);

 private:
  // The bucket of `ns` filled up to `now`.
  double tokens(const std::string& ns, TimeNs now);

  struct Bucket {
    double tokens = 0;
    TimeNs at = 0;
  };
  BackpressureLimits limits_;
  std::unordered_map<std::string, int64_t> pending_;  // namespaces with pending jobs
  std::unordered_map<std::string, Bucket> buckets_;
};

// How many of `jobs` go to each namespace.
std::map<std::string, int64_t> jobs_per_namespace(const std::vector<Job>& jobs);

}  // namespace sluice::server
