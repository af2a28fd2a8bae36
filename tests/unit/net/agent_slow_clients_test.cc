// The agent's HTTP server on the net stack: slow clients hold no worker, so its endpoints
// and /healthz keep answering (with httplib, 3 slow connections stalled the agent).
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <vector>

#include "../agent/test_util.h"
#include "agent/agent.h"
#include "raw_socket.h"

namespace sluice::net {
namespace {

TEST(AgentHttp, SurvivesSlowConnections) {
  agent::testing::TempDir dir;
  agent::AgentOptions o;
  o.server_url = "http://127.0.0.1:1";  // no server: the agent only serves here
  o.node = "slow1";
  o.gpus_spec = "fake:1xH100";
  o.state_dir = dir.path();
  o.max_backoff_ms = 1000;
  o.log = [](const std::string&) {};
  auto a = agent::Agent::create(o);
  ASSERT_TRUE(a) << a.error();
  (*a)->start();
  const std::string addr = (*a)->address();
  const int port = std::stoi(addr.substr(addr.rfind(':') + 1));

  // More stalled connections than the agent has workers (2), by far.
  std::vector<std::unique_ptr<test::RawSocket>> slow;
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<test::RawSocket>(port));
    ASSERT_TRUE(slow.back()->ok());
    slow.back()->send(i % 2 ? "GET /v1/pods HTTP/1.1\r\nHost: x\r\n"  // half a header
                            : "POST /v1/checkpoint/1/0 HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
  }
  httplib::Client c(addr);
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // The node's own credential (its endpoints answer nobody else).
  std::string cred = agent::testing::read_file(dir.path() + "/node-credential");
  cred.pop_back();  // the newline
  c.set_default_headers({{"Authorization", "Bearer " + cred}});
  r = c.Get("/v1/pods");  // a worker route
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "[]");
  r = c.Get("/v1/logs/1/0");  // no such pod: a JSON 404, from a worker
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  (*a)->stop();
}

TEST(AgentHttp, PortInUseIsAClearError) {
  agent::testing::TempDir d1, d2;
  agent::AgentOptions o;
  o.server_url = "http://127.0.0.1:1";
  o.node = "p1";
  o.gpus_spec = "fake:1xH100";
  o.state_dir = d1.path();
  o.log = [](const std::string&) {};
  auto a = agent::Agent::create(o);
  ASSERT_TRUE(a) << a.error();
  const std::string addr = (*a)->address();
  o.listen = addr.substr(std::string("http://").size());
  o.node = "p2";
  o.state_dir = d2.path();
  auto b = agent::Agent::create(o);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error(), "agent p2: cannot listen on " + o.listen + ": address already in use");
}

}  // namespace
}  // namespace sluice::net
