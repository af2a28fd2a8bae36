// net::Client against a real loopback net::Server (and a listener that closes at once): replies,
// keep-alive reuse, a connection the server closed, refused connections, timeouts, cancel(),
// large bodies and streaming reads. No timing assertions but generous upper bounds on timeouts
// that must fire.
#include "net/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "../server/etcd_process.h"  // free_port()
#include "gate.h"
#include "net/http_server.h"
#include "raw_socket.h"

namespace sluice::net::client_test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Server> serve(const std::function<void(Server&)>& routes, ServerOptions o = {}) {
  o.name = "test";
  o.log = [](const std::string&) {};
  o.max_body_bytes = 64 << 20;
  auto s = std::make_unique<Server>(std::move(o));
  routes(*s);
  auto port = s->listen("127.0.0.1", 0);
  EXPECT_TRUE(port) << (port ? "" : port.error());
  s->start();
  return s;
}

std::string url(const Server& s) {
  return "http://127.0.0.1:" + std::to_string(s.port());
}

TEST(NetClient, ParsesUrls) {
  auto u = parse_url("http://[::1]:7070/x");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, "7070");
  EXPECT_EQ(u->authority(), "[::1]:7070");
  EXPECT_EQ(parse_url("https://etcd.example")->port, "443");  // the scheme's default
  EXPECT_EQ(parse_url("h:1")->scheme, "http");                // no scheme: http
  for (const char* bad : {"", "ftp://h:1", "http://", "http://:1", "http://h:", "http://h:x",
                          "http://h:99999", "http://[::1"})
    EXPECT_FALSE(parse_url(bad)) << bad;
}

TEST(NetClient, SendsHeadersAndBodyAndReadsTheReply) {
  auto s = serve([](Server& h) {
    h.Post("/echo", [](const Request& req, Response& res) {
      res.set_content(req.get_header_value("Authorization") + "|" +
                          req.get_header_value("Content-Type") + "|" + req.body,
                      "text/plain");
      res.set_header("X-Seen", "yes");
      res.status = 201;
    });
  });
  Client cli(url(*s));
  auto r = cli.post("/echo", "hello", "text/x-test", {{"Authorization", "Bearer t"}});
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "Bearer t|text/x-test|hello");
  EXPECT_EQ(r->get_header_value("x-seen"), "yes");  // case-insensitive
  EXPECT_EQ(r->get_header_value("X-None"), "");
  // A header with a line break is dropped, not sent as two.
  r = cli.post("/echo", "", "text/plain", {{"Authorization", "a\r\nX-Evil: 1"}});
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->body, "|text/plain|");
}

TEST(NetClient, ReusesItsConnectionAndReconnectsWhenTheServerClosedIt) {
  ServerOptions o;
  o.idle_timeout = milliseconds(200);
  auto s = serve(
      [](Server& h) {
        h.Get("/n", [](const Request&, Response& res) { res.set_content("n", "text/plain"); });
      },
      o);
  Client cli(url(*s));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cli.get("/n")) << i;
  EXPECT_EQ(cli.connections(), 1u);  // keep-alive: one connection for three requests
  // The server closes the idle connection: the next request goes out on a new one.
  ASSERT_TRUE(test::eventually([&] { return s->stats().connections == 0; }));
  auto r = cli.get("/n");
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->body, "n");
  EXPECT_EQ(cli.connections(), 2u);
  // Without keep-alive: a connection per request.
  Client once(url(*s), {.keep_alive = false});
  ASSERT_TRUE(once.get("/n"));
  ASSERT_TRUE(once.get("/n"));
  EXPECT_EQ(once.connections(), 2u);
}

TEST(NetClient, RefusedAndBadUrlsAreErrors) {
  // A port nothing listens on.
  Client refused("http://127.0.0.1:" + std::to_string(server::testing::free_port()));
  auto r = refused.get("/");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), ClientError::kConnection);
  EXPECT_NE(r.error_text().find("cannot connect to 127.0.0.1:"), std::string::npos)
      << r.error_text();
  EXPECT_TRUE(r.refused());
  EXPECT_FALSE(refused.connect());
  Client bad("http://:80");
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(bad.get("/").error(), ClientError::kBadUrl);
}

// A listener that accepts each connection and closes it unanswered.
class Slammer {
 public:
  Slammer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ::close(c);
      }
    });
  }
  ~Slammer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(NetClient, AServerThatClosesUnansweredIsAReadError) {
  Slammer slam;
  Client cli("http://127.0.0.1:" + std::to_string(slam.port()));
  auto r = cli.get("/");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error() == ClientError::kRead || r.error() == ClientError::kWrite)
      << r.error_text();
}

TEST(NetClient, ASilentServerTimesOutAndCancelEndsAWait) {
  test::Gate gate;
  auto s = serve([&](Server& h) {
    h.Get("/slow", [&](const Request&, Response& res) {
      gate.pass();
      res.set_content("late", "text/plain");
    });
  });
  Client cli(url(*s), {.read_timeout = milliseconds(200)});
  const auto t0 = Clock::now();
  auto r = cli.get("/slow");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), ClientError::kTimeout) << r.error_text();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(15));  // it fired (generous bound)
  // cancel() from another thread ends a long wait.
  Client poll(url(*s), {.read_timeout = std::chrono::seconds(600)});
  std::thread canceler([&] {
    ASSERT_TRUE(test::eventually([&] { return gate.waiting.load() >= 2; }));
    poll.cancel();
  });
  r = poll.get("/slow");
  canceler.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), ClientError::kCanceled) << r.error_text();
  gate.release();
  // The client works again afterwards.
  r = poll.get("/slow");
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->body, "late");
}

TEST(NetClient, LargeBodiesBothWaysAndTheBodyLimit) {
  auto s = serve([](Server& h) {
    h.Post("/echo", [](const Request& req, Response& res) {
      res.set_content(req.body, "application/octet-stream");
    });
  });
  std::string big(8 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
  Client cli(url(*s));
  auto r = cli.post("/echo", big, "application/octet-stream");
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->body, big);
  Client capped(url(*s), {.max_body_bytes = 1 << 20});
  r = capped.post("/echo", big, "application/octet-stream");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), ClientError::kTooLarge) << r.error_text();
}

TEST(NetClient, StreamingReadHandsOverThePiecesAndMayStop) {
  const std::string big(4 << 20, 'y');
  auto s = serve([&](Server& h) {
    h.Get("/big", [&](const Request&, Response& res) { res.set_content(big, "text/plain"); });
  });
  Client cli(url(*s));
  std::string got;
  size_t pieces = 0;
  auto r = cli.request("GET", "/big", {}, {}, {}, [&](std::string_view piece) {
    got += piece;
    ++pieces;
    return true;
  });
  ASSERT_TRUE(r) << r.error_text();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());  // the sink had it
  EXPECT_EQ(got.size(), big.size());
  EXPECT_GT(pieces, 1u);
  r = cli.request("GET", "/big", {}, {}, {}, [](std::string_view) { return false; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), ClientError::kCanceled);
  ASSERT_TRUE(cli.get("/big"));  // a fresh connection after the cut one
}

}  // namespace
}  // namespace sluice::net::client_test
