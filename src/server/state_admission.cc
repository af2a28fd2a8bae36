// Backpressure per namespace (issue 41): a default cap on a namespace's pending jobs and a
// submission rate (a token bucket of jobs), so that one member cannot fill the database, the
// event log and the server's memory for everyone (160,000 jobs in 20 s did before). Both are
// answered 429 with a Retry-After, before anything is written. docs/api.md, "Fairness".
#include <cmath>

#include "server/state.h"

namespace sluice::server {

void ServerState::set_state(JobRecord& r, JobState s) {
  if (r.state == s) return;
  if (r.state == JobState::kPending) count_pending(r.job.namespace_, -1);
  if (s == JobState::kPending) count_pending(r.job.namespace_, +1);
  r.state = s;
}

void ServerState::count_pending(const std::string& ns, int64_t delta) {
  auto it = pending_by_ns_.try_emplace(ns, 0).first;
  it->second += delta;
  if (it->second <= 0) pending_by_ns_.erase(it);
}

void ServerState::recount_pending() {
  pending_by_ns_.clear();
  for (const auto& [id, r] : records_)
    if (r.state == JobState::kPending) count_pending(r.job.namespace_, +1);
}

int64_t ServerState::pending_in_namespace(const std::string& ns) const {
  auto it = pending_by_ns_.find(ns);
  return it == pending_by_ns_.end() ? 0 : it->second;
}

// The bucket of `ns` filled up to `now`: namespace_submit_rate jobs a second, up to the burst.
double ServerState::submit_tokens(const std::string& ns, TimeNs now) {
  const double burst = static_cast<double>(options_.namespace_submit_burst);
  auto [it, fresh] = submit_buckets_.try_emplace(ns, SubmitBucket{burst, now});
  SubmitBucket& b = it->second;
  if (!fresh && now > b.at)
    b.tokens = std::min(
        burst, b.tokens + options_.namespace_submit_rate * static_cast<double>(now - b.at) / 1e9);
  b.at = std::max(b.at, now);
  return b.tokens;
}

std::map<std::string, int64_t> jobs_per_namespace(const std::vector<Job>& jobs) {
  std::map<std::string, int64_t> out;
  for (const Job& j : jobs) ++out[j.namespace_];
  return out;
}

std::optional<SubmitOutcome> ServerState::backpressure(const std::map<std::string, int64_t>& wanted,
                                                       TimeNs now) {
  for (const auto& [ns, n] : wanted) {
    const int64_t cap = options_.namespace_max_pending;
    const int64_t have = pending_in_namespace(ns);
    if (cap > 0 && have + n > cap) {
      metrics_.rejected["namespace-pending-cap"] += 1;
      return SubmitOutcome{429,
                           "namespace \"" + ns + "\" has " + std::to_string(have) +
                               " pending jobs; the server takes at most " + std::to_string(cap) +
                               " per namespace (--namespace-max-pending)",
                           {"nothing was submitted; submit again once some have started or ended"},
                           {},
                           0,
                           5};
    }
    if (options_.namespace_submit_rate <= 0) continue;
    const double tokens = submit_tokens(ns, now);
    if (static_cast<double>(n) <= tokens) continue;
    metrics_.rejected["namespace-submit-rate"] += 1;
    const double burst = static_cast<double>(options_.namespace_submit_burst);
    if (static_cast<double>(n) > burst)
      return SubmitOutcome{413,
                           "a submission of " + std::to_string(n) + " jobs to namespace \"" + ns +
                               "\" is over the burst of " +
                               std::to_string(options_.namespace_submit_burst) +
                               " jobs a namespace may submit at once (--namespace-submit-burst)",
                           {"nothing was submitted; split it into smaller submissions"},
                           {},
                           0,
                           0};
    const double wait_s = (static_cast<double>(n) - tokens) / options_.namespace_submit_rate;
    return SubmitOutcome{429,
                         "namespace \"" + ns + "\" submits faster than the server takes (" +
                             format_double(options_.namespace_submit_rate) + " jobs/s, bursts of " +
                             std::to_string(options_.namespace_submit_burst) +
                             ": --namespace-submit-rate, --namespace-submit-burst)",
                         {"nothing was submitted; retry after the Retry-After seconds"},
                         {},
                         0,
                         static_cast<int>(std::ceil(wait_s))};
  }
  return std::nullopt;
}

void ServerState::charge_submission(const std::map<std::string, int64_t>& wanted, TimeNs now) {
  if (options_.namespace_submit_rate <= 0) return;
  for (const auto& [ns, n] : wanted) {
    submit_tokens(ns, now);
    submit_buckets_[ns].tokens -= static_cast<double>(n);
  }
}

}  // namespace sluice::server
