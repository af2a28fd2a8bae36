#include "cli/client_views.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

using nlohmann::json;

constexpr double kNow = 1764538600.0;  // 600 s after the jobs' submit time below

// A JobView as docs/api.md shows it.
json running_job() {
  return json::parse(R"({"id": 17, "name": "bert", "namespace": "nlp", "queue": "train",
    "cluster_queue": "team-a", "priority_class": "batch-low", "priority": 100,
    "preemptible": true, "interactive": false, "state": "running", "started": true,
    "submit_time": 1764538000.123, "admit_time": 1764538001.0, "end_time": null,
    "pods": 2, "gpus": 16, "gpu_milli": 16000, "command": ["python", "train.py"],
    "flavors": ["h100"], "borrowing": false,
    "placement": [{"pod": 0, "node": "n1", "gpus": [0,1,2,3,4,5,6,7]},
                  {"pod": 1, "node": "n2", "gpus": [0,1,2,3,4,5,6,7]}],
    "reason": null, "exit_code": null, "preemptions": 0, "pod_exits": []})");
}

json pending_job() {
  return json{{"id", 18},
              {"name", "notebook-alice"},
              {"namespace", "vision"},
              {"queue", "notebooks"},
              {"state", "pending"},
              {"submit_time", kNow - 7200},
              {"gpus", 1},
              {"gpu_milli", 500},
              {"placement", json::array()},
              {"reason", "ClusterQueue team-b: nvidia.com/gpu quota 8 in use, 0.5 more needed"},
              {"preemptions", 2}};
}

TEST(ClientViews, JobsTableShowsTheDocumentedColumns) {
  json reply = {{"jobs", {running_job(), pending_job()}}};
  // Widths follow the content; the reason is cut at 60 characters.
  EXPECT_EQ(
      jobs_table(reply, {kNow, false}),
      "ID  NAME            USER  NAMESPACE  QUEUE      STATE                   GPUS  AGE  NODE(S)  "
      "REASON\n"
      "17  bert            -     nlp        train      running                   16   9m  n1,n2    "
      "-\n"
      "18  notebook-alice  -     vision     notebooks  pending (2x preempted)   0.5   2h  -        "
      "ClusterQueue team-b: nvidia.com/gpu quota 8 in use, 0.5 m...\n");
}

TEST(ClientViews, StartColumnShowsThePredictedStart) {
  json estimated = pending_job();
  estimated["predicted_start"] = {{"status", "estimated"}, {"time", kNow + 590}, {"in_s", 590}};
  json beyond = pending_job();
  beyond["id"] = 19;
  beyond["predicted_start"] = {{"status", "beyond-bound"}, {"not_before", kNow + 86400}};
  json never = pending_job();
  never["id"] = 20;
  never["predicted_start"] = {{"status", "never"}};
  const std::string t =
      jobs_table(json{{"jobs", {running_job(), estimated, beyond, never}}}, {kNow, false, true});
  // START after AGE: a time in UTC (kNow = 2025-11-30T21:36:40Z), ">" past the bound.
  EXPECT_NE(t.find("AGE  START                  NODE(S)"), std::string::npos) << t;
  EXPECT_NE(t.find(" 9m  -                      n1,n2"), std::string::npos) << t;
  EXPECT_NE(t.find(" 2h  2025-11-30T21:46:30Z   -"), std::string::npos) << t;
  EXPECT_NE(t.find(" 2h  >2025-12-01T21:36:40Z  -"), std::string::npos) << t;
  EXPECT_NE(t.find(" 2h  never                  -"), std::string::npos) << t;
  // Without --start: no column.
  EXPECT_EQ(jobs_table(json{{"jobs", {estimated}}}, {kNow, false}).find("START"),
            std::string::npos);
}

TEST(ClientViews, WideKeepsTheWholeReason) {
  json reply = {{"jobs", {pending_job()}}};
  std::string t = jobs_table(reply, {kNow, true});
  EXPECT_NE(t.find("0.5 more needed"), std::string::npos) << t;
}

TEST(ClientViews, RequeuedJobShowsNoNodes) {
  // The server keeps a preempted job's last placement; the table must not say it runs there.
  json j = running_job();
  j["state"] = "pending";
  j["reason"] = "waiting";
  std::string t = jobs_table(json{{"jobs", {j}}}, {kNow, false});
  EXPECT_EQ(t.find("n1"), std::string::npos) << t;
}

TEST(ClientViews, EndedJobWithoutReasonShowsItsExitCode) {
  json j = running_job();
  j["state"] = "failed";
  j["exit_code"] = 3;
  std::string t = jobs_table(json{{"jobs", {j}}}, {kNow, false});
  EXPECT_NE(t.find("failed"), std::string::npos);
  EXPECT_NE(t.find("exit code 3"), std::string::npos) << t;
}

TEST(ClientViews, MissingFieldsPrintADash) {
  // A bare array and a job with nothing but an id: the table still renders.
  std::string t = jobs_table(json::array({json{{"id", 5}}}), {kNow, false});
  EXPECT_EQ(t,
            "ID  NAME  USER  NAMESPACE  QUEUE  STATE  GPUS  AGE  NODE(S)  REASON\n"
            " 5  -     -     -          -      -         -    -  -        -\n");
  EXPECT_EQ(jobs_table(json{{"unexpected", 1}}, {kNow, false}),
            "ID  NAME  USER  NAMESPACE  QUEUE  STATE  GPUS  AGE  NODE(S)  REASON\n");
}

TEST(ClientViews, PlacementNodesAreDistinctInPodOrderAndCapped) {
  json p = json::array();
  for (const char* n : {"n3", "n1", "n3", "n2", "n4", "n5"}) p.push_back({{"node", n}});
  EXPECT_EQ(placement_nodes(p, 3), "n3,n1,n2,+2");
  EXPECT_EQ(placement_nodes(p, 10), "n3,n1,n2,n4,n5");
  EXPECT_EQ(placement_nodes(json::array(), 3), "-");
}

// /v1/queues as the server writes it: quantities are canonical strings ("16", "500m", "64Gi").
TEST(ClientViews, QueuesTableSumsGpusOverFlavors) {
  json reply = json::parse(R"({"queues": [
    {"name": "team-a", "cohort": "research", "pending": 3,
     "pending_by_class": {"batch-low": 2, "urgent": 1}, "running": 4,
     "usage": [
       {"flavor": "h100", "resource": "nvidia.com/gpu", "used": "16", "nominal": "16", "borrowed": "0"},
       {"flavor": "a100", "resource": "nvidia.com/gpu", "used": "8500m", "nominal": "8", "borrowed": "500m"},
       {"flavor": "h100", "resource": "memory", "used": "900Gi", "nominal": "2000Gi", "borrowed": "0"}],
     "drf_share": 0.53125, "fairness_debt": 12.345},
    {"name": "team-b", "cohort": null, "pending": 0, "pending_by_class": {}, "running": 0,
     "usage": [], "drf_share": 0, "fairness_debt": 0}]})");
  // GPUs: 16 + 8.5 used of 16 + 8 nominal; memory is not a GPU column.
  EXPECT_EQ(queues_table(reply, {kNow, false}),
            "NAME    COHORT    PENDING                   RUNNING  GPU USED/NOMINAL  BORROWED  SHARE"
            "   DEBT\n"
            "team-a  research  3 (batch-low=2,urgent=1)        4           24.5/24       0.5  0.531"
            "  12.35\n"
            "team-b  -         0                               0               -/-         -      0"
            "      0\n");
}

TEST(ClientViews, QueuesAcceptNestedUsageAndAListOfClasses) {
  json reply = {
      {"queues",
       {{{"name", "q"},
         {"pending", json::array({{{"priority_class", "low"}, {"count", 2}}})},
         {"admitted", 1},
         {"usage", {{"h100", {{"nvidia.com/gpu", {{"used_milli", 3000}, {"nominal", 8}}}}}}}}}}};
  std::string t = queues_table(reply, {kNow, false});
  EXPECT_NE(t.find("2 (low=2)"), std::string::npos) << t;
  EXPECT_NE(t.find("3/8"), std::string::npos) << t;
}

TEST(ClientViews, NodesTable) {
  json reply = json::parse(R"({"nodes": [
    {"name": "n1", "ready": true, "registered": true, "agent": "http://127.0.0.1:4100",
     "last_seen_s_ago": 1.2, "gpu_count": 4, "gpus_allocated": 2.5,
     "gpus": [{"index": 0, "model": "H100", "allocated_milli": 1000, "jobs": [17],
               "utilization_pct": 90},
              {"index": 1, "model": "H100", "allocated_milli": 1000, "jobs": [17],
               "utilization_pct": 45},
              {"index": 2, "model": "H100", "allocated_milli": 500, "jobs": [18]},
              {"index": 3, "model": "H100", "allocated_milli": 0, "jobs": []}]},
    {"name": "n2", "ready": false, "registered": false, "last_seen_s_ago": null,
     "gpus": [{"index": 0, "model": "L4", "jobs": []}, {"index": 1, "model": "A100", "jobs": [3]}]}]})");
  EXPECT_EQ(nodes_table(reply, {kNow, false}),
            "NAME  READY  GPUS  ALLOC  UTIL  MODEL    LAST-SEEN\n"
            "n1    yes       4    2.5   68%  H100        1s ago\n"
            "n2    no        2      1     -  L4,A100      never\n");
}

TEST(ClientViews, NodeHeartbeatAsATime) {
  json reply = {{"nodes", {{{"name", "n"}, {"last_heartbeat", kNow - 30}}}}};
  EXPECT_NE(nodes_table(reply, {kNow, false}).find("30s ago"), std::string::npos);
}

TEST(ClientViews, UnixSecondsFromNumbersAndIsoStrings) {
  EXPECT_DOUBLE_EQ(unix_seconds(json(1764538000.5)), 1764538000.5);
  EXPECT_DOUBLE_EQ(unix_seconds(json(1764538000500LL)), 1764538000.5);        // ms
  EXPECT_DOUBLE_EQ(unix_seconds(json(1764538000000000000LL)), 1764538000.0);  // ns
  EXPECT_DOUBLE_EQ(unix_seconds(json("2025-11-30T21:26:40Z")), 1764538000.0);
  EXPECT_DOUBLE_EQ(unix_seconds(json("2025-11-30T21:26:40.25Z")), 1764538000.25);
  EXPECT_LT(unix_seconds(json("2025-11-30T21:26:40+02:00")), 0);  // offsets are not read
  EXPECT_LT(unix_seconds(json("yesterday")), 0);
  EXPECT_LT(unix_seconds(json(nullptr)), 0);
}

// squeue's habit: an array's pending tasks are one line, ARRAY_[ranges], where the newest is;
// running and ended tasks, and a lone pending task, keep their own lines.
TEST(ClientViews, PendingArrayTasksCollapse) {
  json jobs = json::parse(R"([
    {"id": 50, "state": "pending", "array_job": 40, "array_task": 10},
    {"id": 49, "state": "pending", "array_job": 40, "array_task": 9},
    {"id": 48, "state": "pending", "array_job": 40, "array_task": 8},
    {"id": 46, "state": "pending", "array_job": 40, "array_task": 6},
    {"id": 45, "state": "running", "array_job": 40, "array_task": 5},
    {"id": 39, "state": "pending"},
    {"id": 31, "state": "pending", "array_job": 30, "array_task": 1}
  ])");
  const json out = collapse_pending_arrays(jobs);
  ASSERT_EQ(out.size(), 4u) << out.dump();
  EXPECT_EQ(out[0]["id"], "40_[6,8-10]");
  EXPECT_EQ(out[1]["id"], 45);
  EXPECT_EQ(out[2]["id"], 39);
  EXPECT_EQ(out[3]["id"], 31);  // one pending task of its array: as it is
  const std::string table = jobs_table(json{{"jobs", jobs}}, ViewOptions{});
  EXPECT_NE(table.find("40_[6,8-10]"), std::string::npos) << table;
  const std::string all = jobs_table(json{{"jobs", jobs}}, ViewOptions{0, false, false, true});
  EXPECT_EQ(all.find("40_["), std::string::npos) << all;
}

TEST(ClientViews, SubmittedText) {
  json reply = json::parse(R"({"jobs":[{"id":17,"name":"bert","queue":"team-a"},{"id":18}]})");
  EXPECT_EQ(submitted_text(reply),
            "submitted job 17 (bert) to queue team-a\n"
            "submitted job 18\n");
  // The LocalQueue, as `sluice jobs` shows it; the ClusterQueue where its name differs.
  reply = json::parse(R"({"jobs":[{"id":19,"name":"a","queue":"team-a","local_queue":"train"},)"
                      R"({"id":20,"name":"b","queue":"default","local_queue":"default"}]})");
  EXPECT_EQ(submitted_text(reply),
            "submitted job 19 (a) to queue train (ClusterQueue team-a)\n"
            "submitted job 20 (b) to queue default\n");
}

}  // namespace
}  // namespace sluice::cli
