#pragma once
// How a standby tells that the leading replica's process died (docs/ha.md, "Failover"): it
// reached the leader's API (/readyz 200) under the leader's current lease, and later a TCP
// connect to the same address is refused twice in a row. A refusal (RST) comes from the
// leader's machine when nothing listens on the port: the process is gone (killed, crashed,
// stopped), not merely slow or cut off (those time out, and wait for the lease to expire).
// Revoking the lease then is safe: every write of the leader is fenced by it, so a replica
// that somehow still ran could write nothing more and would step down.
#include <chrono>
#include <cstdint>
#include <string>

namespace sluice::server {

enum class PortState { Open, Refused, Unknown };

// A TCP connect to the host and port of `url` (http://HOST:PORT[/...]): Refused only on a
// connection refused; Unknown for a timeout, no route, or a name that does not resolve.
PortState probe_port(const std::string& url, int timeout_ms);

// True when GET url/readyz answers 200 within timeout_ms.
bool answers_ready(const std::string& url, int timeout_ms);

class LeaderProbe {
 public:
  // One round for the leader key's current lease and URL (lease 0: nobody leads): true when
  // that leader's process is gone and its lease should be revoked.
  bool gone(int64_t lease, const std::string& url);
  // Refusals in a row before gone() says so.
  static constexpr int kRefusals = 2;

 private:
  int64_t lease_ = 0;
  bool reached_ = false;  // its /readyz answered 200 under this lease
  int refused_ = 0;       // consecutive refused connects since
};

}  // namespace sluice::server
