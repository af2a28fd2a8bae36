#pragma once
// A stand-in for the HTTP surface of `sluice serve` in the client tests: canned replies in the
// shapes docs/api.md fixes, and a record of every request so tests can check what the client
// sent. Listens on an ephemeral loopback port.
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::cli::testing {

struct Seen {
  std::string method, path, body, content_type, authorization;
  httplib::Params params;
};

class FakeServer {
 public:
  // Binds a port now (so url() is known); serves from start(), after the routes are added.
  FakeServer() { port_ = server_.bind_to_any_port("127.0.0.1"); }

  void start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() only shuts the socket down once the loop runs (is_running), so a server stopped
    // before its thread got going would block in accept() forever. Bounded: 30 s, slow CI.
    for (int i = 0; i < 3000 && !server_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~FakeServer() { stop(); }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  // Closes the port (a later connection is refused). A server never started is started first:
  // httplib closes its listening socket only from the serving loop. Once only: started again
  // (by the destructor after an explicit stop), the loop would end at once, and start() could
  // miss its moment of is_running() and wait out its 30 s.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    start();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  // Routes. Each records the request before its handler runs, so the record exists by the time
  // the client has the reply (httplib's logger runs only after the reply is sent).
  void get(const std::string& pattern, httplib::Server::Handler handler) {
    server_.Get(pattern, recorded(std::move(handler)));
  }
  void post(const std::string& pattern, httplib::Server::Handler handler) {
    server_.Post(pattern, recorded(std::move(handler)));
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard lk(mu_);
    return seen_;
  }
  Seen last() {
    std::lock_guard lk(mu_);
    return seen_.empty() ? Seen{} : seen_.back();
  }

 private:
  httplib::Server::Handler recorded(httplib::Server::Handler handler) {
    return
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          {
            std::lock_guard lk(mu_);
            seen_.push_back({req.method, req.path, req.body, req.get_header_value("Content-Type"),
                             req.get_header_value("Authorization"), req.params});
          }
          handler(req, res);
        };
  }

  httplib::Server server_;
  std::thread thread_;  // the serving loop once started
  int port_ = 0;
  bool stopped_ = false;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

}  // namespace sluice::cli::testing
