// Property: on random clusters and jobs, any sequence of place+commit / release keeps the
// allocation consistent (check_invariants), never over-allocates, and place() is deterministic.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace {

using namespace sluice::testing;

Cluster random_cluster(ResourceCatalog& cat) {
  const ResourceId mig = *cat.intern("nvidia.com/mig-1g.10gb");
  Cluster c;
  c.levels = {"rack"};
  const int nodes = *rc::gen::inRange(1, 12);
  for (int n = 0; n < nodes; ++n) {
    const int gpus = *rc::gen::inRange(0, 9);
    const std::string model = *rc::gen::element<std::string>("A100", "H100");
    Node node =
        make_node("n" + std::to_string(n), gpus, model, *rc::gen::inRange<int64_t>(4000, 64000),
                  *rc::gen::inRange<int64_t>(4096, 65536), {*rc::gen::inRange(0, 3)},
                  *rc::gen::inRange(0, 3));
    if (gpus > 0 && *rc::gen::inRange(0, 4) == 0) node.gpus[0].mig = {{mig}, {mig}, {mig}};
    node.ready = *rc::gen::inRange(0, 10) != 0;
    c.nodes.push_back(std::move(node));
  }
  return c;
}

Job random_job(JobId id, ResourceId mig) {
  Job j = make_job(id, *rc::gen::inRange(1, 4), *rc::gen::inRange(0, 5), 1000,
                   *rc::gen::inRange<int64_t>(0, 16000), *rc::gen::inRange<int64_t>(0, 16384));
  PodSet& ps = j.pod_sets[0];
  if (ps.gpus == 1 && *rc::gen::arbitrary<bool>()) ps.gpu_milli = *rc::gen::inRange(1, 1000);
  if (ps.gpus == 0 && *rc::gen::inRange(0, 3) == 0)
    ps.requests[mig] = 1000 * *rc::gen::inRange(1, 3);
  ps.requests[kGpu] = int64_t{ps.gpus} * ps.gpu_milli;
  if (*rc::gen::inRange(0, 4) == 0) j.allowed_models = {"H100"};
  if (*rc::gen::inRange(0, 4) == 0)
    j.topology = {*rc::gen::inRange(0, 2), *rc::gen::arbitrary<bool>()};
  if (*rc::gen::inRange(0, 5) == 0) j.gpu_locality = GpuLocality::kRequireNvlink;
  return j;
}

RC_GTEST_PROP(PlaceProperty, InvariantsHoldAndPlacementIsDeterministic, ()) {
  ResourceCatalog cat;
  const Cluster c = random_cluster(cat);
  const ResourceId mig = *cat.find("nvidia.com/mig-1g.10gb");
  const auto policy =
      *rc::gen::element(ScoringPolicy::kBinPack, ScoringPolicy::kSpread, ScoringPolicy::kBestFit,
                        ScoringPolicy::kFgd, ScoringPolicy::kFgdPack, ScoringPolicy::kFgdMix);
  PlacerOptions opt;
  opt.resources = &cat;
  Placer placer(c, policy, opt);
  Placer twin(c, policy, opt);
  placer.set_workload({{2000, 1, 500, {}, 0.5}, {4000, 2, 1000, {}, 0.5}});
  twin.set_workload({{2000, 1, 500, {}, 0.5}, {4000, 2, 1000, {}, 0.5}});
  ClusterAlloc alloc(c);
  const NodeSet all = NodeSet::all(c);
  std::vector<std::pair<Job, Placement>> running;
  const int steps = *rc::gen::inRange(1, 40);
  for (int step = 0; step < steps; ++step) {
    const int action = *rc::gen::inRange(0, 10);
    if (action < 7 || running.empty()) {
      const Job j = random_job(static_cast<JobId>(step + 1), mig);
      const auto r = placer.place(j, all, alloc);
      const auto r2 = placer.place(j, all, alloc);
      const auto r3 = twin.place(j, all, alloc);
      RC_ASSERT(placed(r) == placed(r2));
      RC_ASSERT(placed(r) == placed(r3));
      if (!placed(r)) {
        RC_ASSERT(!failure(r).detail.empty());
        continue;
      }
      RC_ASSERT(placement(r) == placement(r2));
      RC_ASSERT(placement(r) == placement(r3));
      RC_ASSERT(static_cast<int32_t>(placement(r).pods.size()) == j.pod_count());
      for (const PodPlacement& p : placement(r).pods) {
        RC_ASSERT(alloc.ready(p.node));
        if (!j.allowed_models.empty())
          for (const GpuShare& g : p.gpus)
            RC_ASSERT(c.nodes[static_cast<size_t>(p.node)].gpus[static_cast<size_t>(g.gpu)].model ==
                      "H100");
      }
      alloc.commit(j, placement(r));
      running.emplace_back(j, placement(r));
    } else if (action < 9) {
      const size_t i = static_cast<size_t>(*rc::gen::inRange<size_t>(0, running.size()));
      alloc.release(running[i].first, running[i].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      const NodeId n = *rc::gen::inRange<NodeId>(0, alloc.node_count());
      alloc.set_ready(n, !alloc.ready(n));
    }
    std::string why;
    const bool ok = alloc.check_invariants(&why);
    RC_ASSERT(ok);  // allocated <= capacity everywhere (never over-allocates); why: see `why`
  }
  for (auto& [j, p] : running) alloc.release(j, p);
  RC_ASSERT(alloc.gpu_milli_used() == 0);
}

// Node-state grouping (fgd, fgdpack, bestfit score one node per equal static shape and free
// state) changes nothing: the Placer gives the placement that scoring every node gives. The
// reference is the same policy with a candidate cap above the node count, which disables the
// grouping. Clusters are a few node templates repeated, so many nodes share a free state; the
// templates draw capacities from small sets, so nodes of different shape (GPU model, NVLink
// layout, MIG) often have equal free CPU, memory and GPU milli too.
RC_GTEST_PROP(PlaceProperty, NodeStateGroupingPlacesLikeScoringEveryNode, ()) {
  ResourceCatalog cat;
  const ResourceId mig = *cat.intern("nvidia.com/mig-1g.10gb");
  std::vector<Node> templates;
  const int kinds = *rc::gen::inRange(1, 5);
  for (int t = 0; t < kinds; ++t) {
    Node node = make_node(
        "t", *rc::gen::element(8, 8, 4, 0), *rc::gen::element<std::string>("A100", "H100"),
        *rc::gen::element<int64_t>(64000, 64000, 16000), 65536, {}, *rc::gen::inRange(0, 3));
    if (!node.gpus.empty() && *rc::gen::inRange(0, 4) == 0) node.gpus[0].mig = {{mig}, {mig}};
    templates.push_back(std::move(node));
  }
  Cluster c;
  c.levels = {"rack"};
  const int nodes = *rc::gen::inRange(1, 40);
  for (int n = 0; n < nodes; ++n) {
    Node node = templates[*rc::gen::inRange<size_t>(0, templates.size())];
    node.name = "n" + std::to_string(n);
    node.domains = {*rc::gen::inRange(0, 3)};
    c.nodes.push_back(std::move(node));
  }
  const auto policy = *rc::gen::element(ScoringPolicy::kBestFit, ScoringPolicy::kFgd,
                                        ScoringPolicy::kFgdPack, ScoringPolicy::kFgdMix);
  PlacerOptions opt;
  opt.resources = &cat;
  PlacerOptions every = opt;
  every.max_candidates = 1 << 30;
  Placer grouped(c, policy, opt);
  Placer reference(c, policy, every);
  const std::vector<WorkloadShape> workload = {
      {2000, 1, 500, {}, 0.4}, {4000, 2, 1000, {}, 0.3}, {1000, 1, 1000, {"H100"}, 0.3}};
  grouped.set_workload(workload);
  reference.set_workload(workload);
  // End alignment (spec.alignEnds) on half the runs: the grouped search then compares nodes of
  // one state by their ends; ends from a small set so that some tie.
  std::vector<TimeNs> ends;
  const bool align = *rc::gen::arbitrary<bool>();
  if (align) {
    for (int n = 0; n < nodes; ++n) ends.push_back(*rc::gen::element<TimeNs>(0, 100, 200, 300));
    grouped.set_node_ends(&ends, 10);
    reference.set_node_ends(&ends, 10);
  }
  ClusterAlloc alloc(c);
  const NodeSet all = NodeSet::all(c);
  std::vector<std::pair<Job, Placement>> running;
  const int steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    if (*rc::gen::inRange(0, 10) < 8 || running.empty()) {
      Job j = random_job(static_cast<JobId>(step + 1), mig);
      if (align) j.walltime_ns = *rc::gen::element<TimeNs>(0, 40, 190, 290, 400);
      const auto r = grouped.place(j, all, alloc);
      const auto ref = reference.place(j, all, alloc);
      RC_ASSERT(placed(r) == placed(ref));
      if (!placed(r)) continue;
      RC_ASSERT(placement(r) == placement(ref));
      alloc.commit(j, placement(r));
      running.emplace_back(j, placement(r));
    } else {
      const size_t i = static_cast<size_t>(*rc::gen::inRange<size_t>(0, running.size()));
      alloc.release(running[i].first, running[i].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

}  // namespace
}  // namespace sluice
