// ServerAuth documents (issue 13): a guessable join token is refused at load.
#include "server/auth.h"

#include <gtest/gtest.h>

#include "secret/secret.h"

namespace sluice::server {
namespace {

Result<AuthConfig> auth(const std::string& join) {
  return parse_auth({Source{"auth.yaml",
                            "apiVersion: sluice.dev/v1alpha1\nkind: ServerAuth\nmetadata: {name: "
                            "a}\nspec:\n  joinToken: \"" +
                                join + "\"\n"}});
}

TEST(ServerAuth, JoinTokenOfAtLeastSixteenCharacters) {
  auto one = auth("x");
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().find("auth.yaml:1: spec.joinToken: at least 16 characters (got 1)"),
            std::string::npos)
      << one.error();
  EXPECT_FALSE(auth("fifteen-chars!!").ok());
  auto ok = auth("sixteen-chars!!!");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->join_token, "sixteen-chars!!!");
}

TEST(ServerAuth, UserTokensOfAtLeastSixteenCharactersAndAJoinToken) {
  const std::string head =
      "apiVersion: sluice.dev/v1alpha1\nkind: ServerAuth\nmetadata: {name: a}\nspec:\n";
  auto weak = parse_auth({Source{"auth.yaml", head + "  joinToken: join-token-0123456789\n"
                                                     "  tokens:\n  - {name: a, token: short-token, "
                                                     "role: admin}\n"}});
  ASSERT_FALSE(weak.ok());
  EXPECT_NE(weak.error().find("spec.tokens[0].token: required, at least 16 characters (got 11)"),
            std::string::npos)
      << weak.error();
  auto no_join = parse_auth({Source{
      "auth.yaml", head + "  tokens:\n  - {name: a, token: admin-token-0123456, role: admin}\n"}});
  ASSERT_FALSE(no_join.ok());
  EXPECT_NE(no_join.error().find("spec.joinToken: required when spec.tokens is set"),
            std::string::npos)
      << no_join.error();
}

TEST(ServerAuth, TokensMayCarryAUnixIdentity) {
  auto ok = parse_auth({Source{"auth.yaml", R"(apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: a}
spec:
  joinToken: join-token-0123456789
  tokens:
  - {name: alice, token: alice-token-0123456, namespaces: [nlp], uid: 1000, gid: 100,
     runAsUsers: [1500], runAsGroups: [200, 300]}
  - {name: bob, token: bob-token-01234567, namespaces: [cv]}
)"}});
  ASSERT_TRUE(ok.ok()) << ok.error();
  auto alice = ok->caller("Bearer alice-token-0123456");
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->unix_id.uid, 1000);
  EXPECT_EQ(alice->unix_id.gid, 100);
  EXPECT_EQ(alice->unix_id.run_as_users, (std::vector<int64_t>{1500}));
  EXPECT_EQ(alice->unix_id.run_as_groups, (std::vector<int64_t>{200, 300}));
  auto bob = ok->caller("Bearer bob-token-01234567");
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->unix_id.uid, -1);  // none: the agents' per-namespace uid
  auto bad = parse_auth({Source{"auth.yaml", R"(apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: a}
spec:
  joinToken: join-token-0123456789
  tokens:
  - {name: alice, token: alice-token-0123456, namespaces: [nlp], uid: -5}
)"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("spec.tokens[0].uid: -5 is not a uid/gid"), std::string::npos)
      << bad.error();
}

// The scheme is case-insensitive (RFC 7235 2.1; issue 41: "bearer" was refused); the token
// itself is taken as it is.
TEST(ServerAuth, TheBearerSchemeIsCaseInsensitive) {
  for (const char* h :
       {"Bearer tok-0123", "bearer tok-0123", "BEARER tok-0123", "Bearer  tok-0123"})
    EXPECT_EQ(secret::bearer(h), "tok-0123") << h;
  for (const char* h : {"", "Bearer", "Bearer ", "Basic dG9r", "Bearertok-0123", "Bear tok"})
    EXPECT_EQ(secret::bearer(h), "") << h;
  EXPECT_EQ(secret::bearer("bearer Tok-ABC"), "Tok-ABC");
}

}  // namespace
}  // namespace sluice::server
