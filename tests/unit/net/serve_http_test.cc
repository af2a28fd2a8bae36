// `sluice serve` on the net stack, end to end through Server::create: slow clients do not take
// /healthz or the API down, and a second server on the same port fails with a clear error.
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <vector>

#include "../agent/test_util.h"
#include "raw_socket.h"
#include "server/server.h"

namespace sluice::net {
namespace {

server::ServeOptions serve_options(const std::string& dir, const std::string& listen) {
  server::ServeOptions o;
  o.listen = listen;
  o.data_dir = dir;
  o.config_files = {std::string(SLUICE_SOURCE_DIR) + "/examples/config/cluster.yaml",
                    std::string(SLUICE_SOURCE_DIR) + "/examples/config/queues.yaml"};
  o.quiet = true;
  return o;
}

TEST(ServeHttp, AnswersWhile300SlowConnectionsStallAndRefusesAPortInUse) {
  agent::testing::TempDir d1, d2;
  auto srv = server::Server::create(serve_options(d1.path(), "127.0.0.1:0"));
  ASSERT_TRUE(srv) << srv.error();
  (*srv)->start();
  const int port = (*srv)->port();
  ASSERT_GT(port, 0);

  // 300 connections that send half a header and stall: more than the 256 workers.
  std::vector<std::unique_ptr<test::RawSocket>> slow;
  for (int i = 0; i < 300; ++i) {
    slow.push_back(std::make_unique<test::RawSocket>(port));
    ASSERT_TRUE(slow.back()->ok()) << "connection " << i;
    slow.back()->send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-");
  }
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  r = c.Get("/v1/queues");  // a worker route, under the state lock
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/v1/nowhere");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = c.Post("/v1/jobs", std::string((1 << 20) + 1, 'x'), "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("1 MiB"), std::string::npos) << r->body;

  // A second server on the same port: refused, and the first keeps every request.
  auto again =
      server::Server::create(serve_options(d2.path(), "127.0.0.1:" + std::to_string(port)));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(),
            "cannot listen on 127.0.0.1:" + std::to_string(port) + ": address already in use");
  for (int i = 0; i < 4; ++i) {
    r = c.Get("/readyz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  (*srv)->stop();
}

}  // namespace
}  // namespace sluice::net
