// sluice jobs -o: squeue's format fields over job views.
#include "cli/client_squeue.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace client_squeue_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using nlohmann::json;

json jobs() {
  return json::parse(R"([
    {"id": 42, "name": "train-a-very-long-name", "user": "alice", "namespace": "team-a",
     "queue": "gpu", "state": "running", "pods": 2, "gpus": 8,
     "start_time": "2026-12-06T10:00:00Z",
     "placement": [{"node": "n1"}, {"node": "n2"}]},
    {"id": 43, "name": "wait", "user": "bob", "namespace": "team-b", "queue": "gpu",
     "state": "pending", "pods": 1, "reason": {"message": "quota"}},
    {"id": 44, "name": "slow", "user": "bob", "namespace": "team-b", "queue": "cpu",
     "state": "failed", "timed_out": true, "start_time": "2026-12-06T09:00:00Z",
     "end_time": "2026-12-06T10:01:01Z", "placement": [{"node": "n3"}]}
  ])");
}

TEST(SqueueFormat, SlurmsDefaultFormat) {
  const double now = 1796551325;  // 2026-12-06T10:02:05Z
  const std::string out =
      squeue_lines(jobs(), "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", true, now);
  EXPECT_EQ(out,
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
            "                42       gpu train-a-    alice  R       2:05      2 n1,n2\n"
            "                43       gpu     wait      bob PD       0:00      1 (quota)\n"
            "                44       cpu     slow      bob TO    1:01:01      1 n3\n");
}

TEST(SqueueFormat, LeftJustifiedLiteralsNoHeader) {
  EXPECT_EQ(squeue_lines(jobs(), "%i|%8T|%a|%b%%", false, 0),
            "42|RUNNING |team-a|gpu:8%\n43|PENDING |team-b|gpu:%\n44|TIMEOUT |team-b|gpu:%\n");
  EXPECT_EQ(squeue_lines(jobs(), "%4j.", false, 0), "trai.\nwait.\nslow.\n");
}

TEST(SqueueFormat, BadFieldsAreNamed) {
  EXPECT_EQ(squeue_check("%i %Z").value_or(""),
            "unknown field %Z (known: %i %A %j %u %a %P %q %t %T %M %D %N %R %b %V %S %e %%)");
  EXPECT_NE(squeue_check("%.10").value_or("").find("ends inside a field"), std::string::npos);
  EXPECT_FALSE(squeue_check("%.18i %j"));
}

}  // namespace
}  // namespace client_squeue_test
}  // namespace sluice::cli
