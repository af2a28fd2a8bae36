// Kueue's configuration objects written through the Kubernetes API
// (server/http/kube_config_docs.h): the configuration's text as documents, bodies and patches
// into the stored document, resourceVersions, the loader's errors as causes.
#include "server/http/kube_config_docs.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_config_docs_test {

using nlohmann::json;

constexpr const char* kText = R"(# source: cluster.yaml
apiVersion: sluice.dev/v1alpha1
kind: Cluster
nodes: []
---
# the flavor everyone uses
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  name: user-queue
spec:
  clusterQueue: cq
---
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 9}]}]
)";

TEST(KubeConfigDocs, SplitsTheTextIntoDocumentsAndJoinsItBack) {
  const auto docs = kube::split_config(kText);
  ASSERT_EQ(docs.size(), 4u);   // the empty document between two markers is dropped
  EXPECT_EQ(docs[0].kind, "");  // not a Kueue object
  EXPECT_EQ(docs[0].first_line, 1);
  EXPECT_EQ(docs[1].kind, "ResourceFlavor");
  EXPECT_EQ(docs[1].name, "default-flavor");
  EXPECT_EQ(docs[1].first_line, 5);
  EXPECT_EQ(docs[2].kind, "LocalQueue");
  EXPECT_EQ(docs[2].ns, "default");  // a LocalQueue without a namespace is the default's
  EXPECT_EQ(docs[3].name, "cq");
  EXPECT_EQ(docs[3].first_line, 19);
  EXPECT_EQ(
      docs[3].object["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"], 9);
  const auto again = kube::split_config(kube::join_config(docs));
  ASSERT_EQ(again.size(), docs.size());
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_EQ(again[i].object, docs[i].object);
}

TEST(KubeConfigDocs, AWrittenDocumentKeepsItsCommentsAndReadsBackAsWritten) {
  auto docs = kube::split_config(kText);
  json flavor = docs[1].object;
  flavor["metadata"]["labels"] = {{"team", "a"}};
  flavor["spec"] = {{"nodeLabels", {{"pool", "08"}}}};  // a string that looks like a number
  docs[1] = kube::object_doc(flavor, &docs[1]);
  EXPECT_NE(docs[1].text.find("# the flavor everyone uses"), std::string::npos);
  const auto again = kube::split_config(kube::join_config(docs));
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[1].object, flavor);
  EXPECT_TRUE(again[1].object["spec"]["nodeLabels"]["pool"].is_string());
  // A new one goes at the end, with its marker.
  json wpc = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
              {"kind", "WorkloadPriorityClass"},
              {"metadata", {{"name", "high"}}},
              {"value", 1000}};
  docs.push_back(kube::object_doc(wpc));
  const auto more = kube::split_config(kube::join_config(docs));
  ASSERT_EQ(more.size(), 5u);
  EXPECT_EQ(more[4].object["value"], 1000);
}

TEST(KubeConfigDocs, ReadsYamlAsKubernetesDoes) {
  const json j = kube::yaml_to_json(YAML::Load(
      "a: '8'\nb: 8\nc: true\nd: ~\ne: 1.5\nf: 200Mi\ng: [1, x]\nh: \"true\"\ni: 0x1F\n"));
  EXPECT_EQ(j["a"], "8");
  EXPECT_EQ(j["b"], 8);
  EXPECT_EQ(j["c"], true);
  EXPECT_TRUE(j["d"].is_null());
  EXPECT_EQ(j["e"], 1.5);
  EXPECT_EQ(j["f"], "200Mi");
  EXPECT_EQ(j["g"], json::array({1, "x"}));
  EXPECT_EQ(j["h"], "true");
  EXPECT_EQ(j["i"], "0x1F");
}

TEST(KubeConfigDocs, ReadsOneObjectOfJsonOrYamlAndNothingElse) {
  std::string error;
  auto o = kube::read_object_body(R"({"kind":"ResourceFlavor"})", &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ((*o)["kind"], "ResourceFlavor");
  o = kube::read_object_body("kind: ResourceFlavor\nmetadata:\n  name: x\n", &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ((*o)["metadata"]["name"], "x");
  EXPECT_FALSE(kube::read_object_body("a: 1\n---\nb: 2\n", &error));
  EXPECT_NE(error.find("one JSON or YAML object"), std::string::npos);
  EXPECT_FALSE(kube::read_object_body("[1, 2]", &error));
  EXPECT_FALSE(kube::read_object_body(",\"gpus\":1", &error));  // yaml-cpp's endless loop
  EXPECT_FALSE(kube::read_object_body(std::string(100, '[') + std::string(100, ']'), &error));
  EXPECT_NE(error.find("deeper"), std::string::npos);
  EXPECT_FALSE(kube::read_object_body("{a: 1}: 2\n", &error));  // a key that is a map
}

TEST(KubeConfigDocs, StoresWhatTheUserWroteNotTheServersBookkeeping) {
  const json o = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                  {"kind", "ClusterQueue"},
                  {"metadata",
                   {{"name", "cq"},
                    {"uid", "u"},
                    {"resourceVersion", "12"},
                    {"generation", 3},
                    {"creationTimestamp", "2026-01-01T00:00:00Z"},
                    {"managedFields", json::array()},
                    {"annotations", {{"a", "b"}}}}},
                  {"spec", {{"cohort", "all"}}},
                  {"status", {{"pendingWorkloads", 1}}}};
  const json s = kube::stored_form(o);
  EXPECT_EQ(
      s["metadata"],
      json({{"name", "cq"}, {"annotations", {{"a", "b"}}}, {"managedFields", json::array()}}));
  EXPECT_FALSE(s.contains("status"));
  EXPECT_EQ(s["spec"], o["spec"]);
}

TEST(KubeConfigDocs, AVersionChangesWithEveryChangeOfTheObjectOnly) {
  kube::ConfigVersions v(1000);
  v.refresh(kText, 5);
  const auto* cq = v.find(kube::object_key("ClusterQueue", "", "cq"));
  ASSERT_TRUE(cq);
  const uint64_t first = cq->rv;
  EXPECT_GE(first, 1000u);
  EXPECT_EQ(cq->generation, 1);
  EXPECT_EQ(cq->created_ns, 5);
  const uint64_t flavor = v.find(kube::object_key("ResourceFlavor", "", "default-flavor"))->rv;
  std::string text = kText;
  text.replace(text.find("nominalQuota: 9"), 15, "nominalQuota: 12");
  v.refresh(text, 6);
  cq = v.find(kube::object_key("ClusterQueue", "", "cq"));
  EXPECT_GT(cq->rv, first);
  EXPECT_EQ(cq->generation, 2);  // its spec changed
  EXPECT_EQ(cq->created_ns, 5);
  EXPECT_EQ(v.find(kube::object_key("ResourceFlavor", "", "default-flavor"))->rv, flavor);
  const uint64_t second = cq->rv;
  v.refresh(text + "# a comment\n", 7);  // the same objects
  EXPECT_EQ(v.find(kube::object_key("ClusterQueue", "", "cq"))->rv, second);
  v.refresh(text.substr(0, text.find("---\n---")), 8);  // the ClusterQueue is gone
  EXPECT_FALSE(v.find(kube::object_key("ClusterQueue", "", "cq")));
  const json served =
      kube::served_form(*v.find(kube::object_key("LocalQueue", "default", "user-queue")), "uid-1",
                        "2026-01-01T00:00:00Z");
  EXPECT_EQ(served["metadata"]["uid"], "uid-1");
  EXPECT_TRUE(served["metadata"]["resourceVersion"].is_string());
}

TEST(KubeConfigDocs, PatchesAsMergeStrategicOrJsonPatch) {
  const json o = {{"kind", "ClusterQueue"},
                  {"metadata", {{"name", "cq"}}},
                  {"spec", {{"cohort", "all"}, {"queueingStrategy", "StrictFIFO"}}}};
  kube::PatchRefusal why;
  auto p = kube::apply_patch(o, "application/merge-patch+json",
                             R"({"spec":{"cohort":null,"stopPolicy":"Hold"}})", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ((*p)["spec"], json({{"queueingStrategy", "StrictFIFO"}, {"stopPolicy", "Hold"}}));
  p = kube::apply_patch(o, "application/strategic-merge-patch+json; charset=utf-8",
                        R"({"spec":{"cohort":"b"}})", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ((*p)["spec"]["cohort"], "b");
  EXPECT_FALSE(kube::apply_patch(o, "application/strategic-merge-patch+json",
                                 R"({"spec":{"$retainKeys":["cohort"]}})", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_NE(why.message.find("$retainKeys"), std::string::npos);
  p = kube::apply_patch(o, "application/json-patch+json",
                        R"([{"op":"replace","path":"/spec/cohort","value":"c"}])", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ((*p)["spec"]["cohort"], "c");
  EXPECT_FALSE(kube::apply_patch(o, "application/json-patch+json",
                                 R"([{"op":"remove","path":"/spec/nosuch"}])", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::apply_patch(o, "application/json-patch+json", R"({"a":1})", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_FALSE(kube::apply_patch(o, "text/plain", "{}", &why));
  EXPECT_EQ(why.code, 415);
  EXPECT_FALSE(kube::apply_patch(o, "application/merge-patch+json", "[1]", &why));
  EXPECT_EQ(why.code, 400);
}

TEST(KubeConfigDocs, NamesTheFieldOfAnErrorInTheWrittenDocumentAndTheObjectOfOthers) {
  const auto docs = kube::split_config(kText);
  const auto causes = kube::invalid_causes(
      "kubernetes API:24: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: "
      "\"-1\" is negative\n"
      "kubernetes API:15: spec.clusterQueue: unknown ClusterQueue \"nosuch\"\n"
      "something else",
      docs, &docs[3]);
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0].field, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota");
  EXPECT_EQ(causes[0].message, "\"-1\" is negative");
  EXPECT_EQ(causes[1].field, "");
  EXPECT_EQ(causes[1].message,
            "LocalQueue \"user-queue\": spec.clusterQueue: unknown ClusterQueue \"nosuch\"");
  EXPECT_EQ(causes[2].message, "something else");
}

}  // namespace kube_config_docs_test
}  // namespace sluice::server
