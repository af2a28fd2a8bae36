// Who a pod runs as: the server's ids, the agent's per-namespace map, the hashed range, and
// the refusals (root, clashes, ids inside the range).
#include "agent/pod_identity.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice::agent {
namespace {

proto::Assignment in_namespace(const std::string& ns) {
  proto::Assignment a;
  a.job_namespace = ns;
  return a;
}

TEST(AgentPodIdentity, ParsesFlags) {
  auto e = parse_pod_uid("nlp=61000");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(e->first, "nlp");
  EXPECT_EQ(e->second.uid, 61000u);
  EXPECT_EQ(e->second.gid, 61000u);  // gid defaults to the uid
  auto g = parse_pod_uid("vision=1234:100");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->second.gid, 100u);
  for (const char* bad : {"nlp", "=1", "nlp=", "nlp=x", "nlp=1:", "nlp=-1", "nlp=4294967295"})
    EXPECT_FALSE(parse_pod_uid(bad)) << bad;
  auto r = parse_uid_range("60000-65535");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 60000u);
  EXPECT_EQ(r->second, 65535u);
  EXPECT_TRUE(parse_uid_range("none"));
  for (const char* bad : {"0-10", "10-5", "60000", "a-b"})
    EXPECT_FALSE(parse_uid_range(bad)) << bad;
}

TEST(AgentPodIdentity, HashedUidIsStableAndInRange) {
  // Same namespace, same uid, on every node and every build (FNV-1a, not std::hash).
  const uint32_t nlp = hashed_namespace_uid("nlp", 60000, 65535);
  EXPECT_EQ(nlp, hashed_namespace_uid("nlp", 60000, 65535));
  EXPECT_GE(nlp, 60000u);
  EXPECT_LE(nlp, 65535u);
  EXPECT_NE(nlp, hashed_namespace_uid("vision", 60000, 65535));
  EXPECT_EQ(hashed_namespace_uid("anything", 70000, 70000), 70000u);
}

TEST(AgentPodIdentity, ServerIdsThenMapThenRange) {
  testing::TempDir dir;
  IdentityOptions o;
  o.namespaces["ops"] = {5000, 5001};
  auto r = IdentityResolver::create(o, dir.path() + "/uids.json");
  ASSERT_TRUE(r) << r.error();
  auto a = in_namespace("nlp");
  a.run_as_uid = 1000;  // the submitter's, from its token
  a.run_as_gid = 100;
  auto id = (*r)->resolve(a);
  ASSERT_TRUE(id) << id.error();
  EXPECT_EQ(id->uid, 1000u);
  EXPECT_EQ(id->gid, 100u);
  auto ops = (*r)->resolve(in_namespace("ops"));
  ASSERT_TRUE(ops);
  EXPECT_EQ(ops->uid, 5000u);  // the --pod-uid entry
  EXPECT_EQ(ops->gid, 5001u);
  auto nlp = (*r)->resolve(in_namespace("nlp"));
  ASSERT_TRUE(nlp);
  EXPECT_EQ(nlp->uid, hashed_namespace_uid("nlp", 60000, 65535));
  EXPECT_EQ(nlp->gid, nlp->uid);
  EXPECT_EQ(nlp->user, unix_user_name(nlp->uid));
}

TEST(AgentPodIdentity, RootOnlyWhereTheQueueAllowsIt) {
  IdentityOptions o;
  o.namespaces["sys"] = {0, 0};
  auto r = IdentityResolver::create(o, "");
  ASSERT_TRUE(r);
  auto sys = in_namespace("sys");
  EXPECT_FALSE((*r)->resolve(sys));  // mapped to root, but the queue does not allow it
  sys.allow_root = true;
  EXPECT_TRUE((*r)->resolve(sys));
  auto a = in_namespace("nlp");
  a.run_as_uid = 0;
  EXPECT_FALSE((*r)->resolve(a));
  a.run_as_uid = 1000;
  a.run_as_gid = 0;  // group root too
  EXPECT_FALSE((*r)->resolve(a));
}

TEST(AgentPodIdentity, RefusesIdsThatCouldBeAnotherNamespaces) {
  IdentityOptions o;
  o.range_first = 60000;
  o.range_last = 60000;  // one uid: the second namespace clashes
  auto r = IdentityResolver::create(o, "");
  ASSERT_TRUE(r);
  EXPECT_TRUE((*r)->resolve(in_namespace("a")));
  EXPECT_TRUE((*r)->resolve(in_namespace("a")));  // again: the same holder
  auto clash = (*r)->resolve(in_namespace("b"));
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().find("both hash to uid 60000"), std::string::npos) << clash.error();
  auto a = in_namespace("c");
  a.run_as_uid = 60000;  // the server's uid inside the namespaces' range
  EXPECT_FALSE((*r)->resolve(a));
  o.namespaces["x"] = {60000, 60000};  // an explicit entry inside the range
  EXPECT_FALSE(IdentityResolver::create(o, ""));
  o.namespaces.clear();
  o.range_first = 1;
  o.range_last = 0;  // no range: unmapped namespaces are refused
  auto none = IdentityResolver::create(o, "");
  ASSERT_TRUE(none);
  EXPECT_FALSE((*none)->resolve(in_namespace("a")));
}

TEST(AgentPodIdentity, ClaimsSurviveARestart) {
  testing::TempDir dir;
  IdentityOptions o;
  o.range_first = 60000;
  o.range_last = 60000;
  {
    auto r = IdentityResolver::create(o, dir.path() + "/uids.json");
    ASSERT_TRUE(r);
    EXPECT_TRUE((*r)->resolve(in_namespace("a")));
  }
  // After a restart "b" still cannot take the uid whose files belong to "a".
  auto r = IdentityResolver::create(o, dir.path() + "/uids.json");
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE((*r)->resolve(in_namespace("b")));
  EXPECT_TRUE((*r)->resolve(in_namespace("a")));
}

}  // namespace
}  // namespace sluice::agent
