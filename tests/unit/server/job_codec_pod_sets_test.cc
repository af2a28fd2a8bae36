// Admissions in the durable store (server/job_codec.h): flavors per pod set survive a round
// trip, and records written before they existed still load.
#include "server/job_codec.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

Config two_flavors() {
  Config c;
  c.flavors.push_back(ResourceFlavor{.name = "on-demand"});
  c.flavors.push_back(ResourceFlavor{.name = "spot"});
  ClusterQueue cq;
  cq.name = "cq";
  c.cluster_queues.push_back(cq);
  Node n;
  n.name = "n1";
  c.cluster.nodes.push_back(n);
  return c;
}

TEST(JobCodec, PodSetFlavorsRoundTrip) {
  const Config c = two_flavors();
  Admission a;
  a.queue = 0;
  a.flavors = {0};
  a.pod_set_flavors = {{0}, {1}};  // launcher on-demand, workers spot
  a.usage = {{0, kGpu, 8000}, {1, kGpu, 16000}};
  a.placement.pods = {{0, 0, 0, {}}, {0, 1, 0, {}}, {0, 1, 1, {}}};
  const auto j = nlohmann::json::parse(encode_admission(a, c));
  EXPECT_EQ(j["pod_set_flavors"], nlohmann::json::parse(R"([["on-demand"], ["spot"]])"));
  auto back = decode_admission(j, c);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->pod_set_flavors, a.pod_set_flavors);
  EXPECT_EQ(back->flavors, a.flavors);
  EXPECT_EQ(back->usage, a.usage);
}

TEST(JobCodec, SingleFlavorRecordsHaveNoPodSetFlavors) {
  const Config c = two_flavors();
  Admission a;
  a.flavors = {1};
  a.usage = {{1, kGpu, 1000}};
  a.placement.pods = {{0, 0, 0, {}}};
  auto j = nlohmann::json::parse(encode_admission(a, c));
  EXPECT_FALSE(j.contains("pod_set_flavors"));  // as records written before they existed
  auto back = decode_admission(j, c);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->pod_set_flavors.empty());
  EXPECT_EQ(back->flavors_of(3), std::vector<FlavorId>{1});  // every pod set: the one flavor
  // A flavor that no longer exists is an error that names it.
  j["pod_set_flavors"] = nlohmann::json::parse(R"([["gone"]])");
  auto bad = decode_admission(j, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("\"gone\""), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace sluice::server
