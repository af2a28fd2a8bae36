#include "server/leader_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <cerrno>

namespace sluice::server {

namespace {

// "http://HOST:PORT/..." -> host, port ("[::1]" without its brackets); false when not that.
bool host_port(const std::string& url, std::string* host, std::string* port) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size()) return false;
  *host = rest.substr(0, colon);
  *port = rest.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  return !host->empty();
}

}  // namespace

PortState probe_port(const std::string& url, int timeout_ms) {
  std::string host, port;
  if (!host_port(url, &host, &port)) return PortState::Unknown;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    return PortState::Unknown;
  PortState state = PortState::Unknown;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, timeout_ms) == 1) {
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = EINVAL;
      } else {
        err = ETIMEDOUT;
      }
    }
    state = err == 0 ? PortState::Open : err == ECONNREFUSED ? PortState::Refused : state;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return state;
}

bool answers_ok(const std::string& url, const std::string& path, int timeout_ms) {
  httplib::Client cli(url);
  const time_t s = timeout_ms / 1000, us = (timeout_ms % 1000) * 1000;
  cli.set_connection_timeout(s, us);
  cli.set_read_timeout(s, us);
  auto res = cli.Get(path);
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
