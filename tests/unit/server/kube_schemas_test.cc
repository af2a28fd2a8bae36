// The OpenAPI v3 schemas of the served kinds (server/http/kube_schemas.h): each kind's schema
// found by its group-version-kind, as kubectl explain finds it, with nested fields through
// objects and arrays' items.
#include "server/http/kube_schemas.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_schemas_test {

using nlohmann::json;

// The field at `path` (properties, and items for an array), as kubectl explain walks it.
const json* walk(const json& schema, std::initializer_list<const char*> path) {
  const json* at = &schema;
  for (const char* part : path) {
    if ((*at).value("type", "") == "array") at = &(*at)["items"];
    if (!at->contains("properties") || !(*at)["properties"].contains(part)) return nullptr;
    at = &(*at)["properties"][part];
  }
  return at;
}

TEST(KubeSchemas, EachKindCarriesItsGroupVersionKind) {
  const json batch = kube::openapi_schemas("batch", "v1");
  ASSERT_TRUE(batch.contains("io.k8s.api.batch.v1.Job"));
  EXPECT_EQ(batch["io.k8s.api.batch.v1.Job"]["x-kubernetes-group-version-kind"][0],
            (json{{"group", "batch"}, {"version", "v1"}, {"kind", "Job"}}));
  const json kueue = kube::openapi_schemas("kueue.x-k8s.io", "v1beta1");
  for (const char* k : {"Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor"})
    EXPECT_TRUE(kueue.contains(std::string("sigs.k8s.io.kueue.apis.kueue.v1beta1.") + k)) << k;
  EXPECT_TRUE(kube::openapi_schemas("", "v1").contains("io.k8s.api.core.v1.Pod"));
  EXPECT_TRUE(kube::openapi_schemas("nope", "v1").empty());
}

TEST(KubeSchemas, NestedFieldsThroughObjectsAndArrays) {
  const json job = kube::openapi_schemas("batch", "v1")["io.k8s.api.batch.v1.Job"];
  const json* suspend = walk(job, {"spec", "suspend"});
  ASSERT_NE(suspend, nullptr);
  EXPECT_EQ((*suspend)["type"], "boolean");
  const json* requests =
      walk(job, {"spec", "template", "spec", "containers", "resources", "requests"});
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ((*requests)["type"], "object");
  const json cq = kube::openapi_schemas(
      "kueue.x-k8s.io", "v1beta1")["sigs.k8s.io.kueue.apis.kueue.v1beta1.ClusterQueue"];
  const json* groups = walk(cq, {"spec", "resourceGroups"});
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ((*groups)["type"], "array");
  EXPECT_FALSE((*groups)["description"].get<std::string>().empty());
  const json* quota = walk(cq, {"spec", "resourceGroups", "flavors", "resources", "nominalQuota"});
  ASSERT_NE(quota, nullptr);
  EXPECT_TRUE((*quota)["x-kubernetes-int-or-string"].get<bool>());
  EXPECT_NE(walk(cq, {"metadata", "name"}), nullptr);
}

}  // namespace kube_schemas_test
}  // namespace sluice::server
