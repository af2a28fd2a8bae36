// ClusterAlloc: commit/release are exact inverses, indexes follow the state.
#include <gtest/gtest.h>

#include <random>

#include "core/place/cluster_alloc.h"
#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace cluster_alloc_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace sluice::testing;

TEST(ClusterAlloc, CommitReleaseRoundTripNeverDrifts) {
  Cluster c;
  c.levels = {"rack"};
  for (int n = 0; n < 6; ++n)
    c.nodes.push_back(
        make_node("n" + std::to_string(n), n % 2 ? 8 : 4, "H100", 64000, 256 * 1024, {n / 3}));
  ClusterAlloc alloc(c);
  const ClusterAlloc fresh(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  std::mt19937_64 rng(7);
  std::vector<std::pair<Job, Placement>> running;
  for (int step = 0; step < 2000; ++step) {
    if (running.empty() || rng() % 3 != 0) {
      const int pods = 1 + static_cast<int>(rng() % 3);
      const int gpus = static_cast<int>(rng() % 4);
      const int milli = gpus == 1 && rng() % 2 ? 100 + static_cast<int>(rng() % 900) : 1000;
      Job j = make_job(static_cast<JobId>(step), pods, gpus, milli,
                       1000 + static_cast<int64_t>(rng() % 8000), 1024);
      auto r = placer.place(j, all, alloc);
      if (placed(r)) {
        alloc.commit(j, placement(r));
        running.emplace_back(j, placement(r));
      }
    } else {
      const size_t i = rng() % running.size();
      alloc.release(running[i].first, running[i].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    std::string why;
    ASSERT_TRUE(alloc.check_invariants(&why)) << "step " << step << ": " << why;
  }
  for (auto& [j, p] : running) alloc.release(j, p);
  // Everything is back exactly where it started.
  for (NodeId n = 0; n < alloc.node_count(); ++n) {
    EXPECT_EQ(alloc.cpu_free_milli(n), fresh.cpu_free_milli(n));
    EXPECT_EQ(alloc.memory_free_mib(n), fresh.memory_free_mib(n));
    EXPECT_EQ(alloc.state_hash(n), fresh.state_hash(n));
    for (int g = 0; g < alloc.gpu_count(n); ++g) EXPECT_EQ(alloc.gpu_free_milli(n, g), 1000);
  }
  EXPECT_EQ(alloc.total_whole_gpus_free(), 36);  // 3 x 4 + 3 x 8
  EXPECT_EQ(alloc.gpu_milli_used(), 0);
  EXPECT_EQ(alloc.domain_whole_free(0, 0), 16);  // nodes 0,1,2: 4 + 8 + 4
}

// Everything observable of two allocations of the same cluster is equal.
void expect_same(const ClusterAlloc& a, const ClusterAlloc& b, int round) {
  std::string why;
  ASSERT_TRUE(a.check_invariants(&why)) << "round " << round << ": " << why;
  for (NodeId n = 0; n < a.node_count(); ++n) {
    ASSERT_EQ(a.cpu_free_milli(n), b.cpu_free_milli(n)) << "round " << round << " node " << n;
    ASSERT_EQ(a.memory_free_mib(n), b.memory_free_mib(n));
    ASSERT_EQ(a.ready(n), b.ready(n));
    ASSERT_EQ(a.state_hash(n), b.state_hash(n));
    ASSERT_EQ(a.whole_gpus_free(n), b.whole_gpus_free(n));
    for (int g = 0; g < a.gpu_count(n); ++g)
      ASSERT_EQ(a.gpu_free_milli(n, g), b.gpu_free_milli(n, g));
    for (int c = 0; c <= a.max_gpus_per_node(); ++c)
      ASSERT_EQ(a.whole_eq(c).test(n), b.whole_eq(c).test(n));
    for (int k = 0; k < ClusterAlloc::kPartialBuckets; ++k)
      ASSERT_EQ(a.partial_bucket(k).test(n), b.partial_bucket(k).test(n));
  }
  ASSERT_EQ(a.total_whole_gpus_free(), b.total_whole_gpus_free());
  ASSERT_EQ(a.max_whole_gpus_free(), b.max_whole_gpus_free());
  ASSERT_EQ(a.gpu_milli_used(), b.gpu_milli_used());
  ASSERT_EQ(a.total_gpu_milli_free(), b.total_gpu_milli_free());
  for (int d = 0; d < a.domain_count(0); ++d) {
    ASSERT_EQ(a.domain_whole_free(0, d), b.domain_whole_free(0, d));
    ASSERT_EQ(a.domain_max_whole_free(0, d), b.domain_max_whole_free(0, d));
  }
}

TEST(ClusterAlloc, AssignFromCopiesOnlyWhatChangedAndEqualsAssignment) {
  Cluster c;
  c.levels = {"rack"};
  for (int n = 0; n < 8; ++n)
    c.nodes.push_back(
        make_node("n" + std::to_string(n), n % 2 ? 8 : 4, "H100", 64000, 256 * 1024, {n / 3}));
  ClusterAlloc master(c);
  ClusterAlloc work = master;  // the cycle's working copy
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  std::mt19937_64 rng(11);
  std::vector<std::pair<Job, Placement>> running;
  std::vector<std::pair<Job, Placement>> at_sync;  // running at the last assign_from
  auto random_job = [&](JobId id) {
    const int gpus = static_cast<int>(rng() % 4);
    const int milli = gpus == 1 && rng() % 2 ? 100 + static_cast<int>(rng() % 900) : 1000;
    return make_job(id, 1 + static_cast<int>(rng() % 2), gpus, milli,
                    1000 + static_cast<int64_t>(rng() % 8000), 1024);
  };
  JobId next = 1;
  for (int round = 0; round < 400; ++round) {
    // The last cycle's admissions: tried on the copy, then applied to the state, so that a
    // node changed on both sides to the same state (assign_from keeps its index entries).
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
      Job j = random_job(next++);
      auto r = placer.place(j, all, work);
      if (!placed(r)) continue;
      work.commit(j, placement(r));
      master.commit(j, placement(r));
      running.emplace_back(j, placement(r));
    }
    // The scheduler's state moves on: jobs start and end, a node fails or comes back.
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      if (running.empty() || rng() % 2) {
        Job j = random_job(next++);
        auto r = placer.place(j, all, master);
        if (placed(r)) {
          master.commit(j, placement(r));
          running.emplace_back(j, placement(r));
        }
      } else {
        const size_t i = rng() % running.size();
        master.release(running[i].first, running[i].second);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (rng() % 10 == 0) {
      const auto n = static_cast<NodeId>(rng() % c.nodes.size());
      master.set_ready(n, !master.ready(n));
    }
    // The last cycle tried things on its copy: admissions and evictions it did not keep.
    for (int k = static_cast<int>(rng() % 5); k > 0; --k) {
      Job j = random_job(next++);
      auto r = placer.place(j, all, work);
      if (placed(r)) work.commit(j, placement(r));
    }
    if (!at_sync.empty() && rng() % 2) {
      const auto& [j, p] = at_sync[rng() % at_sync.size()];
      work.release(j, p);
    }
    work.assign_from(master);
    at_sync = running;
    const ClusterAlloc plain = master;
    expect_same(work, plain, round);
  }
}

TEST(ClusterAlloc, IndexesFollowCommits) {
  Cluster c;
  c.nodes.push_back(make_node("a", 4));
  ClusterAlloc alloc(c);
  EXPECT_TRUE(alloc.whole_eq(4).test(0));
  Placement p;
  p.pods.push_back({0, 0, 0, {{2, -1, 250}}});
  const Job j = make_job(1, 1, 1, 250);
  alloc.commit(j, p);
  EXPECT_TRUE(alloc.whole_eq(3).test(0));
  EXPECT_TRUE(alloc.partial_bucket(7).test(0));  // 750 free -> bucket 7
  EXPECT_EQ(alloc.gpu_free_milli(0, 2), 750);
  alloc.release(j, p);
  EXPECT_TRUE(alloc.whole_eq(4).test(0));
  EXPECT_FALSE(alloc.partial_bucket(7).test(0));
}

// idle_bits: ready nodes with nothing taken (the grouped search skips all but the first idle
// node of a static class). A pod of CPU only takes the node out of it as much as a GPU does.
TEST(ClusterAlloc, IdleBitsFollowCommitsAndReadiness) {
  Cluster c;
  c.nodes.push_back(make_node("a", 4));
  c.nodes.push_back(make_node("b", 4));
  ClusterAlloc alloc(c);
  EXPECT_TRUE(alloc.idle_bits().test(0));
  EXPECT_TRUE(alloc.idle_bits().test(1));
  Placement gpu;
  gpu.pods.push_back({0, 0, 0, {{1, -1, 1000}}});
  const Job j = make_job(1, 1, 1, 1000);
  alloc.commit(j, gpu);
  EXPECT_FALSE(alloc.idle_bits().test(0));
  alloc.release(j, gpu);
  EXPECT_TRUE(alloc.idle_bits().test(0));
  Placement cpu;
  cpu.pods.push_back({0, 0, 0, {}});
  Job cpu_only = make_job(2, 1, 0, 1000);
  alloc.commit(cpu_only, cpu);
  EXPECT_FALSE(alloc.idle_bits().test(0));
  alloc.release(cpu_only, cpu);
  alloc.set_ready(1, false);
  EXPECT_FALSE(alloc.idle_bits().test(1));
  alloc.set_ready(1, true);
  EXPECT_TRUE(alloc.idle_bits().test(0));
  EXPECT_TRUE(alloc.idle_bits().test(1));
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

}  // namespace
}  // namespace cluster_alloc_test
}  // namespace sluice
