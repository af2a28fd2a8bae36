// GET /v1/advise's report (server/advise_report.h) from job and node views, and `sluice advise`'s
// text of it (cli/client_advise.h).
#include "server/advise_report.h"

#include <gtest/gtest.h>

#include "cli/client_advise.h"

namespace sluice::server {
namespace advise_report_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using nlohmann::json;

// n1: two H100 80 GiB; m1: an H100 cut into MIG slices (never registered: configured only).
json nodes() {
  return {{"nodes",
           {{{"name", "n1"},
             {"gpus",
              {{{"index", 0}, {"model", "H100"}, {"memory_mib", 81920}, {"mig", json::array()}},
               {{"index", 1}, {"model", "H100"}, {"memory_mib", 81920}, {"mig", json::array()}}}}},
            {{"name", "m1"},
             {"gpus",
              {{{"index", 0},
                {"model", "H100"},
                {"memory_mib", 81920},
                {"mig", {"1g.10gb", "1g.20gb", "3g.40gb"}}}}}}}}};
}

json job(int id, const std::string& user, int64_t peak_mib, int util, double start, double end) {
  json use = peak_mib < 0 ? json(nullptr)
                          : json{{"peak_mib", peak_mib},
                                 {"mean_mib", peak_mib / 2},
                                 {"mean_util_pct", util},
                                 {"samples", 5}};
  return {{"id", id},
          {"name", "j" + std::to_string(id)},
          {"namespace", "team-a"},
          {"user", user},
          {"gpu_milli", 1000},
          {"start_time", start},
          {"end_time", end},
          {"placement", {{{"pod", 0}, {"node", "n1"}, {"gpus", {1}}}}},
          {"gpu_use", use}};
}

TEST(AdviseReport, OverRequestingJobFitsASlice) {
  // Job 1: an hour at 25%, peak 11 GiB; job 2: half an hour, 70 GiB (fits nothing smaller);
  // job 3: measured nothing; job 4 (another user): never started.
  json jobs = {{"jobs",
                {job(1, "ann", 11 * 1024, 25, 1000, 4600), job(2, "ann", 70 * 1024, 90, 0, 0),
                 job(3, "ann", -1, 0, 1000, 2800), job(4, "bob", 1024, 10, 0, 0)}}};
  jobs["jobs"][1]["start_time"] = 1000;
  jobs["jobs"][1]["end_time"] = 2800;
  jobs["jobs"][3]["start_time"] = nullptr;
  const json r = advise_report(jobs, nodes(), {0.2, 10'000});
  ASSERT_EQ(r["jobs"].size(), 2u);  // the measured ones
  EXPECT_EQ(r["jobs"][0]["fits"], "1g.20gb");
  EXPECT_EQ(r["jobs"][0]["advice"], "requested 1 H100 80GB, peak 11 GiB: fits 1g.20gb");
  EXPECT_TRUE(r["jobs"][1]["fits"].is_null());
  ASSERT_EQ(r["totals"].size(), 1u);  // bob's job never held a GPU
  const json& t = r["totals"][0];
  EXPECT_EQ(t["user"], "ann");
  EXPECT_EQ(t["jobs"], 3);
  EXPECT_EQ(t["measured_jobs"], 2);
  EXPECT_DOUBLE_EQ(t["gpu_hours_requested"].get<double>(), 2.0);  // 1 + 0.5 + 0.5
  EXPECT_DOUBLE_EQ(t["gpu_hours_measured"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(t["gpu_hours_used"].get<double>(), 0.25 + 0.45);
  const std::string text = cli::advise_text(r);
  EXPECT_NE(text.find("team-a     ann"), std::string::npos) << text;
  EXPECT_NE(text.find("1 team-a/j1 (ann): requested 1 H100 80GB, peak 11 GiB: fits 1g.20gb"),
            std::string::npos)
      << text;
}

TEST(AdviseReport, HeadroomAndNothingToSay) {
  json jobs = {{"jobs", {job(1, "ann", 9 * 1024, 50, 1, 3601)}}};
  // 9 GiB: with no headroom a 10 GB slice holds it; with 20% (10.8 GiB) the 20 GB one.
  EXPECT_EQ(advise_report(jobs, nodes(), {0.0, 0})["jobs"][0]["fits"], "1g.10gb");
  EXPECT_EQ(advise_report(jobs, nodes(), {0.2, 0})["jobs"][0]["fits"], "1g.20gb");
  // A cluster of whole H100s alone: nothing smaller, said so.
  json only_h100 = nodes();
  only_h100["nodes"].erase(1);
  const json r = advise_report(jobs, only_h100, {0.2, 0});
  EXPECT_TRUE(r["jobs"][0]["fits"].is_null());
  EXPECT_NE(cli::advise_text(r).find("no job with a measured use would fit"), std::string::npos);
  // Garbage from a server is read leniently, not thrown on.
  EXPECT_TRUE(advise_report(json("x"), json(3), {})["jobs"].empty());
}

}  // namespace
}  // namespace advise_report_test
}  // namespace sluice::server
