#include "agent/node_names.h"

#include <gtest/gtest.h>

namespace sluice::agent {
namespace {

TEST(AgentNodeNames, Expands) {
  auto r = expand_node_names("n[1-3]");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, (std::vector<std::string>{"n1", "n2", "n3"}));
  auto padded = expand_node_names("gpu[08-10,12],login");
  ASSERT_TRUE(padded) << padded.error();
  EXPECT_EQ(*padded, (std::vector<std::string>{"gpu08", "gpu09", "gpu10", "gpu12", "login"}));
  auto big = expand_node_names("n[1-64]");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->size(), 64u);
  EXPECT_EQ(big->back(), "n64");
  auto suffix = expand_node_names("rack[1-2]-a");
  ASSERT_TRUE(suffix);
  EXPECT_EQ(*suffix, (std::vector<std::string>{"rack1-a", "rack2-a"}));
}

TEST(AgentNodeNames, RejectsBadLists) {
  for (const char* bad : {"", "n[", "n]", "n[3-1]", "n[]", "n[1-2],n2", "n[a-b]", "n[1-100000]",
                          "bad name", "n[1-2]]", "n[[1]]", "a,,b"}) {
    EXPECT_FALSE(expand_node_names(bad)) << bad;
  }
}

}  // namespace
}  // namespace sluice::agent
