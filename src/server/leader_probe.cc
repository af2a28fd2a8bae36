#include "server/leader_probe.h"

#include "net/client.h"

namespace sluice::server {

using std::chrono::milliseconds;

PortState probe_port(const std::string& url, int timeout_ms) {
  // http://HOST:PORT only: a port the URL names itself.
  const auto parts = net::parse_url(url);
  if (!parts || url.rfind("http://", 0) != 0 || url.find(parts->authority()) == std::string::npos)
    return PortState::Unknown;
  net::Client cli(url, {.connect_timeout = milliseconds(timeout_ms)});
  const auto connected = cli.connect();
  if (connected) return PortState::Open;
  return connected.refused() ? PortState::Refused : PortState::Unknown;
}

bool answers_ok(const std::string& url, const std::string& path, int timeout_ms) {
  const milliseconds timeout(timeout_ms);
  net::Client cli(url, {.connect_timeout = timeout, .read_timeout = timeout});
  auto res = cli.get(path);
  return res && res->status == 200;
}

bool missed_renewal(int64_t left_s, int64_t granted_s) {
  return left_s < 0 || 2 * (left_s + 1) <= granted_s;
}

LeaderProbe::LeaderProbe(int silence_ms, std::function<Clock::time_point()> now)
    : silence_ms_(silence_ms), now_(std::move(now)) {}

int64_t LeaderProbe::silent_ms() const {
  if (!reached_) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(now_() - answered_).count();
}

LeaderState LeaderProbe::check(int64_t lease, const std::string& url) {
  if (lease != lease_) {
    lease_ = lease;
    reached_ = false;
    refused_ = 0;
  }
  if (lease == 0 || url.empty()) return LeaderState::Alive;
  if (!reached_) {
    reached_ = answers_ready(url, 500);
    if (reached_) answered_ = now_();
    return LeaderState::Alive;
  }
  // An answer is the cheap common case (one request a round); without one, a connect tells a
  // closed port (the process died) from a silent one (frozen, or its machine is gone).
  if (silence_ms_ > 0 && answers_ok(url, "/healthz", kAnswerMs)) {
    answered_ = now_();
    refused_ = 0;
    return LeaderState::Alive;
  }
  refused_ = probe_port(url, kConnectMs) == PortState::Refused ? refused_ + 1 : 0;
  if (refused_ >= kRefusals) return LeaderState::Refused;
  if (silence_ms_ <= 0 || refused_ > 0) return LeaderState::Alive;
  return silent_ms() >= silence_ms_ ? LeaderState::Silent : LeaderState::Alive;
}

}  // namespace sluice::server
