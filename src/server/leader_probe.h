#pragma once
// How a standby tells that the leading replica is gone (docs/ha.md, "Failover"). It first
// reaches the leader's API (/readyz 200) under the leader's current lease; from then on:
//  - Refused: a TCP connect to the same address is refused twice in a row. A refusal (RST)
//    comes from the leader's machine when nothing listens on the port: the process is gone
//    (killed, crashed), not merely slow or cut off.
//  - Silent: its /healthz (answered on the leader's I/O thread, without the state lock: a long
//    scheduling cycle does not delay it) has not answered for `silence_ms`: a frozen process,
//    a dead machine, or a network cut. That alone is not enough to depose it (this standby may
//    be the one cut off): election.cc also requires that the leader's lease missed a renewal
//    (missed_renewal()), which etcd sees whoever can reach whom.
// Revoking the lease then is safe: every write of the leader is fenced by it, so a replica
// that somehow still ran could write nothing more and would step down.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace sluice::server {

enum class PortState { Open, Refused, Unknown };

// A TCP connect to the host and port of `url` (http://HOST:PORT[/...]): Refused only on a
// connection refused; Unknown for a timeout, no route, or a name that does not resolve.
PortState probe_port(const std::string& url, int timeout_ms);

// True when GET url + path answers 200 within timeout_ms.
bool answers_ok(const std::string& url, const std::string& path, int timeout_ms);
inline bool answers_ready(const std::string& url, int timeout_ms) {
  return answers_ok(url, "/readyz", timeout_ms);
}

// The leader renews its lease three times per TTL, so a live leader's lease always has at least
// two thirds of its TTL left. etcd reports whole seconds, rounded down: `left_s` seconds means
// under left_s + 1. True when that is at most half the TTL, i.e. a renewal is at least a sixth
// of the TTL late (TTL 2 s: under 1 s left), or the lease is gone (left_s < 0). Never true for
// a live lease of a TTL under 2 s (whole seconds cannot tell): such a lease expires first.
bool missed_renewal(int64_t left_s, int64_t granted_s);

enum class LeaderState { Alive, Refused, Silent };

class LeaderProbe {
 public:
  using Clock = std::chrono::steady_clock;
  // silence_ms: how long the leader's API may stay silent before check() says Silent (0: never).
  explicit LeaderProbe(int silence_ms = 0, std::function<Clock::time_point()> now = Clock::now);

  // One round for the leader key's current lease and URL (lease 0: nobody leads). Refused and
  // Silent only after the leader was reached under this lease.
  LeaderState check(int64_t lease, const std::string& url);
  // How long the leader's API has not answered (since its last answer); 0 before it was reached.
  int64_t silent_ms() const;
  // Refusals in a row before check() says Refused.
  static constexpr int kRefusals = 2;
  // One probe's timeouts: a connect, and a /healthz answer.
  static constexpr int kConnectMs = 300;
  static constexpr int kAnswerMs = 250;

 private:
  int silence_ms_;
  std::function<Clock::time_point()> now_;
  int64_t lease_ = 0;
  bool reached_ = false;          // its /readyz answered 200 under this lease
  int refused_ = 0;               // consecutive refused connects since
  Clock::time_point answered_{};  // its API's last answer
};

}  // namespace sluice::server
