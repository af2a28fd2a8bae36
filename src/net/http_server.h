#pragma once
// The one HTTP/1.1 server of sluice (`sluice serve`, the node agent). Boost.Asio/Beast:
//
//   - a few I/O threads (ServerOptions::io_threads) do all socket work asynchronously: accept,
//     read the header, read the body, write. An idle keep-alive connection is a pending read
//     and a timer: it costs no CPU (no polling).
//   - every connection has deadlines: idle (waiting for the first byte of a request), header
//     (the whole header once its first byte arrived), body, write. A client that misses one is
//     closed: a slow client holds a socket and a small buffer, never a thread. Deadlines are
//     checked by one sweep timer (every sweep_interval), not a timer operation per read/write.
//   - complete requests go to a bounded worker pool (handlers may block: long polls, store
//     commits). When every worker is busy and the queue is full the answer is 503.
//     Routes flagged inline run on the I/O thread: they answer while the workers are all busy.
//     Asynchronous routes (Async) run on the I/O thread too and answer later through a
//     Responder, from any thread (a proxy's queue, an upstream exchange): no thread waits.
//   - caps: connections in all and per client address. A connection over a cap is still
//     accepted into a small reserve, where it may ask for inline routes only (so /healthz
//     answers while the caps are reached), gets short deadlines and a 503 for anything else.
//   - body and header size limits (413, 431), a 500 for a handler that throws.
//   - lanes: a route may name a worker pool of its own (RouteOptions::lane), so that one kind of
//     traffic (the node agents' heartbeats) never waits behind another (users' requests).
//   - tenants: ServerOptions::tenant_of names the caller of a request from its header (a token).
//     One tenant has at most tenant_max_in_flight requests between header and answer (beyond:
//     429 before its body is read) and tenant_max_running handlers at once; the workers take the
//     tenants' requests in turn (WorkerPool), so one busy caller cannot starve the others.
//
//   net::Server http(opts);
//   http.Get("/healthz", handler, {.run_inline = true});
//   http.Get(R"(/v1/jobs/(\d+))", handler);  // req.matches[1]
//   http.Async("*", "*", [](Request& req, Responder r) { ... r.send(res); });  // every other
//   auto port = http.listen("127.0.0.1", 0);  // error: "cannot listen on ...: address in use"
//   http.start();
//   ...
//   http.stop();  // stops accepting, closes connections, joins every thread
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "net/message.h"
#include "net/router.h"

namespace boost::asio {
class io_context;
}

namespace sluice::net {

// Formats an error the stack answers itself (400, 404, 408, 413, 414, 431, 500, 503): `reason` is
// a short slug ("malformed", "timeout", "body_too_large", "header_too_large", "target_too_long",
// "no_route", "internal", "too_many_connections", "busy"), `error` the sentence.
using ErrorFormat =
    std::function<void(Response&, int status, std::string_view reason, const std::string& error,
                       const std::vector<std::string>& details)>;

// What is known of a request once its header is read, before its body (tenant_of).
struct RequestHead {
  std::string_view method;
  std::string_view path;  // the target without its query, not decoded
  std::string_view remote_addr;
  std::function<std::string_view(std::string_view name)> header;  // "" when absent
};

// A worker pool of its own for the routes that name it (RouteOptions::lane).
struct LaneOptions {
  int workers = 4;
  size_t max_queued = 1024;
};

struct ServerOptions {
  std::string name = "http";  // in log lines
  int io_threads = 1;
  int workers = 4;           // handler threads; a blocked handler (long poll) holds one
  size_t max_queued = 1024;  // complete requests waiting for a worker; beyond: 503
  std::map<std::string, LaneOptions> lanes;  // named pools beside the default one above
  // The tenant of a request ("": none, no tenant caps), on the I/O thread: cheap, no locks held
  // long. nullptr: no tenants.
  std::function<std::string(const RequestHead&)> tenant_of;
  size_t tenant_max_in_flight = 0;  // one tenant's requests from header to answer (0: no cap)
  size_t tenant_max_running = 0;    // one tenant's handlers running at once (0: no cap)
  size_t max_body_bytes = 1 << 20;  // beyond: 413
  // Request line and headers, and a chunked body's trailer; beyond: 431. Above about 63 KiB it
  // acts as that: a connection's buffer stays below 64 KiB (net/request_reader.h).
  size_t max_header_bytes = 16 << 10;
  size_t max_header_fields = 100;                    // header fields of one request; beyond: 431
  size_t max_target_bytes = 4096;                    // the request target; beyond: 414
  std::chrono::milliseconds idle_timeout{60'000};    // keep-alive: waiting for a request
  std::chrono::milliseconds header_timeout{10'000};  // from its first byte to the blank line
  std::chrono::milliseconds body_timeout{30'000};    // the whole body, after the header
  std::chrono::milliseconds write_timeout{60'000};   // the whole response
  // Connection caps. Loopback clients count only toward max_connections unless
  // cap_loopback_per_ip: on loopback every client (local agents, the CLI, benchmarks) shares
  // one address, and without tokens the server listens on loopback only, so a per-address cap
  // there would be a second, smaller total cap. max_connections is also kept below the
  // process's open-file limit (RLIMIT_NOFILE), so that a full server answers 503, not EMFILE:
  // connections and the reserve together leave max(fds_kept, limit / fds_kept_divisor)
  // descriptors to the rest of the process (divisor 0: fds_kept only).
  size_t max_connections = 10'000;
  size_t max_connections_per_ip = 64;
  bool cap_loopback_per_ip = false;
  size_t fds_kept = 128;
  size_t fds_kept_divisor = 0;
  // Connections over a cap that may still ask for inline routes, with this idle and header
  // deadline. Beyond the reserve a connection is closed as soon as it is accepted.
  size_t reserve_connections = 32;
  std::chrono::milliseconds reserve_timeout{2'000};
  // Connections over the caps learn why (else they are closed unread): one refused at accept
  // gets a fixed 503 before its close, one in the reserve that asks nothing in time gets a 503.
  bool answer_over_cap = false;
  // A request header or body not received in time is answered 408 before the close (else the
  // connection is closed without an answer).
  bool answer_timeouts = false;
  std::chrono::milliseconds sweep_interval{50};  // how often deadlines are checked
  // The body of the errors above; nullptr: set_error's {"error": ..., "details": [...]}.
  ErrorFormat error_format;
  // Called on the I/O thread with the status of every answer written (metrics); may be empty.
  std::function<void(int status)> on_response;
  // One line per call (errors, handler exceptions); nullptr: stderr.
  std::function<void(const std::string&)> log;
};

struct ServerStats {
  size_t connections = 0;  // open now, reserve included
  size_t reserve_connections = 0;
  uint64_t accepted = 0;
  uint64_t refused_at_accept = 0;  // over every cap and the reserve: closed unread (or 503)
  uint64_t over_cap_total = 0;     // accepted over max_connections (reserve or refused)
  uint64_t over_cap_per_ip = 0;    // accepted over their address's cap (reserve or refused)
  uint64_t over_cap_503 = 0;       // reserve connections that asked for a non-inline route
  uint64_t busy_503 = 0;           // the worker queue was full
  uint64_t tenant_429 = 0;         // a tenant had tenant_max_in_flight requests already
  uint64_t timeouts = 0;           // connections closed for a missed deadline
  uint64_t handler_errors = 0;     // handlers that threw
  size_t workers_busy = 0;
  size_t queued = 0;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes, before start().
  void Get(std::string pattern, Handler h, RouteOptions o = {});
  void Post(std::string pattern, Handler h, RouteOptions o = {});
  void Put(std::string pattern, Handler h, RouteOptions o = {});
  void Delete(std::string pattern, Handler h, RouteOptions o = {});
  // An asynchronous route; method "*": any method, pattern "*": any path.
  void Async(std::string method, std::string pattern, AsyncHandler h, RouteOptions o = {});

  // Binds and listens (no SO_REUSEPORT: a port in use is an error). Port 0: a free port.
  // Returns the port. Connections wait in the backlog until start().
  Result<int> listen(const std::string& host, int port);
  void start();
  // Stops accepting, closes every connection, lets running handlers finish (a blocked one
  // must be woken by its owner first), joins every thread. Idempotent.
  void stop();
  // Graceful: stops accepting, closes connections waiting for a request, answers every further
  // request with `Connection: close`; `on_drained` runs on the I/O thread once no connection is
  // left. stop() is still the caller's to call.
  void drain(std::function<void()> on_drained);
  int port() const { return port_; }
  ServerStats stats() const;
  // The I/O context: a single-threaded user (io_threads = 1) may run its own asynchronous work
  // (timers, client sockets) on it, beside the connections, without locks. Stopped by stop().
  boost::asio::io_context& io_context();

  struct Impl;  // the I/O side (http_server.cc, connection.cc)

 private:
  ServerOptions options_;
  Router router_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<bool> started_{false}, stopped_{false};
};

}  // namespace sluice::net
