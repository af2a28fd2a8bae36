// Start predictions in the core (core/cycle/predict.h): the forward replay of a copy of the
// state, on hand-worked cases. The simulator's accuracy figures are in tests/unit/sim.
#include "core/cycle/predict.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../test_config.h"

namespace sluice {
namespace predict_test {
namespace {

constexpr TimeNs kS = kNsPerSec;

std::shared_ptr<Config> cluster(int nodes, int gpus) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(nodes, gpus);
  testing::add_queue(*c, "a", static_cast<int64_t>(nodes) * gpus / 2);
  testing::add_queue(*c, "b", static_cast<int64_t>(nodes) * gpus / 2);
  return c;
}

Job job(JobId id, const std::string& q, int gpus, int pods, TimeNs submit, TimeNs walltime) {
  Job j = testing::make_job(id, q, gpus, pods, submit);
  j.walltime_ns = walltime;
  return j;
}

void submit(Scheduler& s, const Job& j) {
  ASSERT_EQ(s.submit(j).status, SubmitStatus::kAccepted) << j.id;
}

void cycle(Scheduler& s, TimeNs now) {
  s.apply(s.run_cycle(now), now);
}

// Two nodes of 4 GPUs. Job 1 (a gang of 2 x 4 GPUs, walltime 600 s) runs from 0; at 10 s the
// gang job 2 (2 x 4) waits for the whole cluster: it starts when job 1 ends, at 600 s.
TEST(CorePredict, RunningJobBlocksAGangUntilItsWalltimeEnds) {
  auto config = cluster(2, 4);
  Scheduler s(config);
  submit(s, job(1, "a", 4, 2, 0, 600 * kS));
  cycle(s, 0);
  ASSERT_EQ(s.running_count(), 1u);
  submit(s, job(2, "b", 4, 2, 10 * kS, 60 * kS));
  cycle(s, 10 * kS);
  ASSERT_EQ(s.pending_count(), 1u);

  const Prediction p = predict_starts(config, s, 10 * kS, {2});
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_EQ(p.starts[0].outcome, PredictOutcome::kStarts);
  EXPECT_EQ(p.starts[0].start_ns, 600 * kS);  // job 1's start + walltime
  EXPECT_FALSE(p.bounded);
  // The live scheduler is untouched.
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_EQ(s.running_count(), 1u);
}

// A running job without a walltime ends after its queue's default; with no default either,
// after the option's unknown_walltime_ns.
TEST(CorePredict, UnknownWalltimeUsesTheQueueDefaultThenTheOption) {
  for (const TimeNs queue_default : {300 * kS, TimeNs{0}}) {
    auto config = cluster(1, 4);
    for (auto& q : config->cluster_queues) q.default_walltime_ns = queue_default;
    Scheduler s(config);
    submit(s, job(1, "a", 4, 1, 0, 0));  // no walltime
    cycle(s, 0);
    submit(s, job(2, "b", 4, 1, 5 * kS, 10 * kS));
    cycle(s, 5 * kS);
    PredictOptions o;
    o.unknown_walltime_ns = 1000 * kS;
    const Prediction p = predict_starts(config, s, 5 * kS, {2}, o);
    ASSERT_EQ(p.starts[0].outcome, PredictOutcome::kStarts);
    // default 300 s: starts at 300; no default: the option's 1000 s.
    EXPECT_EQ(p.starts[0].start_ns, queue_default > 0 ? 300 * kS : 1000 * kS);
    EXPECT_EQ(predicted_walltime(*config, job(9, "a", 1, 1, 0, 0), o),
              queue_default > 0 ? 300 * kS : 1000 * kS);
  }
}

// A job larger than the cluster never starts; an id that is not pending is said to be so.
TEST(CorePredict, NeverFitsGivesNone) {
  auto config = cluster(1, 4);
  Scheduler s(config);
  submit(s, job(1, "a", 4, 1, 0, 100 * kS));
  cycle(s, 0);
  submit(s, job(2, "a", 4, 2, 1 * kS, 10 * kS));  // 8 GPUs on a 4-GPU cluster
  submit(s, job(3, "b", 2, 1, 1 * kS, 10 * kS));
  cycle(s, 1 * kS);
  const Prediction p = predict_starts(config, s, 1 * kS, {2, 3, 1, 77});
  ASSERT_EQ(p.starts.size(), 4u);
  EXPECT_EQ(p.starts[0].outcome, PredictOutcome::kNever);  // 8 GPUs: fits no state
  EXPECT_EQ(p.starts[0].start_ns, -1);
  EXPECT_EQ(p.starts[1].outcome, PredictOutcome::kStarts);  // after job 1, at 100 s
  EXPECT_EQ(p.starts[1].start_ns, 100 * kS);
  EXPECT_EQ(p.starts[2].outcome, PredictOutcome::kNotPending);  // running
  EXPECT_EQ(p.starts[3].outcome, PredictOutcome::kNotPending);  // unknown
  EXPECT_FALSE(p.bounded);
  EXPECT_STREQ(outcome_name(p.starts[0].outcome), "never");
}

// A node that takes no new pods stays so in the copy: the waiting job gets the other node only.
TEST(CorePredict, NotReadyNodesStayOutOfTheCopy) {
  auto config = cluster(2, 4);
  Scheduler s(config);
  s.set_node_ready(1, false);
  submit(s, job(1, "a", 4, 1, 0, 50 * kS));
  cycle(s, 0);
  submit(s, job(2, "b", 4, 1, 1 * kS, 10 * kS));
  cycle(s, 1 * kS);
  ASSERT_EQ(s.pending_count(), 1u);
  const PredictInput in = predict_input(s, 1 * kS);
  ASSERT_EQ(in.not_ready.size(), 1u);
  EXPECT_EQ(predict_starts(config, in, {2}).starts[0].start_ns, 50 * kS);  // not at once
}

// The copy carries the queues' fairness debt: queue a ran the cluster for an hour, so when the
// blocker ends, b's job goes first although a's was submitted with the same time and a lower
// id. The live scheduler, driven the same way, does the same.
TEST(CorePredict, FairnessDebtIsCarriedIntoTheCopy) {
  auto config = cluster(1, 4);
  Scheduler s(config);
  submit(s, job(1, "a", 4, 1, 0, 3600 * kS));
  cycle(s, 0);
  ASSERT_TRUE(s.finish(1, 3600 * kS));
  submit(s, job(2, "b", 4, 1, 3600 * kS, 100 * kS));  // the blocker: 3600..3700
  cycle(s, 3600 * kS);
  submit(s, job(3, "a", 4, 1, 3601 * kS, 100 * kS));
  submit(s, job(4, "b", 4, 1, 3601 * kS, 100 * kS));
  cycle(s, 3601 * kS);
  ASSERT_GT(s.fairness_debt(0), s.fairness_debt(1));  // a's debt > b's

  const Prediction p = predict_starts(config, s, 3601 * kS, {3, 4});
  EXPECT_EQ(p.starts[1].start_ns, 3700 * kS);  // job 4 (b) first
  EXPECT_EQ(p.starts[0].start_ns, 3800 * kS);  // then job 3 (a)
  // What the live scheduler does once the blocker ends at its walltime.
  ASSERT_TRUE(s.finish(2, 3700 * kS));
  const CycleResult r = s.run_cycle(3700 * kS);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 4u);
}

// Many waiting jobs, several queues: the same input gives the same prediction, and the copy
// (step 1) replays to the same result as the scheduler itself.
TEST(CorePredict, Deterministic) {
  auto config = cluster(2, 8);
  Scheduler s(config);
  for (JobId id = 1; id <= 60; ++id)
    submit(s,
           job(id, id % 3 ? "a" : "b", 1 + static_cast<int>(id % 4), 1 + static_cast<int>(id % 2),
               static_cast<TimeNs>(id) * kS, static_cast<TimeNs>(30 + id * 7 % 90) * kS));
  cycle(s, 60 * kS);
  std::vector<JobId> want;
  s.for_each_pending([&](const Scheduler::PendingJob& p) { want.push_back(p.job.id); });
  std::sort(want.begin(), want.end());
  ASSERT_GT(want.size(), 20u);
  const Prediction p1 = predict_starts(config, s, 60 * kS, want);
  const Prediction p2 = predict_starts(config, predict_input(s, 60 * kS), want);
  ASSERT_EQ(p1.starts.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p1.starts[i].start_ns, p2.starts[i].start_ns) << "job " << want[i];
    EXPECT_EQ(p1.starts[i].outcome, PredictOutcome::kStarts) << "job " << want[i];
    EXPECT_GE(p1.starts[i].start_ns, 60 * kS);
  }
  EXPECT_EQ(p1.cycles, p2.cycles);
}

// Bounded cost: 3,000 one-GPU jobs queued on 4 GPUs need ~750 cycles; a bound of 50 cycles
// stops the replay there, and the jobs left are beyond the bound, not "never". A stop() that
// says so after 3 calls stops it after its 4th cycle.
TEST(CorePredict, ReplayStopsAtItsBound) {
  auto config = cluster(1, 4);
  Scheduler s(config);
  for (JobId id = 1; id <= 3000; ++id) submit(s, job(id, id % 2 ? "a" : "b", 1, 1, 0, 10 * kS));
  cycle(s, 0);
  ASSERT_EQ(s.pending_count(), 2996u);
  std::vector<JobId> want;
  s.for_each_pending([&](const Scheduler::PendingJob& p) { want.push_back(p.job.id); });
  PredictOptions o;
  o.max_cycles = 50;
  const Prediction p = predict_starts(config, s, 0, want, o);
  EXPECT_TRUE(p.bounded);
  EXPECT_EQ(p.cycles, 50);
  EXPECT_EQ(p.horizon_ns, 500 * kS);  // an end every 10 s
  int64_t started = 0, beyond = 0;
  for (const auto& ps : p.starts) {
    started += ps.outcome == PredictOutcome::kStarts;
    beyond += ps.outcome == PredictOutcome::kBeyondBound;
  }
  EXPECT_EQ(started, 196);  // the first cycle (at 0) finds the GPUs busy; 4 in each of 49 more
  EXPECT_EQ(beyond, 2800);

  int calls = 0;
  PredictOptions stop;
  stop.stop = [&calls] { return ++calls > 3; };
  const Prediction q = predict_starts(config, s, 0, want, stop);
  EXPECT_TRUE(q.bounded);
  EXPECT_EQ(q.cycles, 4);
}

// Expected arrivals: what arrived in the last window arrives again, shifted by one window, then
// two, up to the horizon. One 4-GPU node; a blocker runs until 100 s; W (priority 0, 4 GPUs)
// waits since 10 s. A (priority 100, 4 GPUs, 50 s) arrived at 5 s. Window 20 s, horizon 60 s:
// A arrives again at 25, 45 and 65 s, and each copy outranks W: W starts at 100 + 3 x 50 s.
TEST(CorePredict, ExpectedArrivalsRepeatTheLastWindow) {
  auto config = cluster(1, 4);
  Scheduler s(config);
  submit(s, job(1, "a", 4, 1, 0, 100 * kS));
  cycle(s, 0);
  Job a = job(2, "b", 4, 1, 5 * kS, 50 * kS);
  a.priority = 100;
  submit(s, job(3, "a", 4, 1, 10 * kS, 50 * kS));  // W
  cycle(s, 10 * kS);

  PredictInput in = predict_input(s, 10 * kS);
  in.recent = {a};
  EXPECT_EQ(predict_starts(config, in, {3}).starts[0].start_ns, 100 * kS);  // option off
  PredictOptions o;
  o.arrival_window_ns = 20 * kS;
  o.arrival_horizon_ns = 60 * kS;
  const Prediction p = predict_starts(config, in, {3}, o);
  EXPECT_EQ(p.starts[0].start_ns, 250 * kS);  // after A's copies of 25, 45 and 65 s
  EXPECT_EQ(p.starts[0].outcome, PredictOutcome::kStarts);
}

}  // namespace
}  // namespace predict_test
}  // namespace sluice
