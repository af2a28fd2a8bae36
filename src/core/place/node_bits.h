#pragma once
// A fixed-size bitmap over NodeIds. The placement indexes are sets of nodes (nodes with k free
// GPUs, ready nodes, nodes of a model, ...); intersecting them word by word (64 nodes at a time)
// is what keeps a search over 5,000 nodes in the microseconds.
#include <bit>
#include <cstdint>
#include <vector>

#include "core/model/cluster.h"

namespace sluice {

class NodeBits {
 public:
  NodeBits() = default;
  explicit NodeBits(int32_t nodes)
      : nodes_(nodes), words_((static_cast<size_t>(nodes) + 63) / 64) {}

  int32_t size() const { return nodes_; }
  int32_t word_count() const { return static_cast<int32_t>(words_.size()); }
  uint64_t word(int32_t i) const { return words_[static_cast<size_t>(i)]; }
  uint64_t& word(int32_t i) { return words_[static_cast<size_t>(i)]; }
  const uint64_t* data() const { return words_.data(); }

  bool test(NodeId n) const { return (words_[static_cast<size_t>(n) >> 6] >> (n & 63)) & 1U; }
  void set(NodeId n) { words_[static_cast<size_t>(n) >> 6] |= uint64_t{1} << (n & 63); }
  void reset(NodeId n) { words_[static_cast<size_t>(n) >> 6] &= ~(uint64_t{1} << (n & 63)); }
  void assign(NodeId n, bool v) { v ? set(n) : reset(n); }
  void clear() {
    for (auto& w : words_) w = 0;
  }
  int32_t count() const {
    int32_t c = 0;
    for (auto w : words_) c += std::popcount(w);
    return c;
  }
  bool any() const {
    for (auto w : words_)
      if (w) return true;
    return false;
  }
  NodeBits& operator&=(const NodeBits& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= o.words_[i];
    return *this;
  }
  NodeBits& operator|=(const NodeBits& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }
  bool operator==(const NodeBits&) const = default;

  // Calls f(NodeId) for every set bit in ascending order; f returns false to stop.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      uint64_t w = words_[i];
      while (w) {
        const NodeId n = static_cast<NodeId>(i * 64 + static_cast<size_t>(std::countr_zero(w)));
        w &= w - 1;
        if (!f(n)) return;
      }
    }
  }

 private:
  int32_t nodes_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace sluice
