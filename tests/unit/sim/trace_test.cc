// Trace readers: the Philly CSV, sluice-events JSON lines, the synthetic generator, and the
// check against the configuration. Bad rows name file and line.
#include <gtest/gtest.h>

#include <map>

#include "sim/csv_text.h"
#include "sim/trace_events.h"
#include "sim/trace_philly.h"
#include "sim/trace_synthetic.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace {

using testing::load_config;
using testing::tiny_config_yaml;

using Fields = std::vector<std::string>;

// Fields keep their empty ones (a CSV row's column count depends on it); a line's trailing '\r'
// is dropped, one inside a field is kept.
TEST(CsvText, SplitsFieldsKeepingEmptyOnes) {
  EXPECT_EQ(split_fields("a,,b", ','), (Fields{"a", "", "b"}));
  EXPECT_EQ(split_fields("", ','), (Fields{""}));
  EXPECT_EQ(split_fields("a,", ','), (Fields{"a", ""}));
  EXPECT_EQ(split_fields("159-189", '-'), (Fields{"159", "189"}));
  EXPECT_EQ(split_fields("-5", '-'), (Fields{"", "5"}));
  EXPECT_EQ(split_csv("x,y\r"), (Fields{"x", "y"}));
  EXPECT_EQ(split_csv("x\r,y"), (Fields{"x\r", "y"}));
  EXPECT_EQ(split_csv("\r"), (Fields{""}));
}

TEST(PhillyTrace, ReadsRowsIntoGpuJobs) {
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "7,team,1,5,60,1\n"
      "8,team,16,6,120,0\n"
      "9,team,12,7,30,0\n";
  const TraceOutput t = read_philly("p.csv", csv, PhillyOptions{});
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.rows, 3);
  const Job& a = t.jobs[0].job;
  EXPECT_EQ(a.id, 1u);
  EXPECT_EQ(a.name, "philly-7");
  EXPECT_EQ(a.queue, "team");
  EXPECT_EQ(a.exec().priority_class, "low");  // best_effort = 1
  EXPECT_TRUE(a.preemptible);
  EXPECT_EQ(a.submit_ns, 5 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].duration_ns, 60 * kNsPerSec);
  EXPECT_EQ(a.walltime_ns, 60 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].where, "p.csv:2");
  // 16 GPUs on 8-GPU nodes: 2 pods x 8; 12 GPUs: 2 pods x 6.
  EXPECT_EQ(t.jobs[1].job.exec().priority_class, "high");
  EXPECT_FALSE(t.jobs[1].job.preemptible);
  EXPECT_EQ(t.jobs[1].job.pod_sets[0].count, 2);
  EXPECT_EQ(t.jobs[1].job.pod_sets[0].gpus, 8);
  EXPECT_EQ(t.jobs[2].job.pod_sets[0].count, 2);
  EXPECT_EQ(t.jobs[2].job.pod_sets[0].gpus, 6);
  EXPECT_EQ(t.jobs[2].job.total_requests()[kGpu], 12000);
}

TEST(PhillyTrace, BadRowsNameFileAndLine) {
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,1,0,10,0\n"
      "2,team,1,0\n"        // line 3: missing columns
      "3,team,1,0,-5,0\n"   // line 4: negative duration
      "4,team,x,0,5,0\n"    // line 5: not a number
      "5,nobody,1,0,5,0\n"  // line 6: unknown queue (found by check_against)
      "6,team,0,0,5,0\n"    // line 7: no GPUs
      "7,team,1,0,5,2\n";   // line 8: best_effort not 0/1
  TraceOutput t = read_philly("trace.csv", csv, PhillyOptions{});
  check_against(t, *load_config(tiny_config_yaml(4)));
  ASSERT_EQ(t.errors.size(), 6u);
  EXPECT_EQ(t.errors[0], "trace.csv:3: expected 6 columns, got 4");
  EXPECT_EQ(t.errors[1], "trace.csv:4: duration: -5 is negative");
  EXPECT_EQ(t.errors[2], "trace.csv:5: num_gpu: 'x' is not an integer");
  EXPECT_EQ(t.errors[3], "trace.csv:7: num_gpu: 0 is out of range (a job needs 1 to 100000 GPUs)");
  EXPECT_EQ(t.errors[4], "trace.csv:8: best_effort: '2' is not 0 or 1");
  EXPECT_EQ(t.errors[5],
            "trace.csv:6: unknown queue 'nobody' (no LocalQueue of that name in namespace "
            "'default')");
  ASSERT_EQ(t.jobs.size(), 1u);             // only line 2 survives
  EXPECT_EQ(t.jobs[0].job.priority, 1000);  // class high resolved against the config
  EXPECT_EQ(t.rows, 7);
}

TEST(PhillyTrace, MissingHeaderColumn) {
  const TraceOutput t = read_philly("t.csv", "job_id,user,num_gpu\n1,a,1\n", PhillyOptions{});
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_EQ(t.errors[0], "t.csv:1: header lacks column(s) submit_time, duration");
}

// Chronus's columns in every shape the format allows (docs/simulator.md, "philly-chronus").
const char* kChronusHeader =
    "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
    "expect_value_list,best_effort,job_type\n";

TEST(PhillyTrace, ChronusStrictSoftAndBestEffortRows) {
  const std::string csv = std::string(kChronusHeader) +
                          "0,team,1,100,10,vgg16,96,5,159-189-229-289,10-8-5-2,0,soft\n"
                          "1,team,1,200,10,alexnet,106,6,235,10,0,strict\n"
                          "2,team,1,300,10,alexnet,30,17,300,10,1,best\n"  // its submit time
                          "3,team,1,400,10,alexnet,30,17,,,0,strict\n"     // no deadline
                          "4,team,1,500,10,alexnet,30,17,90.5,,0,strict\n"
                          "5,team,1,600,10,alexnet,30,17,0,10,0,strict\n"  // 0: none
                          "6,team,1,700,10,alexnet,30,17,60-60-90,9-9-0,0,soft\r\n";
  const TraceOutput t = read_philly("c.csv", csv, PhillyOptions{});
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  ASSERT_EQ(t.jobs.size(), 7u);  // every row kept
  // Soft: the first time is the deadline, the list the utility.
  EXPECT_EQ(t.jobs[0].complete_by_ns, (100 + 159) * kNsPerSec);
  ASSERT_EQ(t.jobs[0].utility.size(), 4u);
  EXPECT_EQ(t.jobs[0].utility[1].within_ns, 189 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].utility[1].value, 8);
  EXPECT_EQ(t.jobs[0].utility[3].within_ns, 289 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].utility[3].value, 2);
  EXPECT_EQ(t.jobs[0].job.exec().priority_class, "high");
  // Strict: one pair, as before.
  EXPECT_EQ(t.jobs[1].complete_by_ns, (200 + 235) * kNsPerSec);
  ASSERT_EQ(t.jobs[1].utility.size(), 1u);
  EXPECT_EQ(t.jobs[1].utility[0].value, 10);
  // Best-effort: no deadline, no utility.
  EXPECT_EQ(t.jobs[2].complete_by_ns, 0);
  EXPECT_TRUE(t.jobs[2].utility.empty());
  EXPECT_EQ(t.jobs[2].job.exec().priority_class, "low");
  // Empty lists: kept, without a deadline.
  EXPECT_EQ(t.jobs[3].complete_by_ns, 0);
  EXPECT_TRUE(t.jobs[3].utility.empty());
  // One time without a value: value 1; decimals allowed.
  EXPECT_EQ(t.jobs[4].complete_by_ns, 500 * kNsPerSec + 90'500'000'000);
  ASSERT_EQ(t.jobs[4].utility.size(), 1u);
  EXPECT_EQ(t.jobs[4].utility[0].value, 1);
  // A lone 0: no deadline (as before lists were read).
  EXPECT_EQ(t.jobs[5].complete_by_ns, 0);
  EXPECT_TRUE(t.jobs[5].utility.empty());
  // Equal times and values are allowed; a trailing '\r' is not part of the last column.
  ASSERT_EQ(t.jobs[6].utility.size(), 3u);
  EXPECT_EQ(t.jobs[6].utility[2].value, 0);
}

TEST(PhillyTrace, MalformedChronusListsAreBadRowsWithTheirReason) {
  const std::string csv = std::string(kChronusHeader) +
                          "0,team,1,0,1,m,10,1,159-189,10,0,soft\n"         // line 2
                          "1,team,1,0,1,m,10,1,,10,0,strict\n"              // line 3
                          "2,team,1,0,1,m,10,1,159-189,,0,soft\n"           // line 4
                          "3,team,1,0,1,m,10,1,abc,10,0,strict\n"           // line 5
                          "4,team,1,0,1,m,10,1,159-x,10-8,0,soft\n"         // line 6
                          "5,team,1,0,1,m,10,1,-5,10,0,strict\n"            // line 7
                          "6,team,1,0,1,m,10,1,159--189,10-8-5,0,soft\n"    // line 8
                          "7,team,1,0,1,m,10,1,189-159,10-8,0,soft\n"       // line 9
                          "8,team,1,0,1,m,10,1,159-189,8-10,0,soft\n"       // line 10
                          "9,team,1,0,1,m,10,1,0-10,10-8,0,soft\n"          // line 11
                          "10,team,1,0,1,m,10,1,159,8.5,0,strict\n"         // line 12
                          "11,team,1,0,1,m,10,1,159,2000000000,0,strict\n"  // line 13
                          "12,team,1,0,1,m,10,1,x,10,1,best\n"              // line 14
                          "13,team,1,0,1,m,10,1,1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16-17,"
                          "1,0,soft\n"                                   // line 15
                          "14,team,1,0,1,m,10,1,159-189,10-8,0,soft\n";  // line 16: good
  const TraceOutput t = read_philly("c.csv", csv, PhillyOptions{});
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job.name, "philly-14");
  const std::vector<std::string> want = {
      "c.csv:2: expect_time_list has 2 item(s) but expect_value_list 1 ('159-189' / '10')",
      "c.csv:3: expect_time_list has 0 item(s) but expect_value_list 1 ('' / '10')",
      "c.csv:4: expect_time_list has 2 item(s) but expect_value_list 0 ('159-189' / '')",
      "c.csv:5: expect_time_list: 'abc': item 1 is not a non-negative number of seconds",
      "c.csv:6: expect_time_list: '159-x': item 2 is not a non-negative number of seconds",
      "c.csv:7: expect_time_list: '-5': item 1 is empty (items are non-negative numbers "
      "separated by '-')",
      "c.csv:8: expect_time_list: '159--189': item 2 is empty (items are non-negative numbers "
      "separated by '-')",
      "c.csv:9: expect_time_list: '189-159': item 2 is less than item 1 (times must not "
      "decrease)",
      "c.csv:10: expect_value_list: '8-10': item 2 is more than item 1 (finishing later cannot "
      "earn more)",
      "c.csv:11: expect_time_list: '0-10': item 1 is 0 (a list's times come after the "
      "submission)",
      "c.csv:12: expect_value_list: '8.5': item 1 is not a whole number from 0 to 1000000000",
      "c.csv:13: expect_value_list: '2000000000': item 1 is not a whole number from 0 to "
      "1000000000",
      "c.csv:14: expect_time_list: 'x': item 1 is not a non-negative number of seconds",
      "c.csv:15: expect_time_list: '1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16-17' has more than 16 "
      "items",
  };
  EXPECT_EQ(t.errors, want);
  EXPECT_EQ(t.rows, 15);
}

// Full value by the first time, the listed values after, nothing after the last or never.
TEST(PhillyTrace, UtilityEarnedByCompletionTime) {
  const std::vector<ValueStep> u = {
      {159 * kNsPerSec, 10}, {189 * kNsPerSec, 8}, {229 * kNsPerSec, 5}, {289 * kNsPerSec, 2}};
  const TimeNs submit = 100 * kNsPerSec;
  EXPECT_EQ(earned_value(u, submit, submit + 50 * kNsPerSec), 10);
  EXPECT_EQ(earned_value(u, submit, submit + 159 * kNsPerSec), 10);  // on time exactly
  EXPECT_EQ(earned_value(u, submit, submit + 159 * kNsPerSec + 1), 8);
  EXPECT_EQ(earned_value(u, submit, submit + 229 * kNsPerSec), 5);
  EXPECT_EQ(earned_value(u, submit, submit + 289 * kNsPerSec), 2);
  EXPECT_EQ(earned_value(u, submit, submit + 290 * kNsPerSec), 0);  // after the last
  EXPECT_EQ(earned_value(u, submit, -1), 0);                        // never finished
  EXPECT_EQ(earned_value({}, submit, submit), 0);                   // no utility
}

TEST(SluiceEvents, RebuildsJobsFromEvents) {
  const std::string text =
      "# a comment\n"
      R"({"event":"submit","time":0,"id":7,"queue":"team","priority_class":"high","pods":2,"gpus":4})"
      "\n"
      R"({"event":"start","time":10,"id":7})"
      "\n"
      R"({"event":"submit","time":12,"id":8,"queue":"team","gpus":1,"gpu_milli":500,"preemptible":false})"
      "\n"
      R"({"event":"preempt","time":40,"id":7})"
      "\n"
      R"({"event":"start","time":50,"id":7})"
      "\n"
      R"({"event":"end","time":60.5,"id":7})"
      "\n";
  const TraceOutput t = read_sluice_events("ev.jsonl", text);
  // Job 8 never ended: reported at its submit line (4).
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_EQ(t.errors[0], "ev.jsonl:4: job 8 has no end event");
  ASSERT_EQ(t.jobs.size(), 1u);
  const TraceJob& j = t.jobs[0];
  EXPECT_EQ(j.job.id, 7u);
  EXPECT_EQ(j.job.submit_ns, 0);
  // Ran 10..40 and 50..60.5: 40.5 s.
  EXPECT_EQ(j.duration_ns, 40'500'000'000);
  EXPECT_EQ(j.job.walltime_ns, j.duration_ns);
  EXPECT_EQ(j.job.pod_sets[0].count, 2);
  EXPECT_EQ(j.job.total_requests()[kGpu], 8000);
  EXPECT_EQ(j.where, "ev.jsonl:2");
}

// The server writes `walltime: null` (and the submitter) for a job run without --time: the
// replay reads its own daemon's log.
TEST(SluiceEvents, ReadsTheServersOwnSubmitEvents) {
  const std::string text =
      R"({"event":"submit","time":1764650000.5,"id":3,"name":"sh-x","namespace":"default","queue":"default","user":"alice","priority_class":"","preemptible":true,"pods":1,"gpus":0,"gpu_milli":1000,"cpu_milli":1000,"memory_mib":0,"walltime":null})"
      "\n"
      R"({"event":"start","time":1764650001,"id":3})"
      "\n"
      R"({"event":"end","time":1764650003,"id":3})"
      "\n";
  const TraceOutput t = read_sluice_events("events.jsonl", text);
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job.walltime_ns, 2 * kNsPerSec);  // none given: the true run time
  const TraceOutput bad = read_sluice_events(
      "e", R"({"event":"submit","time":0,"id":1,"queue":"q","gpus":1,"walltime":"soon"})");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0], "e:1: walltime: not a non-negative number of seconds");
  // Times and walltimes past 4e9 s (~126 years) are bad rows: a time plus a walltime must stay
  // inside int64 nanoseconds (9e9 s each was accepted, and their sum overflowed).
  const TraceOutput huge = read_sluice_events(
      "e", R"({"event":"submit","time":1764650000,"id":1,"queue":"q","gpus":1,"walltime":8e9})");
  ASSERT_EQ(huge.errors.size(), 1u);
  EXPECT_EQ(huge.errors[0], "e:1: walltime: not a non-negative number of seconds");
}

// An autoscaled server's log has its node pools' events (no job id): they are not rows.
TEST(SluiceEvents, SkipsTheNodePoolsEvents) {
  const std::string text =
      R"({"event":"submit","time":0,"id":3,"queue":"q","gpus":2,"walltime":null})"
      "\n"
      R"({"event":"scale-up","time":0.5,"pool":"p","node":"p-0","for_job":3})"
      "\n"
      R"({"event":"provisioner","time":1,"pool":"p","node":"p-0","op":"create","result":"ok"})"
      "\n"
      R"({"event":"start","time":2,"id":3})"
      "\n"
      R"({"event":"end","time":4,"id":3})"
      "\n"
      R"({"event":"scale-down","time":9,"pool":"p","node":"p-0"})"
      "\n"
      R"({"event":"reclaim","time":9.5,"node":"p-0","notice_s":30,"jobs":[]})"
      "\n";
  const TraceOutput t = read_sluice_events("events.jsonl", text);
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  EXPECT_EQ(t.rows, 3);  // submit, start, end
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].duration_ns, 2 * kNsPerSec);
}

// `sluice requeue` of an ended job writes a requeue event: the job runs again, its runs add up.
// The end event's history fields (state, exit_code, reason) and job_gpu_milli are not read.
TEST(SluiceEvents, RequeuedJobRunsAgain) {
  const std::string text =
      R"({"event":"submit","time":0,"id":4,"queue":"q","gpus":1,"job_gpu_milli":1000,"walltime":null})"
      "\n"
      R"({"event":"start","time":1,"id":4})"
      "\n"
      R"({"event":"end","time":3,"id":4,"state":"failed","exit_code":3,"reason":"pod 0 exited with code 3"})"
      "\n"
      R"({"event":"requeue","time":5,"id":4})"
      "\n"
      R"({"event":"start","time":6,"id":4})"
      "\n"
      R"({"event":"end","time":10,"id":4,"state":"succeeded","exit_code":0})"
      "\n"
      R"({"event":"requeue","time":11,"id":5})"
      "\n";
  const TraceOutput t = read_sluice_events("ev", text);
  ASSERT_EQ(t.errors.size(), 1u);  // the requeue of a job never submitted
  EXPECT_EQ(t.errors[0], "ev:7: job 5 has no earlier submit event");
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].duration_ns, 6 * kNsPerSec);  // 1..3 and 6..10
}

TEST(SluiceEvents, BadLinesNameFileAndLine) {
  const std::string text =
      "not json\n"
      R"({"event":"submit","time":-1,"id":1,"queue":"team","gpus":1})"
      "\n"
      R"({"event":"start","time":1,"id":99})"
      "\n"
      R"({"event":"submit","time":2,"id":2,"gpus":1})"
      "\n"
      R"({"event":"submit","time":1,"id":3,"queue":"team","gpus":1})"
      "\n";
  const TraceOutput t = read_sluice_events("ev.jsonl", text);
  ASSERT_EQ(t.errors.size(), 5u);
  EXPECT_EQ(t.errors[0], "ev.jsonl:1: not a JSON object");
  EXPECT_EQ(t.errors[1], "ev.jsonl:2: time: missing, not a number or negative");
  EXPECT_EQ(t.errors[2], "ev.jsonl:3: job 99 has no earlier submit event");
  EXPECT_EQ(t.errors[3], "ev.jsonl:4: queue: missing");
  EXPECT_EQ(t.errors[4], "ev.jsonl:5: time goes backwards (events must be in time order)");
  EXPECT_TRUE(t.jobs.empty());
}

TEST(Synthetic, MixMatchesTheSpec) {
  auto config = load_config(tiny_config_yaml(8));
  SyntheticOptions o;
  o.jobs = 20000;
  o.large_gang_fraction = 0.02;
  o.large_gang_gpus = 32;
  o.min_duration_s = 10;
  o.max_duration_s = 1000;
  Rng rng(42);
  TraceOutput t = generate_synthetic(o, *config, rng);
  ASSERT_TRUE(t.errors.empty());
  ASSERT_EQ(t.jobs.size(), 20000u);
  std::map<int64_t, int> by_gpus;
  std::map<std::string, int> by_queue, by_class;
  int preemptible = 0;
  TimeNs last = 0;
  for (const auto& tj : t.jobs) {
    ++by_gpus[tj.job.total_requests()[kGpu] / 1000];
    ++by_queue[tj.job.queue];
    ++by_class[tj.job.exec().priority_class];
    preemptible += tj.job.preemptible;
    EXPECT_GE(tj.job.submit_ns, last);  // arrivals in time order
    last = tj.job.submit_ns;
    EXPECT_GE(tj.duration_ns, 10 * kNsPerSec - 1);
    EXPECT_LE(tj.duration_ns, 1000 * kNsPerSec + 1);
  }
  const double n = 20000;
  // Large gangs 2%; the other 98% split 70/10/15/5 (tolerance ~4 sigma).
  EXPECT_NEAR(by_gpus[32] / n, 0.02, 0.005);
  EXPECT_NEAR(by_gpus[1] / n, 0.98 * 0.70, 0.015);
  EXPECT_NEAR(by_gpus[2] / n, 0.98 * 0.10, 0.01);
  EXPECT_NEAR(by_gpus[4] / n, 0.98 * 0.15, 0.01);
  EXPECT_NEAR(by_gpus[8] / n, 0.98 * 0.05, 0.007);
  EXPECT_EQ(by_gpus.size(), 5u);
  EXPECT_NEAR(by_class["high"] / n, 0.2, 0.015);
  EXPECT_NEAR(preemptible / n, 0.5, 0.02);
  EXPECT_NEAR(by_queue["team"] / n, 0.5, 0.02);  // two LocalQueues, drawn uniformly
  // Mean rate 0.1/s: 20000 arrivals take about 200000 s (diurnal swings average out over days).
  EXPECT_NEAR(static_cast<double>(last) / 1e9 / 200000, 1.0, 0.1);
  // 32 GPUs on an 8-GPU node: 4 pods x 8.
  for (const auto& tj : t.jobs)
    if (tj.job.total_requests()[kGpu] == 32000) {
      EXPECT_EQ(tj.job.pod_sets[0].count, 4);
      break;
    }
}

TEST(Synthetic, SameSeedSameJobs) {
  auto config = load_config(tiny_config_yaml(8));
  SyntheticOptions o;
  o.jobs = 500;
  Rng r1(7), r2(7), r3(8);
  const auto a = generate_synthetic(o, *config, r1);
  const auto b = generate_synthetic(o, *config, r2);
  const auto c = generate_synthetic(o, *config, r3);
  bool same = true, differs = false;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    same &= a.jobs[i].job.submit_ns == b.jobs[i].job.submit_ns &&
            a.jobs[i].duration_ns == b.jobs[i].duration_ns &&
            a.jobs[i].job.queue == b.jobs[i].job.queue;
    differs |= a.jobs[i].job.submit_ns != c.jobs[i].job.submit_ns;
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace sluice::sim
