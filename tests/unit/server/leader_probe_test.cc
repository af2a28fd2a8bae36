// A standby's test of the leader's process (leader_probe.h): a closed port is refused, an open
// one is not; the leader counts as gone only after its API answered ready under its lease and
// then refused connections twice in a row, never when it was not reached first.
#include "server/leader_probe.h"

#include <gtest/gtest.h>

#include "etcd_process.h"
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
  LeaderProbe p;
  EXPECT_FALSE(p.gone(7, url));  // reached: ready
  EXPECT_FALSE(p.gone(7, url));  // open
  leader.reset();                // the process dies: its port closes
  EXPECT_FALSE(p.gone(7, url));  // one refusal is not enough
  EXPECT_TRUE(p.gone(7, url));
  // Another lease (a new leader at the same URL, or a stale read) starts over: it must be
  // reached first.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(p.gone(8, url)) << i;
  EXPECT_FALSE(p.gone(0, ""));  // nobody leads
}

// A URL a standby never reached (a wrong --advertise, a firewall) never counts as gone: the
// lease expires instead.
TEST(LeaderProbe, NeverReachedIsNeverGone) {
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::free_port());
  LeaderProbe p;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(p.gone(9, url)) << i;
}

}  // namespace
}  // namespace leader_probe_test
}  // namespace sluice::server
