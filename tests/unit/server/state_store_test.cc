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

}  // namespace
}  // namespace sluice::server
