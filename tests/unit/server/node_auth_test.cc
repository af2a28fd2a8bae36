// Node identity (issue 14): the join token only bootstraps a node's own credential.
#include "server/node_auth.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

const std::string kJoin = "join-token-0123456789";
const std::string kCred = "a-credential-of-at-least-32-characters";

TEST(NodeCredentials, JoinTokenAdmitsANewNodeOnlyWithACredential) {
  NodeCredentials c;
  auto a = c.admit_register("n1", kJoin, kCred, kJoin);
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.issued);
  EXPECT_EQ(c.admit_register("n1", kJoin, "short", kJoin).status, 400);
  EXPECT_EQ(c.admit_register("n1", "", kCred, kJoin).status, 401);
  EXPECT_EQ(c.admit_register("n1", kCred, kCred, kJoin).code, "no-node-credential");
  // Without a join token (auth off, loopback) a new node joins with any bearer.
  EXPECT_EQ(c.admit_register("n1", "", kCred, "").status, 200);
}

TEST(NodeCredentials, AKnownNodeIsWhoeverHoldsItsCredential) {
  NodeCredentials c;
  c.set("n1", kCred);
  EXPECT_EQ(c.admit_register("n1", kCred, kCred, kJoin).status, 200);
  EXPECT_FALSE(c.admit_register("n1", kCred, kCred, kJoin).issued);
  auto take = c.admit_register("n1", kJoin, "another-credential-0123456789abcdef", kJoin);
  EXPECT_EQ(take.status, 403);
  EXPECT_EQ(take.code, "node-has-credential");
  EXPECT_NE(take.error.find("sluice nodes reset-credential n1"), std::string::npos);
  // Also with auth off: a second agent cannot take a node's name.
  EXPECT_EQ(c.admit_register("n1", "", kCred, "").status, 403);
  EXPECT_TRUE(c.admit("n1", kCred));
  EXPECT_FALSE(c.admit("n1", kJoin));
  EXPECT_FALSE(c.admit("n2", kCred));
  EXPECT_FALSE(c.admit("n1", ""));
}

TEST(NodeCredentials, EveryChangeMovesTheVersion) {
  NodeCredentials c;
  uint64_t v = c.version();
  EXPECT_NE(v, 0u);  // 0 means "not checked" to ServerState::sync_reports
  auto moved = [&] {
    const bool m = c.version() != v;
    v = c.version();
    return m;
  };
  c.set("n1", kCred);
  EXPECT_TRUE(moved());
  EXPECT_TRUE(c.admit("n1", kCred));
  EXPECT_FALSE(moved());  // a check changes nothing
  c.reset("n1");
  EXPECT_TRUE(moved());
  c.load_entry("n2", "00");
  EXPECT_TRUE(moved());
  c.load("{}");
  EXPECT_TRUE(moved());
}

TEST(NodeCredentials, StoredAsDigestsAndReloaded) {
  NodeCredentials c;
  c.set("n1", kCred);
  const std::string stored = c.dump();
  EXPECT_EQ(stored.find(kCred), std::string::npos);  // only the SHA-256 is kept
  NodeCredentials back;
  ASSERT_TRUE(back.load(stored));
  EXPECT_TRUE(back.admit("n1", kCred));
  EXPECT_TRUE(back.reset("n1"));
  EXPECT_FALSE(back.admit("n1", kCred));
  EXPECT_FALSE(back.load("{not json"));
}

}  // namespace
}  // namespace sluice::server
