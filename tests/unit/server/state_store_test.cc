// The job history across the events table's retention (issue 41): a job whose submit event was
// trimmed from the store still has its history row after a restart, from its record.
#include "server/state.h"

#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace {

using namespace testing_state;

TEST(ServerStore, HistoryOfJobsWhoseEventsWereTrimmed) {
  const auto dir = fresh_dir("history-trim");
  auto cfg = config();
  StoreOptions keep_two;  // the events table keeps 2 events: no job's submit survives
  keep_two.max_events = 2;
  JobId running = 0, waiting = 0, cancelled = 0;
  {
    auto store = SqliteStore::open(dir.string(), keep_two);
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join(st, reg("n0"), 0);
    running = st.submit(jobs(*cfg, job_yaml("runs", 1, 4)), 1 * kS).ids[0];
    ASSERT_TRUE((*store)->wait(st.cycle(2 * kS)));
    waiting = st.submit(jobs(*cfg, job_yaml("waits", 1, 4)), 3 * kS).ids[0];
    cancelled = st.submit(jobs(*cfg, job_yaml("gone", 1, 4)), 3 * kS).ids[0];
    std::string error;
    uint64_t ticket = 0;
    ASSERT_EQ(st.cancel(cancelled, 4 * kS, &error, &ticket), 200) << error;
    ASSERT_TRUE((*store)->wait(ticket));
    ASSERT_TRUE((*store)->wait(st.cycle(5 * kS)));
  }
  auto store = SqliteStore::open(dir.string(), keep_two);
  ASSERT_TRUE(store.ok()) << store.error();
  auto stored = (*store)->load_jobs();
  ASSERT_TRUE(stored.ok());
  ServerState st(cfg, store->get(), ServerOptions{});
  size_t lines = 0;
  EXPECT_EQ((*store)->for_each_event([&](const std::string& line) {
    ++lines;
    st.replay_history_line(line);
  }),
            "");
  EXPECT_EQ(lines, 2u);  // the newest two events only
  EXPECT_TRUE(st.recover(*stored, 100 * kS).empty());
  const HistoryRow* r = st.history().find(running);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, "running");
  EXPECT_EQ(r->first_start_ns, 2 * kS);  // its admission, from the record
  EXPECT_EQ(r->name, "runs");
  ASSERT_NE(st.history().find(waiting), nullptr);
  EXPECT_EQ(st.history().find(waiting)->state, "pending");
  ASSERT_NE(st.history().find(cancelled), nullptr);
  EXPECT_EQ(st.history().find(cancelled)->state, "cancelled");
  EXPECT_EQ(st.history().find(cancelled)->end_ns, 4 * kS);
  std::filesystem::remove_all(dir);
}

// A job's Kubernetes metadata (JobRecord::kube_meta) is written with its record, changed
// (kubectl label), and read back after a restart; a stored text that is not what the API keeps
// is refused, not trusted.
TEST(ServerStore, KubeMetadataSurvivesARestart) {
  const auto dir = fresh_dir("kube-meta");
  auto cfg = config();
  JobId id = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    auto js = jobs(*cfg, job_yaml("labelled", 1, 4));
    PreparedSubmission prepared = ServerState::prepare(js, cfg);
    prepared.kube_meta = {R"({"labels":{"team":"a"}})"};
    const auto out = st.submit(std::move(js), 1 * kS, &prepared);
    ASSERT_EQ(out.status, 202) << out.error;
    id = out.ids[0];
    ASSERT_TRUE((*store)->wait(out.ticket));
    EXPECT_EQ(st.find(id)->kube_meta, R"({"labels":{"team":"a"}})");
    uint64_t ticket = 0;
    ASSERT_EQ(st.set_kube_meta(id, R"({"labels":{"team":"b"},"annotations":{"n":"x"}})", &ticket),
              200);
    ASSERT_TRUE((*store)->wait(ticket));
    EXPECT_EQ(st.set_kube_meta(id + 100, "", &ticket), 404);
  }
  auto store = SqliteStore::open(dir.string());
  ASSERT_TRUE(store.ok()) << store.error();
  auto stored = (*store)->load_jobs();
  ASSERT_TRUE(stored.ok());
  ServerState st(cfg, store->get(), ServerOptions{});
  EXPECT_TRUE(st.recover(*stored, 10 * kS).empty());
  ASSERT_NE(st.find(id), nullptr);
  EXPECT_EQ(st.find(id)->kube_meta, R"({"annotations":{"n":"x"},"labels":{"team":"b"}})");
  // A record whose metadata is not what the API keeps (a label value too long) is refused.
  auto tampered = *stored;
  ASSERT_EQ(tampered.size(), 1u);
  auto rec = nlohmann::json::parse(tampered[0].record);
  rec["kube_meta"] = {{"labels", {{"team", std::string(64, 'a')}}}};
  tampered[0].record = rec.dump();
  ServerState again(cfg, nullptr, ServerOptions{});
  const auto problems = again.recover(tampered, 10 * kS);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("kube_meta"), std::string::npos) << problems[0];
  EXPECT_EQ(again.find(id), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::server
