#pragma once
// Inside net::Server: the I/O context, the acceptor, the connection registry with its caps, and
// one Connection per accepted socket. Not for use outside src/net.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/http_server.h"
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

struct Server::Impl {
  Impl(const ServerOptions& o, const Router& r);

  const ServerOptions& opts;
  const Router& router;
  size_t max_connections = 0;  // options.max_connections, kept below RLIMIT_NOFILE
  std::atomic<bool> stopping{false};

  // The registry: every live connection, and the counts the caps are checked against.
  // Declared before the io_context: a Connection destroyed with it still unregisters here.
  struct PerIp {
    size_t normal = 0, reserve = 0;
  };
  mutable std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;
  std::map<asio::ip::address, PerIp> per_ip;  // entries with a zero count are erased
  size_t normal = 0, reserve = 0;

  std::atomic<uint64_t> accepted{0}, refused_at_accept{0}, over_cap_503{0}, busy_503{0},
      timeouts{0}, handler_errors{0};
  std::atomic<bool> logged_accept_error{false};

  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  tcp::acceptor acceptor;           // on its own strand: stop() closes it from another thread
  asio::steady_timer accept_retry;  // after EMFILE: accept again a little later
  std::unique_ptr<WorkerPool> pool;
  std::vector<std::thread> io_threads;

  void do_accept();
  void on_accept(error_code ec, tcp::socket socket);
  Slot admit(const asio::ip::address& addr);
  void enroll(Connection* c, std::weak_ptr<Connection> w);
  void release(Connection* c, const asio::ip::address& addr, Slot slot);
  void close_all();
  void log(const std::string& line) const;
};

// One accepted socket, from its first byte to its close. Every member function runs on the
// connection's strand (the executor of stream_); a worker hands a response back by posting.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket, asio::ip::address addr, int port, Slot slot);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Begins on the connection's own strand (the caller runs on the acceptor's): stop() may
  // already be closing it from another I/O thread.
  void start();
  void close();  // post to the strand; stop() uses it

  struct Exchange;

 private:
  void next_request();
  void read_header();
  void on_header(error_code ec);
  void read_body();
  size_t request_body_limit() const;
  void on_read_error(error_code ec);
  void on_request();
  void dispatch(std::shared_ptr<Exchange> ex);
  void write(std::shared_ptr<Exchange> ex);
  void on_write(error_code ec, bool keep);
  void answer_error(int status, const std::string& error, bool close,
                    const std::vector<std::string>& details = {});
  void close_now();
  void linger_close();
  void linger_read();
  std::chrono::milliseconds deadline(std::chrono::milliseconds normal) const;

  Server::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  size_t body_limit_ = 0;  // of the request being read (request_body_limit)
  asio::ip::address addr_;
  int port_ = 0;
  Slot slot_;
  bool keep_alive_ = true;
  bool closed_ = false;
  size_t lingered_ = 0;
};

// Runs a route's handler; an exception becomes a 500 JSON answer and a log line.
void run_handler(Server::Impl& server, const Route& route, Request& req, Response& res);

std::string describe_bytes(size_t n);  // "1 MiB", "16 KiB", "1000 bytes"

}  // namespace sluice::net
