#pragma once
// The one HTTP/1.1 server of sluice (`sluice serve`, the node agent). Boost.Asio/Beast:
//
//   - a few I/O threads (ServerOptions::io_threads) do all socket work asynchronously: accept,
//     read the header, read the body, write. An idle keep-alive connection is a pending read
//     and a timer: it costs no CPU (no polling).
//   - every connection has deadlines: idle (waiting for the first byte of a request), header
//     (the whole header once its first byte arrived), body, write. A client that misses one is
//     closed: a slow client holds a socket and a small buffer, never a thread.
//   - complete requests go to a bounded worker pool (handlers may block: long polls, store
//     commits). When every worker is busy and the queue is full the answer is 503.
//     Routes flagged inline run on the I/O thread: they answer while the workers are all busy.
//   - caps: connections in all and per client address. A connection over a cap is still
//     accepted into a small reserve, where it may ask for inline routes only (so /healthz
//     answers while the caps are reached), gets short deadlines and a 503 for anything else.
//   - body and header size limits (413, 431), a 500 for a handler that throws.
//
//   net::Server http(opts);
//   http.Get("/healthz", handler, {.run_inline = true});
//   http.Get(R"(/v1/jobs/(\d+))", handler);  // req.matches[1]
//   auto port = http.listen("127.0.0.1", 0);  // error: "cannot listen on ...: address in use"
//   http.start();
//   ...
//   http.stop();  // stops accepting, closes connections, joins every thread
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/model/result.h"
#include "net/message.h"
#include "net/router.h"

namespace sluice::net {

struct ServerOptions {
  std::string name = "http";  // in log lines
  int io_threads = 1;
  int workers = 4;                     // handler threads; a blocked handler (long poll) holds one
  size_t max_queued = 1024;            // complete requests waiting for a worker; beyond: 503
  size_t max_body_bytes = 1 << 20;     // beyond: 413
  size_t max_header_bytes = 16 << 10;  // request line and headers; beyond: 431
  size_t max_target_bytes = 4096;      // the request target; beyond: 414
  std::chrono::milliseconds idle_timeout{60'000};    // keep-alive: waiting for a request
  std::chrono::milliseconds header_timeout{10'000};  // from its first byte to the blank line
  std::chrono::milliseconds body_timeout{30'000};    // the whole body, after the header
  std::chrono::milliseconds write_timeout{60'000};   // the whole response
  // Connection caps. Loopback clients count only toward max_connections unless
  // cap_loopback_per_ip: on loopback every client (local agents, the CLI, benchmarks) shares
  // one address, and without tokens the server listens on loopback only, so a per-address cap
  // there would be a second, smaller total cap. max_connections is also kept below the
  // process's open-file limit (RLIMIT_NOFILE), so that a full server answers 503, not EMFILE.
  size_t max_connections = 10'000;
  size_t max_connections_per_ip = 64;
  bool cap_loopback_per_ip = false;
  // Connections over a cap that may still ask for inline routes, with this idle and header
  // deadline. Beyond the reserve a connection is closed as soon as it is accepted.
  size_t reserve_connections = 32;
  std::chrono::milliseconds reserve_timeout{2'000};
  // One line per call (errors, handler exceptions); nullptr: stderr.
  std::function<void(const std::string&)> log;
};

struct ServerStats {
  size_t connections = 0;  // open now, reserve included
  size_t reserve_connections = 0;
  uint64_t accepted = 0;
  uint64_t refused_at_accept = 0;  // over every cap and the reserve: closed unread
  uint64_t over_cap_503 = 0;       // reserve connections that asked for a non-inline route
  uint64_t busy_503 = 0;           // the worker queue was full
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

  // Binds and listens (no SO_REUSEPORT: a port in use is an error). Port 0: a free port.
  // Returns the port. Connections wait in the backlog until start().
  Result<int> listen(const std::string& host, int port);
  void start();
  // Stops accepting, closes every connection, lets running handlers finish (a blocked one
  // must be woken by its owner first), joins every thread. Idempotent.
  void stop();
  int port() const { return port_; }
  ServerStats stats() const;

  struct Impl;  // the I/O side (http_server.cc, connection.cc)

 private:
  ServerOptions options_;
  Router router_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<bool> started_{false}, stopped_{false};
};

}  // namespace sluice::net
