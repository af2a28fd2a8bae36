#pragma once
// The agent tests' fake servers: an httplib server on a free loopback port whose handlers may
// wait on cv_ (long polls, a frozen server) until shutdown() sets quit_. A derived class
// registers its handlers, then calls listen(); its destructor calls shutdown() first, so that
// no handler runs on its members once they are gone.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace sluice::agent::testing {

class LoopbackServer {
 public:
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 protected:
  LoopbackServer() = default;
  ~LoopbackServer() { shutdown(); }
  void listen() {
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    // Running before anyone may stop it: httplib's stop() before its loop started is lost, and
    // the loop would then never end.
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void shutdown() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    http_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Server http_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;

 private:
  int port_ = 0;
  std::thread thread_;
};

}  // namespace sluice::agent::testing
