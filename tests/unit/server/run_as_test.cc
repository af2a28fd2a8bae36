// Who a submitted job runs as: the token's ids, the securityContext it may ask for, root only
// where the ClusterQueue allows it; and what the agent is told.
#include "server/run_as.h"

#include <gtest/gtest.h>

#include "config/loader.h"
#include "server/job_codec.h"

namespace sluice::server {
namespace run_as_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

const char* kQueues = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: users}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: system}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  sluice: {allowRootPods: true}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: nlp}
spec: {clusterQueue: users}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: ops, namespace: nlp}
spec: {clusterQueue: system}
)";

Config config() {
  auto out = load({Source{"q.yaml", kQueues}}, {});
  EXPECT_TRUE(out.ok());
  return out.config;
}

Job job(const std::string& queue, int64_t uid = -1, int64_t gid = -1) {
  Job j;
  j.namespace_ = "nlp";
  j.queue = queue;
  j.exec_mut().run_as_uid = uid;
  j.exec_mut().run_as_gid = gid;
  return j;
}

Caller member(int64_t uid, int64_t gid, std::vector<int64_t> users = {}) {
  Caller c{"alice", false, {"nlp"}, {}};
  c.unix_id = {uid, gid, std::move(users), {}};
  return c;
}

TEST(ServerRunAs, TokenIdsByDefault) {
  const Config cfg = config();
  Job j = job("train");
  EXPECT_EQ(resolve_run_as(j, member(1000, 100), cfg), "");
  EXPECT_EQ(j.exec().user, "alice");
  EXPECT_EQ(j.exec().run_as_uid, 1000);
  EXPECT_EQ(j.exec().run_as_gid, 100);
  Job k = job("train");
  EXPECT_EQ(resolve_run_as(k, member(1000, -1), cfg), "");
  EXPECT_EQ(k.exec().run_as_gid, 1000);  // gid defaults to the uid
  Job none = job("train");
  EXPECT_EQ(resolve_run_as(none, member(-1, -1), cfg), "");
  EXPECT_EQ(none.exec().run_as_uid, -1);  // the agent's per-namespace uid
  EXPECT_EQ(none.exec().run_as_gid, -1);
  Job anon = job("train");
  EXPECT_EQ(resolve_run_as(anon, Caller{}, cfg), "");  // auth off
  EXPECT_EQ(anon.exec().user, "anonymous");
}

TEST(ServerRunAs, SecurityContextWhereTheTokenAllowsIt) {
  const Config cfg = config();
  Job own = job("train", 1000);
  EXPECT_EQ(resolve_run_as(own, member(1000, 100), cfg), "");
  EXPECT_EQ(own.exec().run_as_gid, 1000);  // asked for a uid without a group: the uid's
  Job listed = job("train", 1500);
  EXPECT_EQ(resolve_run_as(listed, member(1000, 100, {1500}), cfg), "");
  EXPECT_EQ(listed.exec().run_as_uid, 1500);
  Job other = job("train", 2000);
  const std::string why = resolve_run_as(other, member(1000, 100, {1500}), cfg);
  EXPECT_EQ(why,
            "token alice may not run pods as uid 2000 (securityContext.runAsUser; allowed: "
            "1000, 1500)");
  Job group = job("train", 1000, 5);
  EXPECT_NE(resolve_run_as(group, member(1000, 100), cfg).find("may not run pods as gid 5"),
            std::string::npos);
  Job admin_any = job("train", 4242, 4242);
  Caller admin{"ops", true, {}, {}};
  EXPECT_EQ(resolve_run_as(admin_any, admin, cfg), "");
  EXPECT_EQ(admin_any.exec().run_as_uid, 4242);
}

TEST(ServerRunAs, RootOnlyInAQueueThatAllowsIt) {
  const Config cfg = config();
  Caller admin{"ops", true, {}, {}};
  Job root = job("train", 0);
  EXPECT_NE(resolve_run_as(root, admin, cfg).find("does not set spec.sluice.allowRootPods"),
            std::string::npos);
  Job token_root = job("train");
  EXPECT_NE(resolve_run_as(token_root, member(0, 0), cfg), "");  // a token mapped to root too
  Job allowed = job("ops", 0);
  EXPECT_EQ(resolve_run_as(allowed, admin, cfg), "");
  EXPECT_EQ(allowed.exec().run_as_uid, 0);
}

TEST(ServerRunAs, AssignmentCarriesIdentityAndRequests) {
  const Config cfg = config();
  Job j = job("ops");
  j.exec_mut().user = "alice";
  j.exec_mut().run_as_uid = 1000;
  j.exec_mut().run_as_gid = 100;
  PodSet ps;
  ps.requests[kCpu] = 4000;
  ps.requests[kMemory] = 8192;
  j.pod_sets = {ps};
  Admission a;
  a.queue = *cfg.find_cluster_queue("system");
  PodPlacement pp;
  pp.pod_set = 0;
  a.placement.pods = {pp};
  proto::Assignment as;
  set_pod_identity(as, j, a, 0, cfg);
  EXPECT_EQ(as.user, "alice");
  EXPECT_EQ(as.run_as_uid, 1000);
  EXPECT_EQ(as.run_as_gid, 100);
  EXPECT_TRUE(as.allow_root);
  EXPECT_EQ(as.cpu_milli, 4000);
  EXPECT_EQ(as.memory_mib, 8192);
  // An older peer's message without the fields decodes to "no identity".
  auto old = nlohmann::json{{"job", 1}, {"pod", 0}}.get<proto::Assignment>();
  EXPECT_EQ(old.run_as_uid, -1);
  EXPECT_FALSE(old.allow_root);
}

TEST(ServerRunAs, StoredJobsKeepTheirIdentityAndOldRecordsStayReadable) {
  const Config cfg = config();
  Job j = job("train", 1000, 100);
  j.id = 7;
  j.exec_mut().user = "alice";
  auto back = decode_job(encode_job(j, cfg), cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->exec().user, "alice");
  EXPECT_EQ(back->exec().run_as_uid, 1000);
  EXPECT_EQ(back->exec().run_as_gid, 100);
  // A record written before these fields existed.
  auto old = encode_job(j, cfg);
  for (const char* k : {"user", "run_as_uid", "run_as_gid"}) old.erase(k);
  auto read = decode_job(old, cfg);
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(read->exec().user, "");
  EXPECT_EQ(read->exec().run_as_uid, -1);
  EXPECT_EQ(read->exec().run_as_gid, -1);
}

// A server without tokens believes the client's X-Sluice-User/-Uid/-Gid, within reason.
TEST(ServerRunAs, ClaimedUserIsCheckedAndNeverRoot) {
  const ClaimedUser ok = claimed_user("alice.b-2_x", "1000", "100");
  EXPECT_EQ(ok.name, "alice.b-2_x");
  EXPECT_EQ(ok.uid, 1000);
  EXPECT_EQ(ok.gid, 100);
  const ClaimedUser root = claimed_user("root", "0", "0");
  EXPECT_EQ(root.name, "root");
  EXPECT_EQ(root.uid, -1);  // never run pods as root on a client's word
  EXPECT_EQ(root.gid, -1);
  for (const char* name : {"", "a b", "x/y", "\n",
                           "an-overly-long-name-that-goes-on-and-on-and-on-"
                           "past-sixty-four-bytes"}) {
    EXPECT_EQ(claimed_user(name, "1000", "1000").name, "") << name;
  }
  for (const char* uid : {"", "-1", "1e3", "4294967295", "99999999999", "12a"})
    EXPECT_EQ(claimed_user("a", uid, "1").uid, -1) << uid;
  EXPECT_EQ(claimed_user("a", "", "5").gid, -1);  // a gid alone means nothing
}

TEST(ServerRunAs, AMemberTokensOneNamespaceIsImplied) {
  EXPECT_EQ(implied_namespace(member(1000, 1000)), "nlp");
  Caller two{"bob", false, {"nlp", "vision"}, {}};
  EXPECT_EQ(implied_namespace(two), "default");
  Caller any{"carol", false, {"*"}, {}};
  EXPECT_EQ(implied_namespace(any), "default");
  EXPECT_EQ(implied_namespace(Caller{}), "default");  // auth off: admin
}

}  // namespace
}  // namespace run_as_test
}  // namespace sluice::server
