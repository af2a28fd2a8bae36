// A standby's election against a real etcd (election.h): it takes over from a leader whose
// process is gone, while that leader's lease would still be renewed, by revoking the lease:
// when the leader's port refuses connections after answering, and when the leader key names
// this replica's own URL (a previous run of it). With probe-leader=0 it waits for the lease.
#include "server/election.h"

#include <gtest/gtest.h>

#include <chrono>
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
std::unique_ptr<EtcdStore> leading(const EtcdProcess& etcd, const std::string& url) {
  auto s = store(etcd);
  std::string other;
  auto won = s->campaign(url, &other);
  EXPECT_TRUE(won.ok() && *won) << (won.ok() ? "led by " + other : won.error());
  s->start();
  return s;
}

// Runs the election for `s` on a free port advertised as `me` for at most `limit`: whether it
// led.
bool elected_within(std::unique_ptr<EtcdStore> s, const std::string& me, Clock::duration limit) {
  ElectionOptions o;
  o.host = "127.0.0.1";
  o.advertise = me;
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

}  // namespace
}  // namespace election_test
}  // namespace sluice::server
