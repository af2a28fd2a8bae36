// PooledSet (core/cycle/pooled_set.h): an ordered set like std::set, whose nodes are packed in a
// pool of its own even while the rest of the program allocates in between (what a cycle's walk
// over the pending orders relies on), and that keeps its elements when moved.
#include "core/cycle/pooled_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace sluice {
namespace pooled_set_test {
namespace {

std::vector<int> contents(const PooledSet<int>& s) {
  return {s.begin(), s.end()};
}

TEST(PooledSet, OrdersInsertsAndErasesAsStdSetDoes) {
  PooledSet<int> pooled;
  std::set<int> plain;
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 2000; ++i) {
      const int v = static_cast<int>(rng() % 5000);
      EXPECT_EQ(pooled.insert(v).second, plain.insert(v).second);
    }
    for (int i = 0; i < 1500; ++i) {
      const int v = static_cast<int>(rng() % 5000);
      EXPECT_EQ(pooled.erase(v), plain.erase(v));
    }
    ASSERT_EQ(contents(pooled), std::vector<int>(plain.begin(), plain.end()));
  }
}

TEST(PooledSet, NodesStayPackedWhileTheHeapIsUsedInBetween) {
  PooledSet<int64_t> pooled;
  std::vector<std::unique_ptr<char[]>> between;  // a pending job's record and strings, say
  constexpr int kN = 4096;
  for (int i = 0; i < kN; ++i) {
    pooled.insert(i);
    between.push_back(std::make_unique<char[]>(1024));
  }
  // Distance between the nodes of consecutive elements: with nodes from the general heap each
  // would lie past its 1 KiB neighbour; from the pool, nearly all are next to each other.
  std::vector<uintptr_t> gaps;
  const int64_t* prev = nullptr;
  for (const int64_t& v : pooled) {
    if (prev) {
      const auto a = reinterpret_cast<uintptr_t>(prev), b = reinterpret_cast<uintptr_t>(&v);
      gaps.push_back(a < b ? b - a : a - b);
    }
    prev = &v;
  }
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() * 9 / 10),
                   gaps.end());
  EXPECT_LT(gaps[gaps.size() * 9 / 10], 256u) << "90% of consecutive nodes within 256 bytes";
}

TEST(PooledSet, KeepsItsElementsWhenMovedAndStaysUsable) {
  std::vector<PooledSet<int>> sets(2);
  for (int i = 0; i < 100; ++i) sets[static_cast<size_t>(i % 2)].insert(i);
  sets.resize(50);  // moves the first two into a new buffer
  sets[0].insert(-1);
  sets[1].erase(99);
  EXPECT_EQ(sets[0].size(), 51u);
  EXPECT_EQ(*sets[0].begin(), -1);
  EXPECT_EQ(sets[1].size(), 49u);
  EXPECT_EQ(*sets[1].rbegin(), 97);
  EXPECT_TRUE(sets[49].empty());
}

}  // namespace
}  // namespace pooled_set_test
}  // namespace sluice
