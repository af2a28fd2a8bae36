#pragma once
// Inside net::Server: the I/O context, the acceptor, the connection registry with its caps, and
// one Connection per accepted socket. Not for use outside src/net.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/http_server.h"
#include "net/request_reader.h"
#include "net/worker_pool.h"

namespace sluice::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

class Connection;

// Where an accepted connection stands against the caps.
enum class Slot { kNormal, kReserve, kRefused };

using Clock = std::chrono::steady_clock;
constexpr int64_t kNever = INT64_MAX;
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

struct Server::Impl {
  Impl(const ServerOptions& o, const Router& r);

  const ServerOptions& opts;
  const Router& router;
  size_t max_connections = 0;  // options.max_connections, kept below RLIMIT_NOFILE
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};
  std::function<void()> on_drained;  // set by drain() before `draining`; run once

  // The registry: every live connection, and the counts the caps are checked against.
  // Declared before the io_context: a Connection destroyed with it still unregisters here.
  struct PerIp {
    size_t normal = 0, reserve = 0;
  };
  mutable std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;
  std::map<asio::ip::address, PerIp> per_ip;  // entries with a zero count are erased
  size_t normal = 0, reserve = 0;

  std::atomic<uint64_t> accepted{0}, refused_at_accept{0}, over_cap_total{0}, over_cap_per_ip{0},
      over_cap_503{0}, busy_503{0}, timeouts{0}, handler_errors{0};
  std::atomic<bool> logged_accept_error{false};

  // A tenant's place among its requests in flight, given back when the last copy goes (with
  // the request's Exchange, once its answer is written or its connection is gone).
  struct TenantTicket {
    TenantTicket(Impl& i, std::string k) : impl(i), key(std::move(k)) {}
    TenantTicket(const TenantTicket&) = delete;
    TenantTicket& operator=(const TenantTicket&) = delete;
    ~TenantTicket() { impl.leave_tenant(key); }
    Impl& impl;
    const std::string key;
  };
  // nullptr when the tenant has tenant_max_in_flight requests already.
  std::shared_ptr<const TenantTicket> enter_tenant(std::string key);
  void leave_tenant(const std::string& key);
  // The pool of a route's lane (the default one for an unknown name).
  WorkerPool* pool_for(const std::string& lane) const;

  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  tcp::acceptor acceptor;            // on its own strand: stop() closes it from another thread
  asio::steady_timer accept_retry;   // after EMFILE: accept again a little later
  asio::steady_timer sweep_timer;    // every connection's deadline, on the acceptor's strand
  bool sweep_armed = false;          // on the acceptor's strand: off while no connection is open
  std::unique_ptr<WorkerPool> pool;  // the default lane
  std::map<std::string, std::unique_ptr<WorkerPool>> lanes;  // ServerOptions::lanes
  // Requests in flight per tenant (entries with a zero count are erased).
  std::mutex tenants_mu;
  std::unordered_map<std::string, size_t> tenants_in_flight;
  std::atomic<uint64_t> tenant_429{0};
  std::vector<std::thread> io_threads;

  void do_accept();
  void on_accept(error_code ec, tcp::socket socket);
  void refuse(tcp::socket& socket);
  Slot admit(const asio::ip::address& addr);
  void enroll(Connection* c, std::weak_ptr<Connection> w);
  void release(Connection* c, const asio::ip::address& addr, Slot slot);
  std::vector<std::shared_ptr<Connection>> live() const;
  void close_all();
  void sweep();
  void start_drain();
  void log(const std::string& line) const;
  // An error the stack answers itself, in opts.error_format's shape.
  void set_stack_error(Response& res, int status, std::string_view reason, const std::string& error,
                       const std::vector<std::string>& details = {}) const;
  // A connection's executor: its own strand with several I/O threads, else the io_context's.
  asio::any_io_executor connection_executor();
};

// A request and its answer, shared by the connection and whoever runs the handler.
struct Exchange {
  Request req;
  Response res;
  const Route* route = nullptr;
  std::shared_ptr<const Server::Impl::TenantTicket> tenant;  // null: no tenant
  bool head = false;
  bool keep_alive = true;
};

// Shared by a Responder's copies. The connection and the exchange are given up with the answer,
// so that a Responder kept afterwards pins neither (nor the connection's place under the caps).
struct Responder::State {
  State(std::shared_ptr<Connection> c, std::shared_ptr<Exchange> e)
      : conn(std::move(c)), ex(std::move(e)) {}
  ~State();  // unanswered: 500
  // Once: the connection and the exchange, for the answer (nullptr when answered before).
  std::pair<std::shared_ptr<Connection>, std::shared_ptr<Exchange>> take() {
    std::lock_guard lk(mu);
    return {std::move(conn), std::move(ex)};
  }
  std::shared_ptr<Connection> connection() const {
    std::lock_guard lk(mu);
    return conn;
  }
  // Both, left in place (nullptr when answered before).
  std::pair<std::shared_ptr<Connection>, std::shared_ptr<Exchange>> peek() const {
    std::lock_guard lk(mu);
    return {conn, ex};
  }

  mutable std::mutex mu;
  std::shared_ptr<Connection> conn;
  std::shared_ptr<Exchange> ex;
};

// A streamed answer's connection (Stream): ended once, by end() or when the last copy goes.
struct Stream::State {
  explicit State(std::shared_ptr<Connection> c) : conn(std::move(c)) {}
  ~State();
  std::shared_ptr<Connection> conn;
  std::atomic<bool> ended{false};
};

// One accepted socket, from its first byte to its close. Every member function runs on the
// connection's executor (its strand); a worker or a Responder hands an answer back by posting.
// Deadlines: arm() sets one for the current phase, the server's sweep posts on_deadline() once
// it has passed.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase : uint8_t { kIdle, kHeader, kBody, kHandler, kWrite, kLinger };

  Connection(Server::Impl& server, tcp::socket socket, asio::ip::address addr, int port, Slot slot);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Begins on the connection's own strand (the caller runs on the acceptor's): stop() may
  // already be closing it from another I/O thread.
  void start();
  void close();          // post to the strand; stop() uses it
  void close_if_idle();  // post to the strand; drain() uses it
  int64_t deadline_ns() const { return deadline_ns_.load(std::memory_order_relaxed); }
  void post_deadline();  // the sweep found the deadline passed

  // For Responder (any thread): the answer, a close, a disconnect watch.
  static void answer(std::shared_ptr<Connection> self, std::shared_ptr<Exchange> ex);
  void abandon();
  void watch(std::function<void()> on_close);
  bool server_stopping() const { return server_.stopping; }
  // Any thread: a job for the worker pool (false: the queue is full or stopping), and the 503
  // that answers a request refused for that.
  bool to_worker(std::function<void()> job, const Exchange& ex);
  void set_busy(Response& res) const;
  void run_job(const std::shared_ptr<Exchange>& ex, Responder::State& state,
               const std::function<void()>& job);     // on the worker
  void lost_responder(std::shared_ptr<Exchange> ex);  // a 500 and a log line
  // A streamed answer (connection_stream.cc), any thread: the head, then chunks in order; the
  // last chunk (`last`) closes the connection once written. False: the connection is closed
  // (the client left, or fell Stream::kMaxQueuedBytes behind).
  void stream_start(std::shared_ptr<Exchange> ex);
  bool stream_push(std::string data, bool last);
  bool gone() const { return gone_.load(std::memory_order_relaxed); }
  size_t stream_queued() const { return stream_bytes_.load(std::memory_order_relaxed); }

 private:
  void arm(Phase p, std::chrono::milliseconds timeout);
  void disarm(Phase p);
  void on_deadline();
  void next_request();
  void on_bytes();
  void read_header();
  void on_header(error_code ec);
  void read_body();
  size_t request_body_limit() const;
  bool enter_tenant();
  void on_read_error(error_code ec);
  void on_request();
  void dispatch(std::shared_ptr<Exchange> ex);
  void run_async(std::shared_ptr<Exchange> ex);
  void write(std::shared_ptr<Exchange> ex);
  void on_write(error_code ec, bool keep);
  void answer_error(int status, std::string_view reason, const std::string& error, bool close,
                    const std::vector<std::string>& details = {});
  void answer_over_cap(std::shared_ptr<Exchange> ex);
  void stop_watch();
  void close_now();
  void stream_write_next();
  void stream_read();
  void linger_close();
  void linger_read();
  std::chrono::milliseconds deadline(std::chrono::milliseconds normal) const;

  Server::Impl& server_;
  tcp::socket socket_;
  RequestReader reader_;  // the buffer and the parser of the request being read
  std::shared_ptr<const Server::Impl::TenantTicket> tenant_;  // of the request being read
  std::string out_head_;
  asio::ip::address addr_;
  std::string addr_text_;
  int port_ = 0;
  Slot slot_;
  Phase phase_ = Phase::kIdle;
  std::atomic<int64_t> deadline_ns_{kNever};
  bool timed_out_ = false;  // the sweep cut the current phase short
  bool closed_ = false;
  bool watching_ = false;
  uint64_t watch_gen_ = 0;
  std::function<void()> on_close_;
  size_t lingered_ = 0;
  // A streamed answer's queue (on the strand) and its size (any thread).
  std::deque<std::string> stream_q_;
  bool stream_writing_ = false;
  bool stream_chunked_ = true;  // HTTP/1.0: the body ends with the connection instead
  std::atomic<size_t> stream_bytes_{0};
  std::atomic<bool> gone_{false};  // closed_, for other threads
};

// Runs a route's handler; an exception becomes a 500 JSON answer and a log line.
void run_handler(Server::Impl& server, const Route& route, Request& req, Response& res);

}  // namespace sluice::net
