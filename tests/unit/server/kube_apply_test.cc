// Server-side apply of a Kueue object (server/http/kube_apply.h): field managers, conflicts,
// force, and the fields a manager stops applying.
#include "server/http/kube_apply.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_apply_test {

using nlohmann::json;

json cq(json spec) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
          {"kind", "ClusterQueue"},
          {"metadata", {{"name", "cq"}}},
          {"spec", std::move(spec)}};
}

const json& entry_of(const json& object, const std::string& manager) {
  for (const auto& e : object["metadata"]["managedFields"])
    if (e["manager"] == manager) return e;
  static const json none;
  return none;
}

TEST(KubeApply, CreatesAndRecordsTheManagersFields) {
  auto r = kube::server_side_apply(nullptr, cq({{"cohort", "all"}, {"resourceGroups", {1, 2}}}),
                                   "a", false, "t1");
  ASSERT_TRUE(r.conflicts.empty());
  EXPECT_EQ(r.object["spec"]["cohort"], "all");
  const json& e = entry_of(r.object, "a");
  EXPECT_EQ(e["operation"], "Apply");
  EXPECT_EQ(e["time"], "t1");
  EXPECT_EQ(e["apiVersion"], "kueue.x-k8s.io/v1beta1");
  EXPECT_EQ(
      e["fieldsV1"],
      json({{"f:spec", {{"f:cohort", json::object()}, {"f:resourceGroups", json::object()}}}}));
}

TEST(KubeApply, AnotherManagersFieldWithAnotherValueConflictsUnlessForced) {
  const json live =
      kube::server_side_apply(nullptr, cq({{"cohort", "all"}}), "a", false, "t1").object;
  // Another field, or the same value: no conflict, both own what they applied.
  auto r = kube::server_side_apply(live, cq({{"cohort", "all"}, {"stopPolicy", "Hold"}}), "b",
                                   false, "t2");
  ASSERT_TRUE(r.conflicts.empty());
  EXPECT_EQ(r.object["metadata"]["managedFields"].size(), 2u);
  EXPECT_EQ(r.object["spec"]["stopPolicy"], "Hold");
  // Another value of a's field: a conflict that names a and the field; nothing changes.
  r = kube::server_side_apply(live, cq({{"cohort", "other"}}), "b", false, "t2");
  ASSERT_EQ(r.conflicts.size(), 1u);
  EXPECT_EQ(r.conflicts[0].manager, "a");
  EXPECT_EQ(r.conflicts[0].field, ".spec.cohort");
  EXPECT_TRUE(r.object.is_null());
  // Forced, b takes it over.
  r = kube::server_side_apply(live, cq({{"cohort", "other"}}), "b", true, "t2");
  ASSERT_TRUE(r.conflicts.empty());
  EXPECT_EQ(r.object["spec"]["cohort"], "other");
  EXPECT_TRUE(entry_of(r.object, "a").is_null());  // a owns nothing any more
  EXPECT_EQ(entry_of(r.object, "b")["fieldsV1"],
            json({{"f:spec", {{"f:cohort", json::object()}}}}));
}

TEST(KubeApply, AFieldNoLongerAppliedGoesUnlessAnotherManagerOwnsIt) {
  json live = kube::server_side_apply(nullptr, cq({{"cohort", "all"}, {"stopPolicy", "Hold"}}), "a",
                                      false, "t1")
                  .object;
  live = kube::server_side_apply(live, cq({{"stopPolicy", "Hold"}}), "b", false, "t2").object;
  auto r = kube::server_side_apply(live, cq(json::object()), "a", false, "t3");
  ASSERT_TRUE(r.conflicts.empty());
  EXPECT_FALSE(r.object["spec"].contains("cohort"));  // a's alone: gone
  EXPECT_EQ(r.object["spec"]["stopPolicy"], "Hold");  // b owns it too: stays
}

TEST(KubeApply, TheSameApplyAgainChangesNothing) {
  const json live =
      kube::server_side_apply(nullptr, cq({{"cohort", "all"}}), "a", false, "t1").object;
  auto r = kube::server_side_apply(live, cq({{"cohort", "all"}}), "a", false, "t2");
  ASSERT_TRUE(r.conflicts.empty());
  EXPECT_EQ(r.object, live);  // not even the time
  r = kube::server_side_apply(live, cq({{"cohort", "b"}}), "a", false, "t2");
  EXPECT_EQ(entry_of(r.object, "a")["time"], "t2");
}

}  // namespace kube_apply_test
}  // namespace sluice::server
