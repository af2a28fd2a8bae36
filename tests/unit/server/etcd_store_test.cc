// EtcdStore against a real etcd (docs/ha.md): what it writes comes back, a commit larger than
// etcd's txn limits is split, a replica that lost its lease cannot write and says so, and a
// write etcd did not confirm is never acknowledged.
#include "server/etcd_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "etcd_process.h"

namespace sluice::server {
namespace {

using testing::EtcdProcess;

#define REQUIRE_ETCD()           \
  if (!EtcdProcess::available()) \
  GTEST_SKIP() << "etcd is not installed (Debian etcd-server; scripts/deps.sh installs it)"

std::unique_ptr<EtcdStore> leader(const EtcdProcess& etcd, const std::string& me,
                                  const std::string& query = "") {
  auto o = parse_etcd_url("etcd://" + etcd.host_port() + "/test" + query);
  EXPECT_TRUE(o.ok()) << o.error();
  auto s = EtcdStore::connect(*o);
  EXPECT_TRUE(s.ok()) << s.error();
  std::string other;
  auto won = (*s)->campaign(me, &other);
  EXPECT_TRUE(won.ok()) << won.error();
  EXPECT_TRUE(won.ok() && *won) << "led by " << other;
  (*s)->start();
  return std::move(*s);
}

size_t count_keys(const EtcdProcess& etcd, const std::string& kind) {
  EtcdClient c({etcd.endpoint()});
  auto kvs = c.range("/sluice/test/" + kind + "/", "/sluice/test/" + kind + "0");
  EXPECT_TRUE(kvs.ok()) << kvs.error();
  return kvs.ok() ? kvs->size() : 0;
}

TEST(EtcdUrl, ParsesEndpointsClusterAndLimits) {
  auto o = parse_etcd_url("etcd://10.0.0.1:2379,10.0.0.2:2379/prod?lease=5&max-txn-ops=64");
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->endpoints,
            (std::vector<std::string>{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}));
  EXPECT_EQ(o->prefix, "/sluice/prod/");
  EXPECT_EQ(o->lease_ttl_s, 5);
  EXPECT_EQ(o->max_txn_ops, 64u);
  EXPECT_EQ(parse_etcd_url("etcd://h:1")->prefix, "/sluice/default/");
  EXPECT_EQ(parse_etcd_url("etcd://h:1")->pipeline, 1u);
  EXPECT_TRUE(parse_etcd_url("etcd://h:1")->probe_leader);
  auto p = parse_etcd_url("etcd://h:1?pipeline=3&probe-leader=0");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->pipeline, 3u);
  EXPECT_FALSE(p->probe_leader);
  EXPECT_EQ(parse_etcd_url("etcd://h:1")->silent_leader_ms, 1000);
  EXPECT_EQ(parse_etcd_url("etcd://h:1?silent-leader-ms=0")->silent_leader_ms, 0);
  EXPECT_EQ(parse_etcd_url("etcd://h:1?silent-leader-ms=2500")->silent_leader_ms, 2500);
  auto short_silence = parse_etcd_url("etcd://h:1?silent-leader-ms=100");
  ASSERT_FALSE(short_silence.ok());
  EXPECT_NE(short_silence.error().find("0 (off) or at least 300"), std::string::npos)
      << short_silence.error();
  auto unknown = parse_etcd_url("etcd://h:1?silent-leader=1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("silent-leader-ms"), std::string::npos) << unknown.error();
  for (const char* bad :
       {"http://h:1", "etcd://", "etcd://h", "etcd://h:x", "etcd://h:1/a b", "etcd://h:1?lease=0",
        "etcd://h:1?color=red", "etcd://h:1?pipeline=0", "etcd://h:1?pipeline=99",
        "etcd://h:1?probe-leader=yes", "etcd://h:1?max-txn-ops=1",
        "etcd://h:1?silent-leader-ms=", "etcd://h:1?silent-leader-ms=1s",
        "etcd://h:1?silent-leader-ms=-5", "etcd://h:1?silent-leader-ms=3600001"})
    EXPECT_FALSE(parse_etcd_url(bad).ok()) << bad;
}

TEST(EtcdUrl, Base64RoundTrips) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\n", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  EXPECT_EQ(base64_encode("/t/leader"), "L3QvbGVhZGVy");
}

// Jobs, meta and events written by one leader are what the next one reads.
TEST(EtcdStore, RoundTripAcrossLeaders) {
  REQUIRE_ETCD();
  EtcdProcess etcd("roundtrip");
  ASSERT_TRUE(etcd.start());
  {
    auto s = leader(etcd, "http://a");
    ASSERT_TRUE(s->write(Write{{{7, "pending", R"({"x":1})"}, {8, "running", "{}"}},
                               {{"next_job_id", "9"}},
                               {R"({"event":"submit","id":7})", R"({"event":"submit","id":8})"},
                               {}}))
        << s->error();
    ASSERT_TRUE(s->write(Write{{}, {}, {R"({"event":"end","id":8})"}, {8}})) << s->error();
  }  // closing revokes the lease: the next replica leads at once
  auto s = leader(etcd, "http://b");
  auto jobs = s->load_jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  ASSERT_EQ(jobs->size(), 1u);  // 8 was deleted
  EXPECT_EQ((*jobs)[0].id, 7u);
  EXPECT_EQ((*jobs)[0].state, "pending");
  EXPECT_EQ((*jobs)[0].record, R"({"x":1})");
  EXPECT_EQ(s->get_meta("next_job_id").value_or(""), "9");
  EXPECT_FALSE(s->get_meta("missing").has_value());
  // The event log continues after the first leader's 3 lines.
  ASSERT_TRUE(s->write(Write{{}, {}, {R"({"event":"submit","id":9})"}, {}}));
  EtcdClient c({etcd.endpoint()});
  auto events = c.range("/sluice/test/events/", "/sluice/test/events0");
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ(events->back().value, R"({"event":"submit","id":9})");
  EXPECT_EQ(events->back().key, "/sluice/test/events/00000000000000000004");
}

// A commit of more operations and bytes than one etcd txn may carry (etcd's defaults: 128
// operations, 1.5 MiB; this etcd runs with them) is split into several txns, each within both;
// a key written twice in one batch is written once, with its last value.
TEST(EtcdStore, LargeBatchesAreSplitIntoTxns) {
  REQUIRE_ETCD();
  EtcdProcess etcd("batch");
  ASSERT_TRUE(etcd.start());
  auto s = leader(etcd, "http://a");
  std::vector<uint64_t> tickets;
  for (uint64_t id = 1; id <= 300; ++id) {
    Write w;
    w.jobs.push_back({id, "pending", std::string(10'000, 'r')});  // 300 x 10 kB: 3 MB in all
    w.jobs.push_back({id, "running", std::string(10'000, 's')});  // same key: the last one wins
    w.events.push_back("{\"id\":" + std::to_string(id) + "}");
    tickets.push_back(s->enqueue(std::move(w)));
  }
  for (uint64_t t : tickets) ASSERT_TRUE(s->wait(t)) << s->error();
  auto jobs = s->load_jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  ASSERT_EQ(jobs->size(), 300u);
  for (const auto& j : *jobs) EXPECT_EQ(j.state, "running") << j.id;
  EXPECT_EQ(count_keys(etcd, "events"), 300u);
  // One value over a txn's byte limit is refused with the reason, never half-written.
  EXPECT_FALSE(s->write(Write{{{999, "pending", std::string(1100 * 1024, 'x')}}, {}, {}, {}}));
  EXPECT_NE(s->error().find("max-txn-bytes"), std::string::npos) << s->error();
}

// events-keep bounds the event log: once it is a tenth over, the oldest go, and the sequence
// numbers continue (a later leader too). Per-node meta keys come back by their prefix.
TEST(EtcdStore, EventLogKeepsTheLastEventsAndMetaReadsByPrefix) {
  REQUIRE_ETCD();
  EtcdProcess etcd("retention");
  ASSERT_TRUE(etcd.start());
  {
    auto s = leader(etcd, "http://a", "?events-keep=20");
    for (int i = 1; i <= 30; ++i)
      ASSERT_TRUE(s->write(Write{{}, {}, {"{\"n\":" + std::to_string(i) + "}"}, {}}));
    // 23 stored (20 + a tenth, then more than that) trimmed to the last 20 at event 23.
    EXPECT_LE(count_keys(etcd, "events"), 22u);
    EXPECT_GE(count_keys(etcd, "events"), 20u);
    ASSERT_TRUE(s->write(Write{{},
                               {{"node-credential/n2", "b"},
                                {"node-credential/n1", "a"},
                                {"node-credentialz", "not under the prefix"}},
                               {},
                               {}}));
  }
  auto s = leader(etcd, "http://b", "?events-keep=20");
  ASSERT_TRUE(s->write(Write{{}, {}, {R"({"n":31})"}, {}}));
  EtcdClient c({etcd.endpoint()});
  auto events = c.range("/sluice/test/events/", "/sluice/test/events0");
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->back().key, "/sluice/test/events/00000000000000000031");
  EXPECT_EQ(events->back().value, R"({"n":31})");
  using Kv = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(s->meta_with_prefix("node-credential/"),
            (Kv{{"node-credential/n1", "a"}, {"node-credential/n2", "b"}}));
}

// Leases fence the writers: when A's lease is gone (revoked here, as an expiry would) and B
// leads, A's next write is refused by etcd, A says it no longer leads, and nothing of it lands.
TEST(EtcdStore, DeposedLeaderCannotWrite) {
  REQUIRE_ETCD();
  EtcdProcess etcd("fence");
  ASSERT_TRUE(etcd.start());
  auto a = leader(etcd, "http://a");
  ASSERT_TRUE(a->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));
  EtcdClient c({etcd.endpoint()});
  ASSERT_TRUE(c.call("/v3/lease/revoke", {{"ID", std::to_string(a->lease())}}).ok());
  auto b = leader(etcd, "http://b");
  EXPECT_FALSE(a->write(Write{{{2, "pending", "{}"}}, {}, {}, {}}));
  EXPECT_NE(a->error().find("no longer the leader"), std::string::npos) << a->error();
  EXPECT_TRUE(a->deposed());
  EXPECT_TRUE(a->failed());
  EXPECT_FALSE(a->write(Write{{{3, "pending", "{}"}}, {}, {}, {}}));  // and every later one
  ASSERT_TRUE(b->write(Write{{{4, "pending", "{}"}}, {}, {}, {}})) << b->error();
  auto jobs = b->load_jobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);  // 1 (A, while it led) and 4 (B); never 2 or 3
  EXPECT_EQ((*jobs)[0].id, 1u);
  EXPECT_EQ((*jobs)[1].id, 4u);
}

// Pipelined commits (several txns in flight) land in commit order: writes of one key queued
// one after the other leave the last value, and the event log is in order without gaps.
TEST(EtcdStore, PipelinedCommitsLandInOrder) {
  REQUIRE_ETCD();
  EtcdProcess etcd("pipeline");
  ASSERT_TRUE(etcd.start());
  auto s = leader(etcd, "http://a", "?pipeline=4");
  constexpr int kWrites = 400;
  std::vector<uint64_t> tickets;
  for (int i = 1; i <= kWrites; ++i) {
    const std::string n = std::to_string(i);
    tickets.push_back(
        s->enqueue(Write{{{1, "pending", n}}, {{"next_job_id", n}}, {"{\"n\":" + n + "}"}, {}}));
    if (i % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // many batches
  }
  for (uint64_t t : tickets) ASSERT_TRUE(s->wait(t)) << s->error();
  auto jobs = s->load_jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].record, std::to_string(kWrites));
  EXPECT_EQ(s->get_meta("next_job_id").value_or(""), std::to_string(kWrites));
  EtcdClient c({etcd.endpoint()});
  auto events = c.range("/sluice/test/events/", "/sluice/test/events0");
  ASSERT_TRUE(events.ok()) << events.error();
  ASSERT_EQ(events->size(), size_t{kWrites});
  for (int i = 0; i < kWrites; ++i)
    EXPECT_EQ((*events)[i].value, "{\"n\":" + std::to_string(i + 1) + "}") << i;
  // The next leader continues the commit sequence.
  s.reset();
  auto b = leader(etcd, "http://b", "?pipeline=4");
  ASSERT_TRUE(b->write(Write{{{2, "pending", "{}"}}, {}, {}, {}})) << b->error();
}

// A commit whose place in the sequence was taken by another writer is refused: the replica
// steps down and acknowledges nothing more.
TEST(EtcdStore, ACommitOutOfSequenceStepsDown) {
  REQUIRE_ETCD();
  EtcdProcess etcd("sequence");
  ASSERT_TRUE(etcd.start());
  auto s = leader(etcd, "http://a");
  ASSERT_TRUE(s->write(Write{{{1, "pending", "{}"}}, {}, {}, {}})) << s->error();
  EtcdClient c({etcd.endpoint()});
  ASSERT_TRUE(
      c.call("/v3/kv/put", {{"key", base64_encode("/sluice/test/commit-seq")}, {"value", ""}})
          .ok());
  EXPECT_FALSE(s->write(Write{{{2, "pending", "{}"}}, {}, {}, {}}));
  EXPECT_NE(s->error().find("commit sequence"), std::string::npos) << s->error();
  EXPECT_TRUE(s->deposed());
  EXPECT_FALSE(c.get("/sluice/test/jobs/00000000000000000002")->has_value());
}

// A second replica does not lead while the first does, and names it.
TEST(EtcdStore, StandbyLearnsTheLeader) {
  REQUIRE_ETCD();
  EtcdProcess etcd("standby");
  ASSERT_TRUE(etcd.start());
  auto a = leader(etcd, "http://a:1");
  auto o = parse_etcd_url("etcd://" + etcd.host_port() + "/test");
  auto b = EtcdStore::connect(*o);
  ASSERT_TRUE(b.ok());
  std::string other;
  auto won = (*b)->campaign("http://b:1", &other);
  ASSERT_TRUE(won.ok()) << won.error();
  EXPECT_FALSE(*won);
  EXPECT_EQ(other, "http://a:1");
}

// etcd gone: the write fails with a clear error and is not acknowledged, later ones neither,
// and after etcd is back the refused write is not there.
TEST(EtcdStore, EtcdDownIsAClearErrorNeverAnAcknowledgement) {
  REQUIRE_ETCD();
  EtcdProcess etcd("down");
  ASSERT_TRUE(etcd.start());
  auto s = leader(etcd, "http://a");
  ASSERT_TRUE(s->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));
  etcd.kill();
  EXPECT_FALSE(s->write(Write{{{2, "pending", "{}"}}, {}, {}, {}}));
  EXPECT_NE(s->error().find("cannot reach etcd"), std::string::npos) << s->error();
  EXPECT_TRUE(s->deposed());  // a leader that cannot write steps down
  ASSERT_TRUE(etcd.start());
  EXPECT_FALSE(s->write(Write{{{3, "pending", "{}"}}, {}, {}, {}}));  // failed until restarted
  EtcdClient c({etcd.endpoint()});
  auto jobs = c.range("/sluice/test/jobs/", "/sluice/test/jobs0");
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ(jobs->size(), 1u);  // only job 1
  // No etcd at all: connect says so.
  auto o = parse_etcd_url("etcd://127.0.0.1:" + std::to_string(testing::free_port()));
  auto none = EtcdStore::connect(*o);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("does not answer"), std::string::npos) << none.error();
}

}  // namespace
}  // namespace sluice::server
