// A standby's election against a real etcd (election.h): it takes over from a leader whose
// process is gone, while that leader's lease would still be renewed, by revoking the lease:
// when the leader's port refuses connections after answering, and when the leader key names
// this replica's own URL (a previous run of it). With probe-leader=0 it waits for the lease.
// A leader whose API goes silent (frozen) is replaced once its lease missed a renewal, before
// the lease expires; one that is silent to this standby but renews its lease is not.
#include "server/election.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "etcd_process.h"
#include "net/http_server.h"

namespace sluice::server {
namespace election_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing::EtcdProcess;
using Clock = std::chrono::steady_clock;

#define REQUIRE_ETCD()           \
  if (!EtcdProcess::available()) \
  GTEST_SKIP() << "etcd is not installed (Debian etcd-server; scripts/deps.sh installs it)"

std::unique_ptr<EtcdStore> store(const EtcdProcess& etcd, const std::string& query = "") {
  auto o = parse_etcd_url("etcd://" + etcd.host_port() + "/test" + query);
  EXPECT_TRUE(o.ok()) << o.error();
  auto s = EtcdStore::connect(*o);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

// A leader that keeps renewing its lease (its store lives) at `url`.
std::unique_ptr<EtcdStore> leading(const EtcdProcess& etcd, const std::string& url,
                                   const std::string& query = "") {
  auto s = store(etcd, query);
  std::string other;
  auto won = s->campaign(url, &other);
  EXPECT_TRUE(won.ok() && *won) << (won.ok() ? "led by " + other : won.error());
  s->start();
  return s;
}

// Runs the election for `s` on a free port advertised as `me` for at most `limit`: whether it
// led. `log`: what it logged.
bool elected_within(std::unique_ptr<EtcdStore> s, const std::string& me, Clock::duration limit,
                    std::vector<std::string>* log = nullptr) {
  ElectionOptions o;
  o.host = "127.0.0.1";
  o.advertise = me;
  if (log) o.log = [log](const std::string& line) { log->push_back(line); };
  const auto deadline = Clock::now() + limit;
  o.stop_requested = [&] { return Clock::now() > deadline; };
  auto r = wait_for_leadership(std::move(s), o);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() && r->store != nullptr;
}

TEST(Election, LeaderWhosePortRefusesIsReplaced) {
  REQUIRE_ETCD();
  EtcdProcess etcd("election-probe");
  ASSERT_TRUE(etcd.start());
  auto api = std::make_unique<net::Server>(net::ServerOptions{});
  api->Get("/readyz", [](const net::Request&, net::Response& res) {
    res.set_content("ready\n", "text/plain");
  });
  auto port = api->listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error();
  api->start();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  auto a = leading(etcd, url);
  // Answering: the standby waits (the lease is renewed).
  EXPECT_FALSE(elected_within(store(etcd), "http://127.0.0.1:1", std::chrono::seconds(3)));
  // Gone: its port refuses, and the standby takes over long before a lease would expire
  // (it never would: a's store still renews it).
  std::thread kill([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    api->stop();
  });
  EXPECT_TRUE(elected_within(store(etcd), "http://127.0.0.1:1", std::chrono::seconds(10)));
  kill.join();
  EXPECT_FALSE(a->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));  // fenced
  EXPECT_TRUE(a->deposed());
}

TEST(Election, PreviousRunOfThisReplicaIsReplaced) {
  REQUIRE_ETCD();
  EtcdProcess etcd("election-self");
  ASSERT_TRUE(etcd.start());
  auto a = leading(etcd, "http://127.0.0.1:7");  // nothing answers there
  EXPECT_FALSE(elected_within(store(etcd, "?probe-leader=0"), "http://127.0.0.1:7",
                              std::chrono::seconds(3)));
  EXPECT_TRUE(elected_within(store(etcd), "http://127.0.0.1:7", std::chrono::seconds(10)));
  EXPECT_FALSE(a->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));
}

// A leader's API: /readyz and /healthz 200 on a free loopback port, until freeze(): then every
// request hangs unanswered while the port still accepts, as a SIGSTOPped process's. (Closing the
// port and listening again would leave a moment in which it refuses, and a standby that probes
// then sees a dead process instead of a frozen one.)
struct LeaderApi {
  std::unique_ptr<net::Server> http = std::make_unique<net::Server>(net::ServerOptions{});
  int port = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool frozen = false, quit = false;
  LeaderApi() {
    for (const char* path : {"/readyz", "/healthz"})
      http->Get(path, [this](const net::Request&, net::Response& res) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return quit || !frozen; });
        res.set_content("ok\n", "text/plain");
      });
    auto bound = http->listen("127.0.0.1", 0);
    EXPECT_TRUE(bound.ok()) << bound.error();
    port = bound.ok() ? *bound : 0;
    http->start();
  }
  ~LeaderApi() {
    {
      std::lock_guard lock(mu);
      quit = true;
    }
    cv.notify_all();
    http->stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  void freeze() {
    std::lock_guard lock(mu);
    frozen = true;
  }
};

// A standby's election with `query`, while `api` freezes 300 ms in (the standby reaches it
// first): whether it led within `limit`, and what it logged.
bool elected_after_freeze(LeaderApi& api, const EtcdProcess& etcd, const std::string& query,
                          Clock::duration limit, std::vector<std::string>* log) {
  std::thread freeze([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    api.freeze();
  });
  const bool led = elected_within(store(etcd, query), "http://127.0.0.1:1", limit, log);
  freeze.join();
  return led;
}

bool logged(const std::vector<std::string>& log, const std::string& what) {
  for (const auto& l : log)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Frozen: its API is silent and it renews nothing (the leader key under a lease of 6 s that
// nobody keeps alive, as a leader frozen before its next renewal). The standby revokes the lease
// once etcd reports under half of it left (3 s after the grant), while the lease itself would
// last 6 s.
TEST(Election, FrozenLeaderIsReplacedWhenItsLeaseMissedARenewal) {
  REQUIRE_ETCD();
  EtcdProcess etcd("election-frozen");
  ASSERT_TRUE(etcd.start());
  LeaderApi api;
  EtcdClient c({etcd.endpoint()});
  auto lease = c.grant(6);
  ASSERT_TRUE(lease.ok()) << lease.error();
  auto put = c.call("/v3/kv/put", {{"key", base64_encode("/sluice/test/leader")},
                                   {"value", base64_encode(api.url())},
                                   {"lease", std::to_string(lease->id)}});
  ASSERT_TRUE(put.ok()) << put.error();
  std::vector<std::string> log;
  EXPECT_TRUE(
      elected_after_freeze(api, etcd, "?silent-leader-ms=1000", std::chrono::seconds(20), &log));
  EXPECT_TRUE(logged(log, "its lease missed a renewal")) << ::testing::PrintToString(log);
  EXPECT_TRUE(logged(log, "revoked its lease")) << ::testing::PrintToString(log);
  auto left = c.time_to_live(lease->id);
  ASSERT_TRUE(left.ok()) << left.error();
  EXPECT_EQ(left->left_s, -1);  // gone
}

// Silent to this standby, but renewing its lease (a partition between the two replicas only):
// the standby deposes nobody. (A lease of 6 s is renewed every 2 s: a renewal would have to be
// a second late on a loaded machine to look missed.)
TEST(Election, SilentLeaderThatRenewsItsLeaseStays) {
  REQUIRE_ETCD();
  EtcdProcess etcd("election-partition");
  ASSERT_TRUE(etcd.start());
  LeaderApi api;
  auto a = leading(etcd, api.url(), "?lease=6");
  std::vector<std::string> log;
  EXPECT_FALSE(
      elected_after_freeze(api, etcd, "?silent-leader-ms=300", std::chrono::seconds(4), &log));
  EXPECT_FALSE(logged(log, "is gone")) << ::testing::PrintToString(log);
  EXPECT_TRUE(a->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));
  EXPECT_FALSE(a->deposed());
}

}  // namespace
}  // namespace election_test
}  // namespace sluice::server
