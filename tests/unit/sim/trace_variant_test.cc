// Trace variants: parsing, and each step's effect on a small hand-made trace.
#include "sim/trace_variant.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/trace_philly.h"

namespace sluice::sim {
namespace {

// 100 jobs over 4 queues, one every 10 s; every 4th best-effort; strict ones have a deadline
// 50 s after their submission.
TraceOutput trace100() {
  std::string csv = "job_id,user,num_gpu,submit_time,duration,best_effort,expect_time_list\n";
  for (int i = 0; i < 100; ++i) {
    const bool be = i % 4 == 3;
    csv += std::to_string(i) + ",q" + std::to_string(i % 4) + ",1," + std::to_string(10 * i) +
           ",30," + (be ? "1," + std::to_string(10 * i) : "0,50") + "\n";
  }
  TraceOutput t = read_philly("t.csv", csv, PhillyOptions{});
  EXPECT_TRUE(t.errors.empty());
  return t;
}

int best_effort(const TraceOutput& t) {
  int n = 0;
  for (const auto& tj : t.jobs) n += tj.job.exec().priority_class == "low" ? 1 : 0;
  return n;
}

TEST(TraceVariant, ParsesStepsAndNamesTheBadOne) {
  std::string why;
  auto v = parse_variant("resample,load=1.5,best-effort=0.3,shift-vcs,seed=7", &why);
  ASSERT_TRUE(v) << why;
  EXPECT_TRUE(v->resample);
  EXPECT_TRUE(v->shift_vcs);
  EXPECT_DOUBLE_EQ(v->load, 1.5);
  EXPECT_DOUBLE_EQ(*v->best_effort_share, 0.3);
  EXPECT_EQ(*v->seed, 7u);
  EXPECT_TRUE(parse_variant("base", &why));
  EXPECT_DOUBLE_EQ(*parse_variant("strict", &why)->best_effort_share, 0);
  EXPECT_FALSE(parse_variant("load=0", &why));
  EXPECT_NE(why.find("load: '0' is not in [0.1, 10]"), std::string::npos) << why;
  EXPECT_FALSE(parse_variant("best-effort=2", &why));
  EXPECT_FALSE(parse_variant("seed=-1", &why));
  EXPECT_FALSE(parse_variant("reverse", &why));
  EXPECT_NE(why.find("unknown step 'reverse'"), std::string::npos) << why;
}

TEST(TraceVariant, LoadCompressesInterArrivalsAndMovesDeadlines) {
  TraceOutput t = trace100();
  Rng rng(1);
  apply_variant(t, *parse_variant("load=2", nullptr), {}, rng);
  // Submit 10 i s -> 5 i s; a strict job's deadline stays 50 s after its submission.
  EXPECT_EQ(t.jobs[10].job.submit_ns, 50 * kNsPerSec);
  EXPECT_EQ(t.jobs[10].complete_by_ns, 100 * kNsPerSec);
  ASSERT_EQ(t.jobs[10].utility.size(), 1u);  // counts from the submission: unchanged
  EXPECT_EQ(t.jobs[10].utility[0].within_ns, 50 * kNsPerSec);
  EXPECT_EQ(t.jobs[3].complete_by_ns, 0);  // best-effort: none
}

TEST(TraceVariant, StrictAndBestEffortShares) {
  TraceOutput strict = trace100();
  Rng rng(1);
  apply_variant(strict, *parse_variant("strict", nullptr), {}, rng);
  EXPECT_EQ(best_effort(strict), 0);
  for (const auto& tj : strict.jobs) EXPECT_FALSE(tj.job.preemptible);

  TraceOutput most = trace100();  // 25 best-effort -> about 80
  apply_variant(most, *parse_variant("best-effort=0.8", nullptr), {}, rng);
  EXPECT_GT(best_effort(most), 65);
  EXPECT_LT(best_effort(most), 95);
  for (const auto& tj : most.jobs)
    if (tj.job.exec().priority_class == "low") {
      EXPECT_TRUE(tj.job.preemptible);
      EXPECT_EQ(tj.complete_by_ns, 0);  // best-effort work has no deadline
      EXPECT_TRUE(tj.utility.empty());  // nor a utility
    }
}

TEST(TraceVariant, SlackScalesEachDeadlineBeyondTheRunTime) {
  std::string why;
  EXPECT_FALSE(parse_variant("slack=-1", &why));
  EXPECT_NE(why.find("slack: '-1' is not in [0, 10]"), std::string::npos) << why;
  // Runs 30 s, deadline 50 s after submission: 20 s of slack, halved to 10 s.
  TraceOutput t = trace100();
  Rng rng(1);
  apply_variant(t, *parse_variant("slack=0.5,load=2", &why), {}, rng);
  const TraceJob& strict = t.jobs[10];
  EXPECT_EQ(strict.complete_by_ns, strict.job.submit_ns + 40 * kNsPerSec);
  ASSERT_EQ(strict.utility.size(), 1u);
  EXPECT_EQ(strict.utility[0].within_ns, 40 * kNsPerSec);
  EXPECT_EQ(t.jobs[3].complete_by_ns, 0);  // best-effort: no deadline to move
  // Slack 0: due when the run time is up; a deadline shorter than the run time stays.
  TraceOutput tight = trace100();
  tight.jobs[0].complete_by_ns = tight.jobs[0].job.submit_ns + 20 * kNsPerSec;
  apply_variant(tight, *parse_variant("slack=0", &why), {}, rng);
  EXPECT_EQ(tight.jobs[0].complete_by_ns, tight.jobs[0].job.submit_ns + 20 * kNsPerSec);
  EXPECT_EQ(tight.jobs[1].complete_by_ns, tight.jobs[1].job.submit_ns + 30 * kNsPerSec);
}

TEST(TraceVariant, ResampleDrawsWithReplacementUnderNewIds) {
  TraceOutput a = trace100(), b = trace100();
  Rng r1(5), r2(5);
  apply_variant(a, *parse_variant("resample", nullptr), {}, r1);
  apply_variant(b, *parse_variant("resample", nullptr), {}, r2);
  ASSERT_EQ(a.jobs.size(), 100u);
  std::set<std::string> names;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].job.id, static_cast<JobId>(i + 1));
    EXPECT_EQ(a.jobs[i].job.name, b.jobs[i].job.name);  // same seed, same draws
    names.insert(a.jobs[i].job.name.substr(0, a.jobs[i].job.name.find('~')));
  }
  EXPECT_LT(names.size(), 100u);  // some job drawn twice (100 draws of 100: ~63 distinct)
}

TEST(TraceVariant, ShiftVcsRotatesEachQueueWithinTheSpan) {
  TraceOutput t = trace100();
  Rng rng(3);
  apply_variant(t, *parse_variant("shift-vcs", nullptr), {}, rng);
  std::map<std::string, std::set<TimeNs>> gaps;
  for (const auto& tj : t.jobs) {
    EXPECT_GE(tj.job.submit_ns, 0);
    EXPECT_LE(tj.job.submit_ns, 990 * kNsPerSec);
    if (tj.complete_by_ns > 0) {
      EXPECT_EQ(tj.complete_by_ns - tj.job.submit_ns, 50 * kNsPerSec);
    }
  }
  // Each queue keeps its 25 jobs, all at distinct times.
  std::map<std::string, std::set<TimeNs>> at;
  for (const auto& tj : t.jobs) at[tj.job.queue].insert(tj.job.submit_ns);
  for (const auto& [q, s] : at) EXPECT_EQ(s.size(), 25u) << q;
}

TEST(TraceVariant, JitterMovesEachSubmitWithinItsBoundAndTheSpan) {
  TraceOutput t = trace100(), other = trace100();
  Rng r1(9), r2(9);
  apply_variant(t, *parse_variant("jitter=4", nullptr), {}, r1);
  apply_variant(other, *parse_variant("jitter=4,replica=1", nullptr), {}, r2);
  int moved = 0, differ = 0;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    const TimeNs was = static_cast<TimeNs>(10 * i) * kNsPerSec;
    const TimeNs is = t.jobs[i].job.submit_ns;
    EXPECT_LE(std::llabs(is - was), 4 * kNsPerSec) << i;
    EXPECT_GE(is, 0);
    EXPECT_LE(is, 990 * kNsPerSec);
    moved += is != was ? 1 : 0;
    differ += is != other.jobs[i].job.submit_ns ? 1 : 0;
    if (t.jobs[i].complete_by_ns > 0) {
      EXPECT_EQ(t.jobs[i].complete_by_ns - is, 50 * kNsPerSec);
    }
  }
  EXPECT_GT(moved, 90);
  EXPECT_GT(differ, 90);  // another replica: other draws
  TraceOutput again = trace100();
  Rng r3(9);
  apply_variant(again, *parse_variant("replica=0,jitter=4", nullptr), {}, r3);
  for (size_t i = 0; i < t.jobs.size(); ++i)
    EXPECT_EQ(again.jobs[i].job.submit_ns, t.jobs[i].job.submit_ns);  // same seed, same draws
  std::string why;
  EXPECT_FALSE(parse_variant("jitter=-1", &why));
  EXPECT_NE(why.find("jitter: '-1' is not in [0, 3600] seconds"), std::string::npos) << why;
  for (const char* bad : {"jitter=nan", "jitter=1e9", "jitter=", "replica=-1", "replica=1.5",
                          "replica=2e6", "replica=x"})
    EXPECT_FALSE(parse_variant(bad, &why)) << bad;
  EXPECT_NE(why.find("replica: 'x' is not an integer in [0, 1000000]"), std::string::npos) << why;
}

TEST(TraceVariant, WalltimeErrorMakesEstimatesWrongBothWaysWithinTheFactor) {
  TraceOutput t = trace100(), other = trace100();
  Rng r1(5), r2(5);
  apply_variant(t, *parse_variant("walltime-error=3", nullptr), {}, r1);
  apply_variant(other, *parse_variant("walltime-error=3,replica=2", nullptr), {}, r2);
  int over = 0, under = 0, differ = 0;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    const TimeNs run = t.jobs[i].duration_ns, est = t.jobs[i].job.walltime_ns;
    EXPECT_EQ(run, 30 * kNsPerSec);  // run times and submits do not change
    EXPECT_EQ(t.jobs[i].job.submit_ns, static_cast<TimeNs>(10 * i) * kNsPerSec);
    EXPECT_GE(est, 10 * kNsPerSec - 1) << i;  // 30 s / 3
    EXPECT_LE(est, 90 * kNsPerSec + 1) << i;  // 30 s x 3
    over += est > run ? 1 : 0;
    under += est < run ? 1 : 0;
    differ += est != other.jobs[i].job.walltime_ns ? 1 : 0;
  }
  EXPECT_GT(over, 30);
  EXPECT_GT(under, 30);
  EXPECT_GT(differ, 90);  // another replica: other draws
  TraceOutput plain = trace100();
  Rng r3(5);
  apply_variant(plain, *parse_variant("walltime-error=1", nullptr), {}, r3);
  for (const auto& tj : plain.jobs) EXPECT_EQ(tj.job.walltime_ns, tj.duration_ns);
  std::string why;
  for (const char* bad :
       {"walltime-error=0.5", "walltime-error=101", "walltime-error=nan", "walltime-error="})
    EXPECT_FALSE(parse_variant(bad, &why)) << bad;
  EXPECT_NE(why.find("walltime-error: '' is not in [1, 100]"), std::string::npos) << why;
}

}  // namespace
}  // namespace sluice::sim
