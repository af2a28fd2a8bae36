// net::Server's asynchronous routes (Responder), the options the gateway uses (408 for a late
// request, 503 over the caps, its error format) and drain(). Real sockets on 127.0.0.1; no
// timing assertions: waits are bounded by generous limits.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "net/http_server.h"
#include "raw_socket.h"

namespace sluice::net {
namespace {

using std::chrono::milliseconds;
using test::eventually;
using test::RawSocket;

ServerOptions quiet_options() {
  ServerOptions o;
  o.name = "test";
  o.log = [](const std::string&) {};
  return o;
}

// Responders the handler parked, for the test thread to answer.
struct Parked {
  std::mutex mu;
  std::vector<std::pair<std::string, Responder>> items;  // (body, responder)
  size_t size() {
    std::lock_guard lk(mu);
    return items.size();
  }
  std::pair<std::string, Responder> take(size_t i) {
    std::lock_guard lk(mu);
    return items.at(i);
  }
};

// A Responder must not outlive its Server: stop it, then drop what the handler parked.
void finish(std::unique_ptr<Server>& s, Parked& parked) {
  s->stop();
  std::lock_guard lk(parked.mu);
  parked.items.clear();
}

std::unique_ptr<Server> serve_async(ServerOptions o, Parked& parked) {
  auto s = std::make_unique<Server>(std::move(o));
  s->Async("*", "*", [&parked](Request& req, Responder r) {
    std::lock_guard lk(parked.mu);
    parked.items.emplace_back(std::move(req.body), std::move(r));
  });
  EXPECT_TRUE(s->listen("127.0.0.1", 0));
  s->start();
  return s;
}

std::string post(const std::string& body) {
  return "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

TEST(NetAsync, AnswersLaterFromAnotherThreadOnAKeptAliveConnection) {
  Parked parked;
  auto s = serve_async(quiet_options(), parked);
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.send(post("one")));
  ASSERT_TRUE(eventually([&] { return parked.size() == 1; }));
  auto [body, r] = parked.take(0);
  EXPECT_EQ(body, "one");
  Response res;
  res.set_content("got " + body, "text/plain");
  r.send(res);         // from this thread, not the I/O thread
  r.send(Response{});  // a second answer is ignored
  std::string got;
  ASSERT_TRUE(eventually([&] {
    got += sock.read_all(milliseconds(50));
    return got.find("got one") != std::string::npos;
  }));
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
  // The connection is kept: the next request arrives on it.
  ASSERT_TRUE(sock.send(post("two")));
  ASSERT_TRUE(eventually([&] { return parked.size() == 2; }));
  EXPECT_EQ(parked.take(1).first, "two");
  finish(s, parked);
}

TEST(NetAsync, ClientCloseWhileWaitingCallsTheWatch) {
  Parked parked;
  auto s = serve_async(quiet_options(), parked);
  auto sock = std::make_unique<RawSocket>(s->port());
  ASSERT_TRUE(sock->send(post("q")));
  ASSERT_TRUE(eventually([&] { return parked.size() == 1; }));
  std::atomic<bool> gone{false};
  Responder r = parked.take(0).second;
  r.on_disconnect([&] { gone = true; });
  sock.reset();  // the client goes
  EXPECT_TRUE(eventually([&] { return gone.load(); }));
  r.close();
  EXPECT_TRUE(eventually([&] { return s->stats().connections == 0; }));
  finish(s, parked);
}

TEST(NetAsync, AResponderLostWithoutAnAnswerIs500) {
  auto s = std::make_unique<Server>(quiet_options());
  s->Async("GET", "/lost", [](Request&, Responder) {});  // drops it
  ASSERT_TRUE(s->listen("127.0.0.1", 0));
  s->start();
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.send("GET /lost HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string got = sock.read_all(milliseconds(20'000));
  EXPECT_EQ(got.rfind("HTTP/1.1 500", 0), 0u) << got;
  EXPECT_EQ(s->stats().handler_errors, 1u);
}

TEST(NetAsync, LateHeaderIs408WhenAskedAndTheErrorFormatIsTheUsers) {
  auto o = quiet_options();
  o.header_timeout = milliseconds(200);
  o.answer_timeouts = true;
  o.error_format = [](Response& res, int status, std::string_view reason, const std::string&,
                      const std::vector<std::string>&) {
    res.status = status;
    res.set_content(std::string(reason), "text/plain");
  };
  Parked parked;
  auto s = serve_async(o, parked);
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.send("GET / HTTP/1.1\r\nHost: x\r\n"));  // no blank line
  bool closed = false;
  const std::string got = sock.read_all(milliseconds(20'000), &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\ntimeout"), std::string::npos) << got;
  EXPECT_TRUE(closed);
  finish(s, parked);
}

TEST(NetAsync, TransferEncodingOtherThanChunkedIs400AtOnce) {
  Parked parked;
  auto s = serve_async(quiet_options(), parked);
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc"));
  const std::string got = sock.read_all(milliseconds(20'000));
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_EQ(parked.size(), 0u);
  finish(s, parked);
}

TEST(NetAsync, OverTheCapsIs503WhenAsked) {
  auto o = quiet_options();
  o.max_connections_per_ip = 1;
  o.cap_loopback_per_ip = true;
  o.reserve_connections = 0;  // no reserve: refused at accept
  o.answer_over_cap = true;
  Parked parked;
  auto s = serve_async(o, parked);
  RawSocket first(s->port());
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 1; }));
  RawSocket second(s->port());
  bool closed = false;
  const std::string got = second.read_all(milliseconds(20'000), &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_TRUE(closed);
  EXPECT_EQ(s->stats().over_cap_per_ip, 1u);
  EXPECT_EQ(s->stats().refused_at_accept, 1u);
  finish(s, parked);
}

TEST(NetAsync, DrainClosesIdleConnectionsAndAnswersTheRestWithClose) {
  Parked parked;
  auto s = serve_async(quiet_options(), parked);
  RawSocket idle(s->port()), busy(s->port());
  ASSERT_TRUE(busy.send(post("b")));
  ASSERT_TRUE(eventually([&] { return parked.size() == 1 && s->stats().connections == 2; }));
  std::atomic<int> drained{0};
  s->drain([&] { ++drained; });
  bool closed = false;
  idle.read_all(milliseconds(20'000), &closed);
  EXPECT_TRUE(closed);  // waiting for a request: closed at once
  EXPECT_EQ(drained.load(), 0);
  parked.take(0).second.send(Response{});
  const std::string got = busy.read_all(milliseconds(20'000), &closed);
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_TRUE(eventually([&] { return drained.load() == 1; }));
  finish(s, parked);
}

}  // namespace
}  // namespace sluice::net
