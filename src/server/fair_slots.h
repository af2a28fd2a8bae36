#pragma once
// Slots for costly work that callers share (parsing a submission: up to ~100 MB of parse trees
// each): at most `total` at once, and at most `per_key` of them held by one caller, so that a
// caller with many requests in flight leaves the other slots to everyone else (issue 41).
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::server {

class FairSlots {
 public:
  FairSlots(size_t total, size_t per_key) : total_(total), per_key_(per_key) {}

  class Held {
   public:
    Held(FairSlots& s, std::string key) : s_(s), key_(std::move(key)) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() { s_.release(key_); }

   private:
    FairSlots& s_;
    std::string key_;
  };

  // Blocks until a slot is free for `key`. The returned object gives it back.
  [[nodiscard]] Held acquire(const std::string& key) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] {
      auto it = held_.find(key);
      return used_ < total_ && (it == held_.end() || it->second < per_key_);
    });
    ++used_;
    ++held_[key];
    return Held(*this, key);
  }

 private:
  void release(const std::string& key) {
    {
      std::lock_guard lk(mu_);
      --used_;
      auto it = held_.find(key);
      if (it != held_.end() && --it->second == 0) held_.erase(it);
    }
    cv_.notify_all();
  }

  const size_t total_, per_key_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t used_ = 0;
  std::unordered_map<std::string, size_t> held_;
};

}  // namespace sluice::server
