// A standby's test of the leader (leader_probe.h): a closed port is refused, an open one is not;
// the leader counts as gone only after its API answered ready under its lease and then refused
// connections twice in a row, or stayed silent for the silence it is given (a frozen process:
// its kernel still accepts connections, nobody answers), never when it was not reached first;
// and the renewal rule that guards the silent case.
#include "server/leader_probe.h"

#include <gtest/gtest.h>

#include "etcd_process.h"
#include "frozen_port.h"
#include "net/http_server.h"

namespace sluice::server {
namespace leader_probe_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

// A replica's API: /readyz 200 on a free loopback port.
struct FakeLeader {
  net::Server http{net::ServerOptions{}};
  int port = 0;
  FakeLeader() {
    http.Get("/readyz", [](const net::Request&, net::Response& res) {
      res.set_content("ready\n", "text/plain");
    });
    http.Get("/healthz", [](const net::Request&, net::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    auto bound = http.listen("127.0.0.1", 0);
    EXPECT_TRUE(bound.ok()) << bound.error();
    port = bound.ok() ? *bound : 0;
    http.start();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

TEST(LeaderProbe, ClosedPortIsRefusedOpenIsNot) {
  FakeLeader up;
  EXPECT_EQ(probe_port(up.url(), 500), PortState::Open);
  EXPECT_TRUE(answers_ready(up.url(), 500));
  const std::string closed = "http://127.0.0.1:" + std::to_string(testing::free_port());
  EXPECT_EQ(probe_port(closed, 500), PortState::Refused);
  EXPECT_FALSE(answers_ready(closed, 500));
  for (const char* bad : {"", "http://", "https://127.0.0.1:1", "http://127.0.0.1", "127.0.0.1:1",
                          "http://no-such-host.invalid:80"})
    EXPECT_EQ(probe_port(bad, 500), PortState::Unknown) << bad;
}

TEST(LeaderProbe, GoneOnlyAfterReachedThenRefusedTwice) {
  auto leader = std::make_unique<FakeLeader>();
  const std::string url = leader->url();
  LeaderProbe p(1000);
  const auto alive = LeaderState::Alive;
  EXPECT_EQ(p.check(7, url), alive);  // reached: ready
  EXPECT_EQ(p.check(7, url), alive);  // open
  leader.reset();                     // the process dies: its port closes
  EXPECT_EQ(p.check(7, url), alive);  // one refusal is not enough
  EXPECT_EQ(p.check(7, url), LeaderState::Refused);
  // Another lease (a new leader at the same URL, or a stale read) starts over: it must be
  // reached first.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.check(8, url), alive) << i;
  EXPECT_EQ(p.check(0, ""), alive);  // nobody leads
}

// Silent: the leader's API has not answered for the given silence (on the probe's clock, here
// a test's), counted from its last answer; never with a silence of 0.
TEST(LeaderProbe, SilentOnlyAfterItsSilence) {
  auto now = LeaderProbe::Clock::now();
  auto leader = std::make_unique<FakeLeader>();
  const int port = leader->port;
  const std::string url = leader->url();
  LeaderProbe p(1000, [&] { return now; });
  LeaderProbe off(0, [&] { return now; });
  EXPECT_EQ(p.check(3, url), LeaderState::Alive);  // reached
  EXPECT_EQ(off.check(3, url), LeaderState::Alive);
  now += std::chrono::seconds(5);  // answering: however long since the last round
  EXPECT_EQ(p.check(3, url), LeaderState::Alive);
  EXPECT_EQ(p.silent_ms(), 0);
  leader.reset();
  testing::FrozenPort frozen(port);
  EXPECT_EQ(probe_port(url, 500), PortState::Open);  // nothing refuses
  EXPECT_FALSE(answers_ok(url, "/healthz", 200));
  now += std::chrono::milliseconds(999);
  EXPECT_EQ(p.check(3, url), LeaderState::Alive);
  EXPECT_EQ(p.silent_ms(), 999);
  now += std::chrono::milliseconds(1);
  EXPECT_EQ(p.check(3, url), LeaderState::Silent);
  now += std::chrono::seconds(60);
  EXPECT_EQ(off.check(3, url), LeaderState::Alive);
  // A new lease must be reached again first.
  EXPECT_EQ(p.check(4, url), LeaderState::Alive);
  EXPECT_EQ(p.silent_ms(), 0);
}

// A live leader renews three times per TTL (at least 2/3 of it left); etcd reports whole
// seconds, rounded down. Missed: at most half the TTL can be left, or the lease is gone.
TEST(LeaderProbe, MissedRenewalRule) {
  EXPECT_FALSE(missed_renewal(1, 2));  // 1-2 s of 2: renewed on time
  EXPECT_FALSE(missed_renewal(2, 2));
  EXPECT_TRUE(missed_renewal(0, 2));   // under 1 s of 2
  EXPECT_TRUE(missed_renewal(-1, 2));  // gone
  EXPECT_FALSE(missed_renewal(1, 3));
  EXPECT_TRUE(missed_renewal(0, 3));
  EXPECT_FALSE(missed_renewal(2, 4));
  EXPECT_TRUE(missed_renewal(1, 4));
  EXPECT_FALSE(missed_renewal(5, 10));  // 5-6 s of 10: late, but within the slack
  EXPECT_TRUE(missed_renewal(4, 10));
  EXPECT_FALSE(missed_renewal(0, 1));  // whole seconds cannot tell: it expires first
  EXPECT_TRUE(missed_renewal(-1, 1));
}

// A URL a standby never reached (a wrong --advertise, a firewall) never counts as gone: the
// lease expires instead.
TEST(LeaderProbe, NeverReachedIsNeverGone) {
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::free_port());
  LeaderProbe p(300);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p.check(9, url), LeaderState::Alive) << i;
}

}  // namespace
}  // namespace leader_probe_test
}  // namespace sluice::server
