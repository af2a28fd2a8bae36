// ServerAuth documents (issue 13): a guessable join token is refused at load.
#include "server/auth.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sluice::server
