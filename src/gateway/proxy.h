#pragma once
// Inside the gateway: pools with their queues and backends, admitted requests (exchanges),
// upstream keep-alive connections, and the Proxy that owns them. Client connections are
// src/net's (net::Server, one I/O thread); the Proxy runs on that same thread (its io_context),
// so admission sees a consistent view without locks. Not for use outside src/gateway.
//
//   front.cc     a request: own endpoints, routing, identity, admission, queue, the answer
//   upstream.cc  an admitted request at a backend: connect, the exchange (net::UpstreamConn),
//                retry, errors
//   health.cc    active health checks, taking backends out and back
//   endpoints.cc /metrics and /v1/scale
//   pool.cc      a pool's backend choice and its offered rate and replica estimate
//   server.cc    run_gateway: the listener, signals, drain
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "gateway/admission.h"
#include "gateway/config.h"
#include "gateway/http_head.h"
#include "gateway/metrics.h"
#include "net/http_server.h"
#include "net/upstream.h"

namespace sluice::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using error_code = boost::system::error_code;

constexpr int kRateWindowS = 5;  // window of the offered-rate estimate

inline std::int64_t ns_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}
void log_line(const std::string& s);

struct Pool;
struct Backend;
class UpstreamConn;

enum class ExState : std::uint8_t { kQueued, kInFlight, kDone };

// One admitted request, from admission until its answer is handed to the client's connection.
struct Exchange {
  explicit Exchange(net::Responder r) : client(std::move(r)) {}
  net::Responder client;
  std::string body;
  RequestClass cls = RequestClass::kStandard;
  int tenant = -1;       // -1: anonymous
  Pool* pool = nullptr;  // serving pool (the fallback pool when routed there)
  ExState state = ExState::kQueued;
  Clock::time_point t_start;     // request fully read
  Clock::time_point t_enqueued;  // entered the queue
  Clock::time_point t_dispatched;
  std::chrono::milliseconds queue_deadline{0};
  std::list<std::shared_ptr<Exchange>>::iterator qpos;
  std::optional<asio::steady_timer> deadline_timer;
  int attempts = 0;
  bool head = false;
  std::string upstream_head;  // serialized once, reused by retries
};

struct PoolCounters {
  std::array<std::uint64_t, kNumClasses> admitted{}, fallback{}, expired{}, disconnected{};
  std::array<std::array<std::uint64_t, 5>, kNumClasses> rejected{};  // by RejectReason
  std::array<std::uint64_t, 4> upstream_errors{};  // connect, timeout, io, backend_down
  Histogram queue_wait, upstream, total;
  int queue_depth_max = 0;
};
enum UpstreamError { kErrConnect = 0, kErrTimeout = 1, kErrIo = 2, kErrBackendDown = 3 };
constexpr std::array<const char*, 4> kUpstreamErrorNames = {"connect", "timeout", "io",
                                                            "backend_down"};

struct Backend {
  HostPort addr;
  tcp::endpoint endpoint;
  Pool* pool = nullptr;
  bool healthy = true;
  int in_flight = 0;
  int consecutive_failures = 0;
  int consecutive_successes = 0;
  std::vector<std::shared_ptr<UpstreamConn>> idle;
  std::unordered_set<UpstreamConn*> active;
  std::unique_ptr<asio::steady_timer> health_timer;
};

struct Pool {
  int index = 0;
  PoolConfig cfg;
  AdmissionPolicy policy;
  Pool* fallback = nullptr;
  std::vector<std::unique_ptr<Backend>> backends;
  std::array<std::list<std::shared_ptr<Exchange>>, kNumClasses> queue;  // FIFO per class
  int queued = 0;
  int in_flight = 0;
  std::size_t rr = 0;
  PoolCounters m;
  // Offered-rate ring (arrivals per second over the last kRateWindowS seconds) and an EWMA of
  // upstream latency: the inputs of the replica estimate served at /v1/scale.
  std::array<std::int64_t, kRateWindowS> rate_sec{};
  std::array<std::uint64_t, kRateWindowS> rate_count{};
  double upstream_ewma_s = 0.0;

  int healthy_backends() const;
  PoolLoad load() const { return {queued, in_flight, healthy_backends() * cfg.max_in_flight}; }
  Backend* pick();  // least-loaded healthy backend with a free slot; round robin among equals
  void note_arrival(std::int64_t now_s);
  double offered_rate(std::int64_t now_s) const;
  int desired_replicas(std::int64_t now_s) const;
};

// A keep-alive connection to one backend (src/net's upstream connection). Idle connections
// wait in Backend::idle; a connection carries one exchange at a time. Its deadline (connect,
// then the whole exchange) is enforced by the Proxy's sweep, which cancels the socket and sets
// timed_out.
class UpstreamConn : public net::UpstreamConn, public std::enable_shared_from_this<UpstreamConn> {
 public:
  UpstreamConn(asio::io_context& ioc, Backend& b) : net::UpstreamConn(ioc), backend(&b) {}
  Backend* backend;
  Clock::time_point deadline;
  bool aborted = false;    // set when the backend is taken out while this exchange runs
  bool timed_out = false;  // set by the sweep
};

// The gateway's state and its request path. Every member runs on the I/O thread.
class Proxy {
 public:
  Proxy(asio::io_context& ioc, const GatewayConfig& cfg, net::Server& http);
  // Resolves the backends (false: logged) and registers the routes on `http`.
  bool init();
  // On the I/O thread: health checks and the upstream sweep begin.
  void start();
  // On the I/O thread: SIGTERM. `done(code)` is called once, when the drain ends or times out.
  void start_drain(std::function<void(int)> done);

  // The routes (front.cc).
  void handle(net::Request& req, net::Responder r);
  void count_response(int status) { ++responses_[static_cast<unsigned>(status)]; }

 private:
  void admit(net::Request& req, net::Responder r, Pool& pool, RequestClass cls, int tenant,
             std::chrono::milliseconds deadline);
  void enqueue(const std::shared_ptr<Exchange>& ex);
  void dequeue(Exchange& ex);
  void pump(Pool& pool);
  void finish(const std::shared_ptr<Exchange>& ex, net::Response&& res);
  void fail_queued(Pool& pool, int status, RejectReason reason, std::string_view msg);
  void expire(const std::shared_ptr<Exchange>& ex);
  void client_gone(const std::shared_ptr<Exchange>& ex);

  // upstream.cc
  void sweep();
  void dispatch(const std::shared_ptr<Exchange>& ex, Backend& b);
  void send_upstream(const std::shared_ptr<Exchange>& ex, Backend& b,
                     std::shared_ptr<UpstreamConn> conn);
  void exchange_on(const std::shared_ptr<Exchange>& ex, Backend& b,
                   const std::shared_ptr<UpstreamConn>& conn);
  void upstream_error(const std::shared_ptr<Exchange>& ex, Backend& b,
                      const std::shared_ptr<UpstreamConn>& conn, error_code ec,
                      bool response_started);
  void upstream_ok(const std::shared_ptr<Exchange>& ex, Backend& b,
                   const std::shared_ptr<UpstreamConn>& conn);
  void upstream_failed(const std::shared_ptr<Exchange>& ex, Backend& b, error_code ec, bool aborted,
                       bool timed_out);
  void after_upstream(Pool& pool);

  // health.cc
  void schedule_health(Backend& b, std::chrono::milliseconds delay);
  void run_health(Backend& b);
  void health_result(Backend& b, bool ok);
  void mark_down(Backend& b, const std::string& why);
  void mark_up(Backend& b);

  // endpoints.cc
  net::Response metrics_response();
  net::Response scale_response(const net::Request& req);

  void maybe_finish_drain();
  int& tenant_active(int tenant) {
    return tenant < 0 ? anonymous_active_ : tenant_active_[static_cast<std::size_t>(tenant)];
  }
  int tenant_limit(int tenant) const {
    return tenant < 0 ? cfg_.anonymous.max_concurrency
                      : cfg_.tenants[static_cast<std::size_t>(tenant)].max_concurrency;
  }

  asio::io_context& ioc_;
  const GatewayConfig& cfg_;
  net::Server& http_;
  asio::steady_timer sweep_timer_;
  asio::steady_timer drain_timer_;
  std::vector<std::unique_ptr<Pool>> pools_;
  std::vector<int> tenant_active_;
  int anonymous_active_ = 0;
  bool draining_ = false;
  bool stopped_ = false;
  bool need_model_ = false;
  std::function<void(int)> done_;
  std::map<unsigned, std::uint64_t> responses_;
};

// The gateway's answers: `Server: sluice-gateway`, and for errors a JSON body
// {"error": message, "reason": reason} with `x-sluice-reason: reason`.
net::Response make_response(int status, std::string body,
                            std::string_view content_type = "application/json");
net::Response error_response(int status, std::string_view reason, std::string_view message);
std::string json_escape(std::string_view s);

}  // namespace sluice::gateway
