#pragma once
// A value shared between copies until one of them changes it (copy on write), in one pointer:
// what a job carries for the server and the agents but the core never reads (job_exec.h). A
// copy of a Job (a running record, a fallback reshape, a what-if) then shares it instead of
// copying its strings, and a job without any costs a null pointer. Eight bytes where a
// std::shared_ptr takes sixteen: the scheduler keeps one per pending job.
#include <atomic>
#include <cstdint>
#include <utility>

namespace sluice {

template <class T>
class SharedBox {
 public:
  SharedBox() = default;
  SharedBox(const SharedBox& o) noexcept : p_(o.p_) {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedBox(SharedBox&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  SharedBox& operator=(SharedBox o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~SharedBox() { drop(); }

  // The value; a default one (shared by every empty box) when none was set.
  const T& get() const {
    static const T kNone{};
    return p_ ? p_->value : kNone;
  }
  // The value to change: this box's own (copied first when another box shares it).
  T& mut() {
    if (!p_) {
      p_ = new Node();
    } else if (p_->refs.load(std::memory_order_acquire) != 1) {
      Node* own = new Node(p_->value);
      drop();
      p_ = own;
    }
    return p_->value;
  }
  // Whether another box shares this one's value (tests).
  bool shared() const { return p_ && p_->refs.load(std::memory_order_acquire) > 1; }
  bool empty() const { return p_ == nullptr; }

 private:
  struct Node {
    Node() = default;
    explicit Node(const T& v) : value(v) {}
    std::atomic<int32_t> refs{1};
    T value;
  };
  void drop() {
    if (p_ && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  Node* p_ = nullptr;
};

}  // namespace sluice
