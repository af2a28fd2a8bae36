// The control plane's state across a restart: what the SQLite store gives back (jobs, ids,
// ages, budgets, held nodes) and what recovery does with records it cannot take.
#include <gtest/gtest.h>

#include "server/state.h"
#include "state_fixture.h"

namespace sluice::server {
namespace state_recovery_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

TEST(ServerStore, DrainedNodeTakesNoNewPodsUntilResumed) {
  const auto dir = fresh_dir("holds");
  auto cfg = config();
  auto view = [](const ServerState& st, const char* node) {
    const nlohmann::json all = st.nodes_view(3 * kS);
    for (const auto& n : all["nodes"])
      if (n["name"] == node) return n;
    return nlohmann::json();
  };
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    join(st, reg("n1"), 0);
    uint64_t ticket = 0;
    ASSERT_EQ(st.set_node_hold("n0", "drain", "disk", &ticket), 200);
    ASSERT_TRUE((*store)->wait(ticket));
    EXPECT_EQ(st.set_node_hold("nope", "drain", "", &ticket), 404);
    const JobId a = st.submit(jobs(*cfg, job_yaml("a", 1, 4)), 1 * kS).ids[0];
    const JobId b = st.submit(jobs(*cfg, job_yaml("b", 1, 4)), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    // One 4-GPU pod fits on n1; the second would need n0.
    EXPECT_EQ(st.find(a)->state, JobState::kRunning);
    EXPECT_EQ(st.find(a)->pods[0].node, "n1");
    EXPECT_EQ(st.find(b)->state, JobState::kPending);
    EXPECT_EQ(view(st, "n0")["hold"], "drained");  // nothing runs there
    EXPECT_EQ(view(st, "n0")["hold_reason"], "disk");
    EXPECT_TRUE(view(st, "n1")["hold"].is_null());
    // b's explanation names the drained node and why, not only "not ready".
    EXPECT_NE(st.explain(b, 3 * kS).find("Out of scheduling by an admin: n0 (drained: disk)"),
              std::string::npos)
        << st.explain(b, 3 * kS);
  }  // the server stops; the hold stays in its store
  auto store = SqliteStore::open(dir.string());
  ASSERT_TRUE(store.ok());
  (*store)->start();
  ServerState st(cfg, store->get(), ServerOptions{});
  EXPECT_EQ(view(st, "n0")["hold"], "drained");
  join(st, reg("n0"), 5 * kS);
  const JobId c = st.submit(jobs(*cfg, job_yaml("c", 1, 4)), 6 * kS).ids[0];
  st.cycle(7 * kS);
  EXPECT_EQ(st.find(c)->state, JobState::kPending);  // registered again, still drained
  uint64_t ticket = 0;
  ASSERT_EQ(st.set_node_hold("n0", "", "", &ticket), 200);
  st.cycle(8 * kS);
  EXPECT_EQ(st.find(c)->state, JobState::kRunning);
  EXPECT_EQ(st.find(c)->pods[0].node, "n0");
  ASSERT_EQ(st.set_node_hold("n0", "drain", "", &ticket), 200);
  EXPECT_EQ(view(st, "n0")["hold"], "draining");  // c runs on
  ASSERT_EQ(st.set_node_hold("n0", "cordon", "", &ticket), 200);
  EXPECT_EQ(view(st, "n0")["hold"], "cordoned");
  std::filesystem::remove_all(dir);
}

TEST(ServerStore, RecoveryKeepsEveryJobAndNeverAssignsAGpuTwice) {
  const auto dir = fresh_dir("recovery");
  auto cfg = config();
  JobId running = 0, waiting = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    join(st, reg("n1"), 0);
    running = st.submit(jobs(*cfg, job_yaml("big", 2, 4)), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    waiting = st.submit(jobs(*cfg, job_yaml("next", 1, 1)), 3 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(4 * kS)));
  }  // "crash": the state is gone, the store stays
  auto back = restart(dir, cfg, 100 * kS);
  ASSERT_NE(back.st, nullptr);
  ServerState& st = *back.st;
  const auto& problems = back.problems;
  EXPECT_TRUE(problems.empty()) << problems.front();
  ASSERT_NE(st.find(running), nullptr);
  EXPECT_EQ(st.find(running)->state, JobState::kRunning);
  EXPECT_EQ(st.find(waiting)->state, JobState::kPending);
  // Agents get one timeout (10 s) to come back before their jobs are requeued.
  st.check_agents(105 * kS);
  EXPECT_EQ(st.find(running)->state, JobState::kRunning);
  // Every GPU is still taken by the restored gang: the waiting job cannot be placed.
  join(st, reg("n0"), 100 * kS);
  join(st, reg("n1"), 100 * kS);
  st.cycle(101 * kS);
  EXPECT_EQ(st.find(waiting)->state, JobState::kPending);
  std::string why;
  EXPECT_TRUE(st.scheduler().check_invariants(&why)) << why;
  // New ids continue after the recovered ones.
  auto more = st.submit(jobs(*cfg, job_yaml("more", 1, 1)), 102 * kS);
  EXPECT_GT(more.ids[0], waiting);
  std::filesystem::remove_all(dir);
}

// A record damaged in the store (here a walltime of 2^62 ns and a running job's admission time
// before 1970) is reported and left out; the other jobs come back as they were.
TEST(ServerStore, RecoveryReportsARecordWithTimesOutOfBoundsAndKeepsTheRest) {
  const auto dir = fresh_dir("bounds");
  auto cfg = config();
  JobId hostile = 0, kept = 0, running = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    running = st.submit(jobs(*cfg, job_yaml("runs", 1, 1)), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    hostile = st.submit(jobs(*cfg, job_yaml("hostile", 1, 1)), 3 * kS).ids[0];
    kept = st.submit(jobs(*cfg, job_yaml("kept", 1, 1)), 3 * kS).ids[0];
    ASSERT_TRUE((*store)->write(Write{{}, {{"probe", "1"}}, {}, {}}));
  }
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok());
    auto stored = (*store)->load_jobs();
    ASSERT_TRUE(stored.ok());
    (*store)->start();
    Write w;
    for (auto sj : *stored) {
      auto j = nlohmann::json::parse(sj.record);
      if (sj.id == hostile) j["job"]["walltime_ns"] = int64_t{1} << 62;
      if (sj.id == running) j["admit_ns"] = -5;
      sj.record = j.dump();
      w.jobs.push_back(sj);
    }
    ASSERT_TRUE((*store)->write(w));
  }
  auto back = restart(dir, cfg, 100 * kS);
  ASSERT_NE(back.st, nullptr);
  const auto& problems = back.problems;
  ASSERT_EQ(problems.size(), 2u);
  std::string all = problems[0] + "\n" + problems[1];
  EXPECT_NE(all.find("job " + std::to_string(hostile) + ": walltime_ns is outside [0, 10 years]"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("job " + std::to_string(running) + ": admit_ns is outside [0, 2200-01-01]"),
            std::string::npos)
      << all;
  EXPECT_EQ(back.st->find(hostile), nullptr);
  EXPECT_EQ(back.st->find(running), nullptr);
  ASSERT_NE(back.st->find(kept), nullptr);
  EXPECT_EQ(back.st->find(kept)->state, JobState::kPending);
  std::filesystem::remove_all(dir);
}

// A record recovery leaves out keeps its row, and its id: a new job does not overwrite it, also
// when the store has lost its id counters.
TEST(ServerStore, ANewJobNeverTakesTheIdOfARecordLeftOutAtRecovery) {
  const auto dir = fresh_dir("left-out");
  auto cfg = config();
  JobId kept = 0, damaged = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    kept = st.submit(jobs(*cfg, job_yaml("kept", 1, 1)), 1 * kS).ids[0];
    damaged = st.submit(jobs(*cfg, job_yaml("damaged", 1, 1)), 2 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(3 * kS)));
  }
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok());
    auto stored = (*store)->load_jobs();
    ASSERT_TRUE(stored.ok());
    (*store)->start();
    Write w{{}, {{"next_id", "0"}, {"next_job_id", "0"}}, {}, {}};
    for (auto sj : *stored)
      if (sj.id == damaged) {
        sj.record = "{\"job\": not json";
        w.jobs.push_back(sj);
      }
    ASSERT_TRUE((*store)->write(w));
  }
  auto back = restart(dir, cfg, 100 * kS);
  ASSERT_NE(back.st, nullptr);
  ASSERT_EQ(back.problems.size(), 1u);
  EXPECT_EQ(back.problems[0], "job " + std::to_string(damaged) + ": unreadable record");
  ASSERT_NE(back.st->find(kept), nullptr);
  back.store->start();
  auto more = back.st->submit(jobs(*cfg, job_yaml("more", 1, 1)), 101 * kS);
  ASSERT_EQ(more.ids.size(), 1u);
  EXPECT_GT(more.ids[0], damaged);
  ASSERT_TRUE(back.store->wait(back.st->cycle(102 * kS)));
  back = Restarted{};  // stopped: its writes are in the file
  auto store = SqliteStore::open(dir.string());
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->load_jobs();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 3u);
  bool row_kept = false;
  for (const auto& sj : *rows) row_kept |= sj.id == damaged && sj.record == "{\"job\": not json";
  EXPECT_TRUE(row_kept);
  std::filesystem::remove_all(dir);
}

// An eviction restarts the victim's age (Scheduler::apply); a reload of the configuration and a
// restart rank it the same way: it does not regain the age it had before it was evicted.
TEST(ServerStore, AnEvictedJobsAgeStaysRestartedAcrossReloadAndRecovery) {
  const auto dir = fresh_dir("aged");
  auto cfg = config();
  JobId low = 0;
  auto age_origin = [&](const ServerState& st) {
    const auto* p = st.scheduler().find_pending(low);
    return p ? p->job.submit_ns : TimeNs{-1};
  };
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    join(st, reg("n1"), 0);
    low = st.submit(jobs(*cfg, job_yaml("low", 2, 4, "low")), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    st.submit(jobs(*cfg, job_yaml("high", 1, 4, "high")), 10 * kS);
    ASSERT_TRUE((*store)->wait(st.cycle(11 * kS)));
    ASSERT_EQ(st.find(low)->state, JobState::kPending);
    EXPECT_EQ(st.find(low)->job.submit_ns, 1 * kS);  // what users see stays the submission
    EXPECT_EQ(age_origin(st), 11 * kS);
    auto lc = load_server_config({Source{"same.yaml", kConfig}});
    ASSERT_TRUE(lc.ok());
    ASSERT_TRUE(st.reconfigure(lc->config, lc->text, 12 * kS).ok());
    EXPECT_EQ(age_origin(st), 11 * kS);
  }  // "crash"
  auto back = restart(dir, cfg, 100 * kS);
  ASSERT_NE(back.st, nullptr);
  ServerState& st = *back.st;
  const auto& problems = back.problems;
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(st.find(low)->job.submit_ns, 1 * kS);
  EXPECT_EQ(age_origin(st), 11 * kS);
  std::filesystem::remove_all(dir);
}

// Only the last keep_finished_jobs finished jobs stay, in memory and in the store; a restart
// with a smaller limit trims the rest; ids are never given out again.
TEST(ServerStore, FinishedJobsBeyondTheLimitAreDropped) {
  const auto dir = fresh_dir("retention");
  auto cfg = config();
  ServerOptions opt;
  opt.keep_finished_jobs = 2;
  std::vector<JobId> ids;
  auto stored_ids = [&]() {
    auto store = SqliteStore::open(dir.string());
    EXPECT_TRUE(store.ok());
    std::set<JobId> out;
    auto stored = (*store)->load_jobs();
    EXPECT_TRUE(stored.ok());
    if (stored.ok())
      for (const auto& j : *stored) out.insert(j.id);
    return out;
  };
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), opt);
    for (int i = 0; i < 6; ++i)
      ids.push_back(st.submit(jobs(*cfg, job_yaml("j" + std::to_string(i), 1, 1)), kS).ids[0]);
    // Cancelled in this order (each one ends a second after the one before): the highest id
    // ends first. Job 2 stays pending.
    int t = 2;
    for (size_t i : {5, 0, 1, 3, 4}) {
      std::string err;
      uint64_t ticket = 0;
      ASSERT_EQ(st.cancel(ids[i], t++ * kS, &err, &ticket), 200) << err;
      ASSERT_TRUE((*store)->wait(ticket));
    }
    for (size_t i : {5, 0, 1}) EXPECT_EQ(st.find(ids[i]), nullptr) << i;
    EXPECT_EQ(st.find(ids[3])->state, JobState::kCancelled);
    EXPECT_EQ(st.find(ids[4])->state, JobState::kCancelled);
    EXPECT_EQ(st.find(ids[2])->state, JobState::kPending);  // live jobs are never dropped
  }
  EXPECT_EQ(stored_ids(), (std::set<JobId>{ids[2], ids[3], ids[4]}));
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok());
    auto stored = (*store)->load_jobs();
    ASSERT_TRUE(stored.ok());
    (*store)->start();
    opt.keep_finished_jobs = 1;
    ServerState st(cfg, store->get(), opt);
    EXPECT_TRUE(st.recover(*stored, 10 * kS).empty());
    EXPECT_EQ(st.find(ids[3]), nullptr);
    EXPECT_NE(st.find(ids[4]), nullptr);
    // Ids continue after every job ever given one: the highest (job 5) was dropped.
    EXPECT_EQ(st.submit(jobs(*cfg, job_yaml("later", 1, 1)), 11 * kS).ids.at(0), ids[5] + 1);
    ASSERT_TRUE((*store)->write(Write{{}, {{"probe", "1"}}, {}, {}}));  // after the flushes
  }
  EXPECT_EQ(stored_ids(), (std::set<JobId>{ids[2], ids[4], ids[5] + 1}));
  std::filesystem::remove_all(dir);
}

// Records are written by hand (encode_record); every awkward byte must read back.
TEST(ServerStore, RecordsWithAwkwardTextSurviveRecovery) {
  const auto dir = fresh_dir("text");
  auto cfg = config();
  const std::string message = "quote \" backslash \\ nl \n tab \t ctrl \x01 utf8 \xc3\xa9 end";
  JobId id = 0;
  std::string reason;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    proto::SyncRequest s = join_n0(st);
    id = st.submit(jobs(*cfg, job_yaml("odd", 1, 1)), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    st.release_staged();
    s.started = {{id, 0}};
    proto::PodExit e = pod_exit(id, 3);
    e.message = message + " bad \xff byte";
    s.exits = {e};
    ASSERT_EQ(sync_as(st, "n0", s, 3 * kS).status, 200);
    ASSERT_TRUE((*store)->wait(st.cycle(4 * kS)));
    ASSERT_EQ(st.find(id)->state, JobState::kFailed);
    reason = st.find(id)->reason;
  }
  auto back = restart(dir, cfg, 10 * kS);
  ASSERT_NE(back.st, nullptr);
  ServerState& st = *back.st;
  const auto& problems = back.problems;
  EXPECT_TRUE(problems.empty()) << problems.front();
  const JobRecord* r = st.find(id);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, JobState::kFailed);
  EXPECT_EQ(r->exit_code, 3);
  ASSERT_EQ(r->pods.size(), 1u);
  // Valid text comes back byte for byte; the invalid byte becomes U+FFFD.
  EXPECT_EQ(r->pods[0].exit.message, message + " bad \xef\xbf\xbd byte");
  EXPECT_EQ(r->reason.substr(0, 20), reason.substr(0, 20));
  EXPECT_EQ(r->job.name, "odd");
  std::filesystem::remove_all(dir);
}

// Budget usage survives a crash: work that ended before it still counts, running work keeps
// accruing; a reconfiguration carries it over too.
TEST(ServerStore, BudgetUsageSurvivesRecoveryAndReconfiguration) {
  const auto dir = fresh_dir("budget");
  const std::string budget =
      "---\napiVersion: sluice.dev/v1alpha1\nkind: Budget\nmetadata: {name: team}\n"
      "spec: {gpuHours: 100, period: 720h}\n";
  auto lc = load_server_config({Source{"test.yaml", std::string(kConfig) + budget}});
  ASSERT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
  auto cfg = lc->config;
  constexpr TimeNs kH = 3600 * kS;
  auto used = [](const ServerState& st, TimeNs now) {
    return st.scheduler().budget_usage("team", now)->used_milli_gpu_hours;
  };
  JobId running = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    proto::SyncRequest s = join_n0(st);
    // Two 1-GPU jobs from t=0: one ends after an hour, one keeps running.
    auto ids = st.submit(jobs(*cfg, job_yaml("a", 1, 1) + "---\n" + job_yaml("b", 1, 1)), 0).ids;
    ASSERT_TRUE((*store)->wait(st.cycle(0)));
    st.release_staged();
    running = ids[1];
    s.started = {{ids[0], 0}, {ids[1], 0}};
    s.exits = {pod_exit(ids[0])};
    ASSERT_EQ(sync_as(st, "n0", s, 1 * kH).status, 200);
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kH)));
    EXPECT_EQ(used(st, 2 * kH), 3000);  // 1 h + 2 h of one GPU
  }                                     // crash at 2 h
  auto back = restart(dir, cfg, 3 * kH);
  ASSERT_NE(back.st, nullptr);
  ServerState& st = *back.st;
  ASSERT_EQ(st.find(running)->state, JobState::kRunning);
  // Without the stored usage only the running job's 3 h would count.
  EXPECT_EQ(used(st, 3 * kH), 4000);
  // A reconfiguration (the same documents) keeps it.
  auto again = load_server_config({Source{"test.yaml", std::string(kConfig) + budget}});
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(st.reconfigure(again->config, again->text, 4 * kH).ok());
  EXPECT_EQ(used(st, 4 * kH), 5000);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace state_recovery_test
}  // namespace sluice::server
