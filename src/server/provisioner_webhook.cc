// A node pool's webhook provisioner (docs/autoscaling.md, "The webhook"): one POST of the call's
// JSON body to the pool's URL, on a provisioner worker, bounded as a whole by the call's timeout
// (a watchdog cancels the request at the deadline, whatever phase it is in: connect, write, a
// slow or endless answer). The answer's body goes to the call's log file; its tail is kept.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>

#include "net/client.h"
#include "proto/protocol.h"
#include "server/provisioner.h"

namespace sluice::server {

namespace {

constexpr uint64_t kMaxAnswerBytes = 1 << 20;
constexpr size_t kMaxTokenBytes = 8192;

// Cancels `client`'s request once the deadline passed or `stopping` is set, until done().
// Repeats the cancel: one sent before the request began would be lost.
class Watchdog {
 public:
  Watchdog(net::Client& client, std::chrono::steady_clock::time_point deadline,
           const std::atomic<bool>* stopping)
      : thread_([this, &client, deadline, stopping] {
          std::unique_lock lk(mu_);
          while (!done_) {
            const bool late = std::chrono::steady_clock::now() >= deadline;
            const bool stop = stopping && stopping->load();
            if (late || stop) {
              fired_ = late ? kTimeout : kStopping;
              client.cancel();
            }
            cv_.wait_for(lk, std::chrono::milliseconds(20));
          }
        }) {}
  ~Watchdog() { done(); }
  void done() {
    {
      std::lock_guard lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  enum Fired { kNo, kTimeout, kStopping };
  Fired fired() {
    std::lock_guard lk(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Fired fired_ = kNo;
  std::thread thread_;  // last: starts once the members above exist
};

// An http(s)://HOST[:PORT]/PATH URL as the client's base (scheme and authority) and the
// request's target (path and query; "/" when it has none).
std::pair<std::string, std::string> split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

}  // namespace

std::optional<std::string> read_bearer_token(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read bearerTokenFile " + path;
    return std::nullopt;
  }
  std::string token;
  token.resize(kMaxTokenBytes + 1);
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<size_t>(in.gcount()));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  const bool printable =
      std::all_of(token.begin(), token.end(), [](unsigned char c) { return c > ' ' && c < 0x7f; });
  if (token.empty() || token.size() > kMaxTokenBytes || !printable) {
    *error = "bearerTokenFile " + path + " holds no token (one line of up to 8 KiB, no spaces)";
    return std::nullopt;
  }
  return token;
}

ProvisionResult run_webhook_call(const ProvisionCall& call, const std::string& log_path,
                                 const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ProvisionResult r;
  r.call = call;
  // The call's log: the whole answer (up to kMaxAnswerBytes), else what went wrong.
  auto finish = [&](const std::string& logged) {
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::ofstream(log_path, std::ios::trunc) << logged << "\n";
    return r;
  };
  net::Fields headers;
  if (!call.token_file.empty()) {
    std::string why;
    auto token = read_bearer_token(call.token_file, &why);
    if (!token) {
      r.output = why;
      return finish(r.output);
    }
    headers.emplace_back("Authorization", "Bearer " + *token);
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::nanoseconds(call.timeout_ns));
  net::ClientOptions o;
  o.connect_timeout = o.write_timeout = o.read_timeout = timeout;
  o.keep_alive = false;
  o.max_body_bytes = kMaxAnswerBytes;
  const auto [base, target] = split_url(call.url);
  net::Client client(base, o);
  Watchdog watchdog(client, t0 + timeout, cancel);
  const net::ClientResult res =
      client.post(target, proto::dump_json(call.body), "application/json", headers);
  watchdog.done();
  if (res) {
    r.http_status = res->status;
    r.ok = res->status >= 200 && res->status < 300;
    const std::string status = "HTTP " + std::to_string(res->status);
    r.output = status + (res->body.empty() ? "" : ": ") + output_tail(res->body);
    return finish(status + "\n" + res->body);
  }
  switch (watchdog.fired()) {
    case Watchdog::kStopping:
      r.output = "cancelled: the server is stopping";
      break;
    case Watchdog::kTimeout:
      r.timed_out = true;
      r.output = "no answer within its timeout of " + std::to_string(timeout.count()) + " ms";
      break;
    case Watchdog::kNo:
      r.timed_out = res.error() == net::ClientError::kTimeout;
      r.output = res.error_text();
      break;
  }
  return finish(r.output);
}

}  // namespace sluice::server
