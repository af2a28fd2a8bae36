// net::Server's tenants and lanes over real sockets: one caller's requests in flight are capped
// (429 before the body is read), other callers and other lanes are served while it blocks every
// worker it may use. No timing assertions.
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gate.h"
#include "net/http_server.h"
#include "raw_socket.h"
#include "test_client.h"

namespace sluice::net {
namespace tenant_lane_test {

using test::eventually;

// Handlers that hold their worker until the test opens the gate.
struct Blocker {
  test::Gate gate;
  Handler handler() {
    return [this](const Request&, Response& res) {
      gate.pass();
      res.set_content("done", "text/plain");
    };
  }
  void release() { gate.release(); }
};

ServerOptions options() {
  ServerOptions o;
  o.name = "test";
  o.log = [](const std::string&) {};
  o.workers = 4;
  o.tenant_of = [](const RequestHead& h) { return std::string(h.header("X-Tenant")); };
  o.tenant_max_in_flight = 2;
  return o;
}

std::thread get_async(const Server& s, const std::string& path, const std::string& tenant,
                      int* status) {
  return std::thread([&s, path, tenant, status] {
    auto c = test::loopback_client(s);
    c.set_read_timeout(90, 0);
    auto r = c.Get(path, {{"X-Tenant", tenant}});
    *status = r ? r->status : -1;
  });
}

TEST(NetTenants, ACallerOverItsCapGets429WhileOthersAreServed) {
  Blocker block;
  Server s(options());
  s.Get("/block", block.handler());
  s.Post("/echo",
         [](const Request& req, Response& res) { res.set_content(req.body, "text/plain"); });
  ASSERT_TRUE(s.listen("127.0.0.1", 0));
  s.start();
  int st[2] = {0, 0};
  std::vector<std::thread> held;
  for (int i = 0; i < 2; ++i) held.push_back(get_async(s, "/block", "a", &st[i]));
  ASSERT_TRUE(eventually([&] { return s.stats().workers_busy == 2; }));

  auto c = test::loopback_client(s);
  // A's third request is refused before its body is read; B is served.
  auto r = c.Post("/echo", {{"X-Tenant", "a"}}, std::string(4096, 'x'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_NE(r->body.find("too many requests"), std::string::npos) << r->body;
  EXPECT_EQ(s.stats().tenant_429, 1u);
  r = c.Post("/echo", {{"X-Tenant", "b"}}, "hello", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  r = c.Post("/echo", "no tenant", "text/plain");  // "" has no cap
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  block.release();
  for (auto& t : held) t.join();
  EXPECT_EQ(st[0], 200);
  EXPECT_EQ(st[1], 200);
  // Answered: A's places are given back.
  r = c.Post("/echo", {{"X-Tenant", "a"}}, "again", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  s.stop();
}

TEST(NetLanes, ALaneAnswersWhileEveryDefaultWorkerIsHeld) {
  Blocker block;
  auto o = options();
  o.workers = 1;
  o.max_queued = 0;
  o.tenant_of = nullptr;
  o.lanes["agents"] = LaneOptions{.workers = 1, .max_queued = 4};
  Server s(std::move(o));
  s.Get("/block", block.handler());
  s.Get("/agent", [](const Request&, Response& res) { res.set_content("lane", "text/plain"); },
        {.lane = "agents"});
  ASSERT_TRUE(s.listen("127.0.0.1", 0));
  s.start();
  int st = 0;
  std::thread held = get_async(s, "/block", "", &st);
  ASSERT_TRUE(eventually([&] { return s.stats().workers_busy == 1; }));
  auto c = test::loopback_client(s);
  auto r = c.Get("/block");  // the default lane is full
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  r = c.Get("/agent");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "lane");
  block.release();
  held.join();
  EXPECT_EQ(st, 200);
  s.stop();
}

}  // namespace tenant_lane_test
}  // namespace sluice::net
