#include "cli/client_config_files.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace client_config_files_test {

// Three files joined as `sluice config apply` sends them: the second lacks its last newline.
TEST(ConfigApplyFiles, TheServersRequestLineIsCitedAsTheFileAndItsLine) {
  const JoinedFiles j = join_files({{"cluster.yaml", "a: 1\nb: 2\n"},
                                    {"queues.yaml", "kind: X\nspec:\n  bad: 3"},
                                    {"more.yaml", "c: 4\n"}});
  // body: 1 a, 2 b, 3 ---, 4 kind, 5 spec, 6 bad, 7 ---, 8 c
  EXPECT_EQ(j.body, "a: 1\nb: 2\n---\nkind: X\nspec:\n  bad: 3\n---\nc: 4\n");
  EXPECT_EQ(j.cite("request:6: spec.bad: unknown field"), "queues.yaml:3: spec.bad: unknown field");
  EXPECT_EQ(j.cite("request:2: x; request:8: y"), "cluster.yaml:2: x; more.yaml:1: y");
  EXPECT_EQ(j.cite("no line here (request body)"), "no line here (request body)");
  EXPECT_EQ(j.cite("myrequest:3 stays"), "myrequest:3 stays");
}

TEST(ConfigApplyFiles, AMissingFileIsTheError) {
  auto r = read_and_join({"/nonexistent/sluice-config.yaml"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/sluice-config.yaml"), std::string::npos) << r.error();
}

}  // namespace client_config_files_test
}  // namespace sluice::cli
