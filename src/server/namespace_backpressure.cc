#include "server/namespace_backpressure.h"

#include <algorithm>
#include <cmath>

#include "server/metrics.h"

namespace sluice::server {

void NamespaceBackpressure::count_pending(const std::string& ns, int64_t delta) {
  auto it = pending_.try_emplace(ns, 0).first;
  it->second += delta;
  if (it->second <= 0) pending_.erase(it);
}

int64_t NamespaceBackpressure::pending(const std::string& ns) const {
  auto it = pending_.find(ns);
  return it == pending_.end() ? 0 : it->second;
}

// submit_rate jobs a second, up to the burst.
double NamespaceBackpressure::tokens(const std::string& ns, TimeNs now) {
  const double burst = static_cast<double>(limits_.submit_burst);
  auto [it, fresh] = buckets_.try_emplace(ns, Bucket{burst, now});
  Bucket& b = it->second;
  if (!fresh && now > b.at)
    b.tokens =
        std::min(burst, b.tokens + limits_.submit_rate * static_cast<double>(now - b.at) / 1e9);
  b.at = std::max(b.at, now);
  return b.tokens;
}

std::optional<BackpressureRefusal> NamespaceBackpressure::check(
    const std::map<std::string, int64_t>& wanted, TimeNs now) {
  const std::string rate = format_double(limits_.submit_rate);
  const std::string burst = std::to_string(limits_.submit_burst);
  for (const auto& [ns, n] : wanted) {
    const int64_t cap = limits_.max_pending;
    const int64_t have = pending(ns);
    if (cap > 0 && have + n > cap)
      return BackpressureRefusal{
          429,
          "namespace \"" + ns + "\" has " + std::to_string(have) +
              " pending jobs; the server takes at most " + std::to_string(cap) +
              " per namespace (--namespace-max-pending)",
          "nothing was submitted; submit again once some have started or ended", 5,
          "namespace-pending-cap"};
    if (limits_.submit_rate <= 0) continue;
    const double have_tokens = tokens(ns, now);
    if (static_cast<double>(n) <= have_tokens) continue;
    if (n > limits_.submit_burst)
      return BackpressureRefusal{413,
                                 "a submission of " + std::to_string(n) + " jobs to namespace \"" +
                                     ns + "\" is over the burst of " + burst +
                                     " jobs a namespace may submit at once "
                                     "(--namespace-submit-burst)",
                                 "nothing was submitted; split it into smaller submissions", 0,
                                 "namespace-submit-rate"};
    const double wait_s = (static_cast<double>(n) - have_tokens) / limits_.submit_rate;
    return BackpressureRefusal{429,
                               "namespace \"" + ns + "\" submits faster than the server takes (" +
                                   rate + " jobs/s, bursts of " + burst +
                                   ": --namespace-submit-rate, --namespace-submit-burst)",
                               "nothing was submitted; retry after the Retry-After seconds",
                               static_cast<int>(std::ceil(wait_s)), "namespace-submit-rate"};
  }
  return std::nullopt;
}

void NamespaceBackpressure::charge(const std::map<std::string, int64_t>& wanted, TimeNs now) {
  if (limits_.submit_rate <= 0) return;
  for (const auto& [ns, n] : wanted) {
    tokens(ns, now);
    buckets_[ns].tokens -= static_cast<double>(n);
  }
}

std::map<std::string, int64_t> jobs_per_namespace(const std::vector<Job>& jobs) {
  std::map<std::string, int64_t> out;
  for (const Job& j : jobs) ++out[j.namespace_];
  return out;
}

}  // namespace sluice::server
