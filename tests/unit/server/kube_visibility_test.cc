// Kueue's visibility API (server/http/kube_visibility.h): the PendingWorkloadsSummary of a
// queue in sluice's order, positions in the ClusterQueue and the LocalQueue, offset and limit,
// a member's view, and the query's refusals.
#include "server/http/kube_visibility.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_visibility_test {

using nlohmann::json;

std::vector<kube::PendingEntry> queue() {
  // The ClusterQueue's order: a (lq-a in ns a), b (lq-b in ns b), c (lq-a), d (lq-a).
  return {{"job-a-1", "a", "lq", 5, "2026-01-01T00:00:00Z"},
          {"job-b-2", "b", "lq", 0, nullptr},
          {"job-c-3", "a", "lq", 0, nullptr},
          {"job-d-4", "a", "lq", -1, nullptr}};
}

const auto everyone = [](const std::string&) { return true; };

net::Request ask(net::Fields params) {
  net::Request r;
  r.method = "GET";
  r.params = std::move(params);
  return r;
}

TEST(KubeVisibility, ListsAClusterQueueInOrderWithBothPositions) {
  const json s = kube::pending_workloads_summary(queue(), "", "", {}, everyone);
  EXPECT_EQ(s["kind"], "PendingWorkloadsSummary");
  EXPECT_EQ(s["apiVersion"], "visibility.kueue.x-k8s.io/v1beta1");
  ASSERT_EQ(s["items"].size(), 4u);
  const json& c = s["items"][2];
  EXPECT_EQ(c["metadata"]["name"], "job-c-3");
  EXPECT_EQ(c["metadata"]["namespace"], "a");
  EXPECT_EQ(c["localQueueName"], "lq");
  EXPECT_EQ(c["positionInClusterQueue"], 2);
  EXPECT_EQ(c["positionInLocalQueue"], 1);  // a's lq: job-a-1 is ahead
  EXPECT_EQ(s["items"][0]["priority"], 5);
  EXPECT_EQ(s["items"][0]["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(s["items"][1]["positionInLocalQueue"], 0);  // b's lq is another queue
}

TEST(KubeVisibility, ALocalQueueShowsItsOwnWithTheirClusterQueuePositions) {
  const json s = kube::pending_workloads_summary(queue(), "a", "lq", {}, everyone);
  ASSERT_EQ(s["items"].size(), 3u);
  EXPECT_EQ(s["items"][2]["metadata"]["name"], "job-d-4");
  EXPECT_EQ(s["items"][2]["positionInClusterQueue"], 3);
  EXPECT_EQ(s["items"][2]["positionInLocalQueue"], 2);
}

TEST(KubeVisibility, PagesByOffsetAndLimit) {
  const json s =
      kube::pending_workloads_summary(queue(), "a", "lq", {.offset = 1, .limit = 1}, everyone);
  ASSERT_EQ(s["items"].size(), 1u);
  EXPECT_EQ(s["items"][0]["metadata"]["name"], "job-c-3");
  EXPECT_TRUE(
      kube::pending_workloads_summary(queue(), "", "", {.offset = 9, .limit = 5}, everyone)["items"]
          .empty());
}

TEST(KubeVisibility, AMemberSeesItsNamespacesWorkloadsAtTheirTruePositions) {
  const auto only_b = [](const std::string& ns) { return ns == "b"; };
  const json s = kube::pending_workloads_summary(queue(), "", "", {}, only_b);
  ASSERT_EQ(s["items"].size(), 1u);
  EXPECT_EQ(s["items"][0]["metadata"]["name"], "job-b-2");
  EXPECT_EQ(s["items"][0]["positionInClusterQueue"], 1);
}

TEST(KubeVisibility, ReadsOffsetAndLimitAndRefusesOthers) {
  kube::PendingPage p;
  EXPECT_EQ(kube::read_pending_query(ask({{"offset", "3"}, {"limit", "5000"}}), p), "");
  EXPECT_EQ(p.offset, 3);
  EXPECT_EQ(p.limit, kube::kMaxPendingPage);
  for (const char* bad : {"-1", "x", "", "1e3", "99999999999999999999"}) {
    kube::PendingPage q;
    EXPECT_NE(kube::read_pending_query(ask({{"limit", bad}}), q), "") << bad;
    EXPECT_NE(kube::read_pending_query(ask({{"offset", bad}}), q), "") << bad;
  }
}

}  // namespace kube_visibility_test
}  // namespace sluice::server
