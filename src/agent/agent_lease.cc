// The node's lease (docs/agent.md, "Fencing"): each successful request renews it from when it
// was sent; a reply that comes after it ran out (or from before the last registration) is stale.
#include "agent/agent.h"

namespace sluice::agent {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The lease runs from when the last successful request was sent: the server saw it no earlier,
// so the agent's deadline never falls after the server's (docs/agent.md, "Fencing").
bool Agent::reply_is_stale(Clock::time_point sent) const {
  std::lock_guard lock(mu_);
  // Also a reply to a request sent before the agent's last registration: the server took what
  // the agent reported there as all it runs, and declared anything else of this node lost
  // (tests/chaos, etcd mode, seed 10: a long poll's late reply started a run the server had
  // already placed elsewhere).
  return sent < registered_sent_ ||
         (lease_ms_ > 0 && Clock::now() >= sent + milliseconds(lease_ms_));
}

void Agent::renew_lease(Clock::time_point sent) {
  int64_t lease = 0;
  {
    std::lock_guard lock(mu_);
    lease = lease_ms_;
  }
  if (lease <= 0) return;
  const auto deadline = sent + milliseconds(lease);
  runner_->set_lease(deadline);
  std::lock_guard lock(util_mu_);  // the lease file's writer: the sync and report threads
  std::string why;
  if (!lease_file_->write(deadline, &why)) log("cannot record the lease: " + why);
}

}  // namespace sluice::agent
