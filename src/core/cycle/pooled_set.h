#pragma once
// An ordered set whose nodes come from a pool of its own: the scheduler's per-queue orders of
// pending jobs (scheduler.h). A full cycle walks every queue's order, one node per pending job;
// with nodes from the general heap they lie between each job's far larger allocations (its
// record, strings and pod sets), about one node per 1 KiB, and the walk was bound by cache and
// TLB misses on them (std::_Rb_tree_increment was 40% of a full cycle over 100,000 pending jobs
// in bench/preempt_bench). From a pool they are packed 64 to a 4 KiB page. The pool keeps freed
// nodes for reuse and returns its memory when the set is destroyed.
#include <memory>
#include <memory_resource>
#include <set>

namespace sluice {

namespace pooled_set_detail {
// Constructed before the set that allocates from it, destroyed after it. Chunks of at most
// 256 nodes (16 KiB of 64-byte nodes, still packed page by page): the pool's default chunks
// double without bound, and the last one of a queue holding 5,000 jobs was half empty (40 of
// the 150 bytes these sets took per pending job in bench/cycle_bench).
struct PoolHolder {
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> pool =
      std::make_unique<std::pmr::unsynchronized_pool_resource>(
          std::pmr::pool_options{.max_blocks_per_chunk = 256, .largest_required_pool_block = 0});
};
}  // namespace pooled_set_detail

template <class T, class Compare = std::less<T>>
class PooledSet : private pooled_set_detail::PoolHolder, public std::pmr::set<T, Compare> {
 public:
  PooledSet() : PoolHolder(), std::pmr::set<T, Compare>(pool.get()) {}
  // Moving keeps the nodes in the moved pool (the set's allocator travels with it).
  PooledSet(PooledSet&&) noexcept = default;
  PooledSet(const PooledSet&) = delete;
  PooledSet& operator=(const PooledSet&) = delete;
  PooledSet& operator=(PooledSet&&) = delete;
};

}  // namespace sluice
