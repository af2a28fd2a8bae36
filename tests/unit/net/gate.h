#pragma once
// A gate that jobs or handlers wait at until the test opens it (the net tests hold workers busy
// with it, then look at what the server does meanwhile).
#include <atomic>
#include <condition_variable>
#include <mutex>

namespace sluice::net::test {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> waiting{0};  // how many have arrived
  void pass() {
    ++waiting;
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};

}  // namespace sluice::net::test
