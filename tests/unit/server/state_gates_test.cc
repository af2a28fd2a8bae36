// Slurm's job control in the state machine (state_gates.cc): held jobs, dependencies, array
// throttles and singletons keep jobs from the scheduler; hold, release and requeue; all of it
// survives a restart.
#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace state_gates_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

std::string ctl_yaml(const std::string& name, int gpus, const std::string& extra) {
  return job_yaml_with(name, gpus, extra);
}

struct GatesTest : ServerStateTest {
  // One cycle, its pods delivered and started.
  void run_cycle(TimeNs now) {
    st.cycle(now);
    st.release_staged();
    for (const char* n : {"n0", "n1"}) sync(n, {}, now);
  }
  // Every pod of running job `id` exits with `code`.
  void exit_job(JobId id, int code, TimeNs now) {
    const JobRecord* r = st.find(id);
    ASSERT_EQ(r->state, JobState::kRunning);
    const auto pods = r->pods;  // the record changes as they exit
    for (size_t i = 0; i < pods.size(); ++i) {
      proto::SyncRequest s;
      s.exits.push_back({id, static_cast<int32_t>(i), code, 0, "exited", "", now});
      sync(pods[i].node, s, now);
    }
  }
  std::string reason(JobId id) { return st.job_view(*st.find(id), 0)["reason"]; }
};

TEST_F(GatesTest, HeldJobNeverStartsUntilReleased) {
  up(0);
  const JobId a = submit(ctl_yaml("a", 1, "hold: true"), 1 * kS);
  run_cycle(2 * kS);
  run_cycle(3 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kPending);  // the cluster is empty, it is held
  EXPECT_NE(reason(a).find("held by a user"), std::string::npos) << reason(a);
  EXPECT_NE(st.explain(a, 3 * kS).find("Why: held by a user (sluice release"), std::string::npos)
      << st.explain(a, 3 * kS);
  std::string err;
  uint64_t ticket = 0;
  EXPECT_EQ(st.release(a, 4 * kS, &err, &ticket), 200) << err;
  EXPECT_EQ(st.release(a, 4 * kS, &err, &ticket), 409);  // not held any more
  run_cycle(5 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_EQ(st.hold(a, 6 * kS, &err, &ticket), 409);  // running: requeue --hold instead
  EXPECT_NE(err.find("requeue --hold"), std::string::npos) << err;
}

TEST_F(GatesTest, HoldTakesAPendingJobOutOfTheQueue) {
  up(0);
  const JobId big = submit(job_yaml("big", 2, 4), 1 * kS);  // every GPU
  const JobId b = submit(job_yaml("b", 1, 1), 1 * kS);
  run_cycle(2 * kS);
  ASSERT_EQ(st.find(b)->state, JobState::kPending);
  std::string err;
  uint64_t ticket = 0;
  ASSERT_EQ(st.hold(b, 3 * kS, &err, &ticket), 200) << err;
  EXPECT_EQ(st.scheduler().find_pending(b), nullptr);
  exit_job(big, 0, 4 * kS);
  run_cycle(5 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kPending);  // room now, but held
  ASSERT_EQ(st.release(b, 6 * kS, &err, &ticket), 200);
  run_cycle(7 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kRunning);
}

TEST_F(GatesTest, AfterOkWaitsThenStartsOrIsCancelledWhenItCanNeverBeMet) {
  up(0);
  const JobId a = submit(job_yaml("a", 1, 1), 1 * kS);
  const JobId ok =
      submit(ctl_yaml("ok", 1, "dependency: 'afterok:" + std::to_string(a) + "'"), 1 * kS);
  const JobId notok =
      submit(ctl_yaml("notok", 1, "dependency: 'afternotok:" + std::to_string(a) + "'"), 1 * kS);
  const JobId any =
      submit(ctl_yaml("any", 1, "dependency: 'afterany:" + std::to_string(a) + "'"), 1 * kS);
  run_cycle(2 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_EQ(st.find(ok)->state, JobState::kPending);
  EXPECT_EQ(reason(ok), "waiting for its dependency afterok:" + std::to_string(a) + " (job " +
                            std::to_string(a) + " is running)");
  exit_job(a, 0, 3 * kS);
  run_cycle(4 * kS);
  EXPECT_EQ(st.find(ok)->state, JobState::kRunning);
  EXPECT_EQ(st.find(any)->state, JobState::kRunning);
  EXPECT_EQ(st.find(notok)->state, JobState::kCancelled);  // a succeeded: never
  EXPECT_NE(
      st.find(notok)->reason.find("can never be met (job " + std::to_string(a) + " is succeeded)"),
      std::string::npos)
      << st.find(notok)->reason;
  // A chain: c after ok, ok fails -> c is cancelled.
  const JobId c =
      submit(ctl_yaml("c", 1, "dependency: 'afterok:" + std::to_string(ok) + "'"), 5 * kS);
  exit_job(ok, 2, 6 * kS);
  run_cycle(7 * kS);
  EXPECT_EQ(st.find(c)->state, JobState::kCancelled);
  // Unknown ids are refused at submission.
  auto out = st.submit(jobs(*cfg, ctl_yaml("d", 1, "dependency: 'afterok:999'")), 8 * kS);
  EXPECT_EQ(out.status, 400);
  EXPECT_NE(out.error.find("job 999, which this server does not know"), std::string::npos)
      << out.error;
}

TEST_F(GatesTest, ArrayTasksAreJobsAndTheThrottleHolds) {
  up(0);
  auto out = st.submit(jobs(*cfg, ctl_yaml("sweep", 1, "array: '0-4%2'")), 1 * kS);
  ASSERT_EQ(out.status, 202) << out.error;
  ASSERT_EQ(out.ids.size(), 5u);  // one record per task
  const JobId first = out.ids[0];
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(st.find(out.ids[i])->job.exec().array_job, first);
    EXPECT_EQ(st.find(out.ids[i])->job.exec().array_task, static_cast<int32_t>(i));
  }
  run_cycle(2 * kS);
  auto running = [&] {
    int n = 0;
    for (JobId id : out.ids) n += st.find(id)->state == JobState::kRunning;
    return n;
  };
  EXPECT_EQ(running(), 2);  // 8 GPUs free, throttle %2
  EXPECT_NE(reason(out.ids[4]).find("array throttle: 2 of at most 2"), std::string::npos)
      << reason(out.ids[4]);
  exit_job(out.ids[0], 0, 3 * kS);
  run_cycle(4 * kS);
  EXPECT_EQ(running(), 2);
  EXPECT_EQ(st.find(out.ids[2])->state, JobState::kRunning);  // the next task, in order
  // A dependency on the array waits for every task.
  const JobId after =
      submit(ctl_yaml("after", 1, "dependency: 'afterany:" + std::to_string(first) + "'"), 5 * kS);
  for (int round = 0; round < 2; ++round) {  // tasks 1, 2 end; then 3, 4
    for (JobId id : out.ids)
      if (st.find(id)->state == JobState::kRunning) exit_job(id, 0, (6 + round) * kS);
    run_cycle((6 + round) * kS);
    if (round == 0) {
      EXPECT_EQ(st.find(after)->state, JobState::kPending) << round;
    }
  }
  EXPECT_EQ(st.find(after)->state, JobState::kRunning) << reason(after);
}

TEST_F(GatesTest, SingletonRunsOneJobOfANameAtATime) {
  up(0);
  const JobId a = submit(ctl_yaml("solo", 1, "dependency: singleton"), 1 * kS);
  const JobId b = submit(ctl_yaml("solo", 1, "dependency: singleton"), 1 * kS);
  run_cycle(2 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_EQ(st.find(b)->state, JobState::kPending);
  EXPECT_NE(reason(b).find("singleton: job " + std::to_string(a)), std::string::npos) << reason(b);
  exit_job(a, 1, 3 * kS);
  run_cycle(4 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kRunning);
}

TEST_F(GatesTest, RequeueStopsARunningJobOrRunsAnEndedOneAgain) {
  up(0);
  const JobId a = submit(job_yaml("a", 1, 1), 1 * kS);
  run_cycle(2 * kS);
  std::string err;
  uint64_t ticket = 0;
  ASSERT_EQ(st.requeue(a, /*hold=*/true, 3 * kS, &err, &ticket), 200) << err;
  EXPECT_EQ(st.find(a)->state, JobState::kPending);
  EXPECT_TRUE(st.find(a)->held);
  auto stops = sync(st.find(a)->pods[0].node, {}, 3 * kS).stop;
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason, "requeued by a user");
  ASSERT_EQ(st.release(a, 4 * kS, &err, &ticket), 200);
  proto::SyncRequest gone;
  gone.exits.push_back({a, 0, 0, 15, "signaled", "", 4 * kS});
  sync(st.find(a)->pods[0].node, gone, 4 * kS);
  run_cycle(5 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  exit_job(a, 3, 6 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kFailed);
  ASSERT_EQ(st.requeue(a, false, 7 * kS, &err, &ticket), 200) << err;
  run_cycle(8 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_EQ(st.find(a)->attempts, 3);
  const HistoryRow* h = st.history().find(a);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->state, "running");
  EXPECT_EQ(h->preemptions, 1);  // the requeue of the running job
}

// A job cancelled while running and requeued before its pods' stop is confirmed runs again
// only once the old run is gone (tests/chaos, seed 18: cancel and requeue 23 ms apart).
TEST_F(GatesTest, ARequeuedCancelledJobWaitsForItsStoppingPods) {
  up(0);
  const JobId a = submit(job_yaml("a", 1, 1), 1 * kS);
  run_cycle(2 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  const std::string node = st.find(a)->pods[0].node;
  std::string err;
  uint64_t ticket = 0;
  ASSERT_EQ(st.cancel(a, 3 * kS, &err, &ticket), 200) << err;
  ASSERT_EQ(st.requeue(a, false, 3 * kS, &err, &ticket), 200) << err;
  run_cycle(4 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kPending);  // its pod is still in its grace
  EXPECT_NE(reason(a).find("stopping"), std::string::npos) << reason(a);
  proto::SyncRequest gone;
  gone.exits.push_back({a, 0, 0, 15, "signaled", "", 5 * kS});
  sync(node, gone, 5 * kS);
  run_cycle(6 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
}

TEST(ServerStoreGates, HoldsDependenciesAndHistorySurviveARestart) {
  const auto dir = fresh_dir("gates");
  auto cfg = config();
  JobId a = 0, b = 0, held = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    a = st.submit(jobs(*cfg, job_yaml("a", 1, 1)), 1 * kS).ids[0];
    b = st.submit(jobs(*cfg, ctl_yaml("b", 1, "dependency: 'afterok:" + std::to_string(a) + "'")),
                  1 * kS)
            .ids[0];
    held = st.submit(jobs(*cfg, ctl_yaml("h", 1, "hold: true")), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  }  // the server stops
  auto store = SqliteStore::open(dir.string());
  ASSERT_TRUE(store.ok());
  auto stored = (*store)->load_jobs();
  ASSERT_TRUE(stored.ok());
  ServerState st(cfg, store->get(), ServerOptions{});
  ASSERT_EQ((*store)->for_each_event([&](const std::string& l) { st.replay_history_line(l); }), "");
  EXPECT_TRUE(st.recover(*stored, 10 * kS).empty());
  (*store)->start();
  join(st, reg("n0"), 10 * kS);
  join(st, reg("n1"), 10 * kS);
  st.cycle(11 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kPending);  // a still runs
  EXPECT_EQ(st.find(held)->state, JobState::kPending);
  EXPECT_TRUE(st.find(held)->held);
  EXPECT_NE(st.explain(b, 11 * kS).find("waiting for its dependency afterok"), std::string::npos);
  ASSERT_NE(st.history().find(a), nullptr);
  EXPECT_EQ(st.history().find(a)->state, "running");  // from the event log
  proto::SyncRequest s;
  s.agent_id = "agent-n0";
  s.exits.push_back({a, 0, 0, 0, "exited", "", 12 * kS});
  sync_as(st, "n0", s, 12 * kS);
  st.cycle(13 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kRunning);
  EXPECT_EQ(st.find(held)->state, JobState::kPending);
  std::filesystem::remove_all(dir);
}

// Security (issue 17): a dependency names jobs of its own namespace only. Another namespace's
// job is refused at submission in the same words as a job that does not exist, and a
// dependency's reason never says anything about a job its namespace cannot see.
TEST(GatesTenants, ADependencyTellsNothingAboutAnotherNamespacesJobs) {
  const std::string other_queue = R"(
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: other}
spec: {clusterQueue: cq}
)";
  auto lc = load_server_config({Source{"test.yaml", std::string(kConfig) + other_queue}});
  ASSERT_TRUE(lc.ok()) << lc.error();
  const auto cfg = lc->config;
  ServerState st{cfg, nullptr, ServerOptions{}};
  ASSERT_EQ(join(st, reg("n0"), 0).status, 200);
  auto in = [](const std::string& ns, std::string yaml) {
    const std::string from = "namespace: team";
    yaml.replace(yaml.find(from), from.size(), "namespace: " + ns);
    return yaml;
  };
  auto out = st.submit(jobs(*cfg, job_yaml("secret", 1, 1)), 1 * kS);  // team's
  ASSERT_EQ(out.status, 202) << out.error;
  const JobId secret = out.ids[0];
  out = st.submit(jobs(*cfg, in("team", ctl_yaml("sweep", 1, "array: '0-1'"))), 1 * kS);
  ASSERT_EQ(out.status, 202) << out.error;
  const JobId array = out.ids[0];
  const JobId missing = 999;
  // The same refusal, word for word but the id, for a foreign job, a foreign array and none.
  auto refusal = [&](JobId target) {
    auto o = st.submit(
        jobs(*cfg, in("other", ctl_yaml("probe", 1,
                                        "dependency: 'afterok:" + std::to_string(target) + "'"))),
        2 * kS);
    EXPECT_EQ(o.status, 400) << o.error;
    std::string e = o.error;
    const std::string id = std::to_string(target);
    e.replace(e.find(id), id.size(), "ID");
    return e;
  };
  EXPECT_EQ(refusal(secret), refusal(missing));
  EXPECT_EQ(refusal(array), refusal(missing));
  EXPECT_EQ(refusal(missing),
            "job \"probe\": spec.dependency names job ID, which this server does not know in "
            "namespace \"other\"");
  // In its own namespace the dependency is accepted and its reason names the job's state.
  out = st.submit(
      jobs(*cfg, ctl_yaml("mine", 1, "dependency: 'afterok:" + std::to_string(secret) + "'")),
      3 * kS);
  ASSERT_EQ(out.status, 202) << out.error;
  st.cycle(4 * kS);
  EXPECT_NE(st.explain(out.ids[0], 4 * kS).find("(job " + std::to_string(secret) + " is "),
            std::string::npos)
      << st.explain(out.ids[0], 4 * kS);
}

}  // namespace
}  // namespace state_gates_test
}  // namespace sluice::server
