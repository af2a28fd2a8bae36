// net::Server over real sockets on 127.0.0.1 (port 0), synchronous and asynchronous routes. No
// timing assertions: slow clients are given short deadlines and the checks wait with generous
// bounds.
#include "net/http_server.h"
#include "test_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

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

std::unique_ptr<Server> serve(ServerOptions o, const std::function<void(Server&)>& routes) {
  auto s = std::make_unique<Server>(std::move(o));
  routes(*s);
  auto port = s->listen("127.0.0.1", 0);
  EXPECT_TRUE(port) << (port ? "" : port.error());
  s->start();
  return s;
}

void health_route(Server& s) {
  s.Get("/healthz", [](const Request&, Response& res) { res.set_content("ok", "text/plain"); },
        {.run_inline = true});
}

TEST(NetServer, RoutesParamsHeadersAndKeepAlive) {
  auto s = serve(quiet_options(), [](Server& h) {
    h.Get("/plain", [](const Request&, Response& res) { res.set_content("plain", "text/plain"); });
    h.Get(R"(/v1/jobs/([^/]+))", [](const Request& req, Response& res) {
      res.set_content(nlohmann::json{{"id", req.matches[1].str()},
                                     {"has_state", req.has_param("state")},
                                     {"state", req.get_param_value("state")},
                                     {"second", req.get_param_value("state", 1)},
                                     {"missing", req.get_param_value("nope")},
                                     {"auth", req.get_header_value("authorization")}}
                          .dump(),
                      "application/json");
      res.set_header("X-Extra", "yes");
    });
    h.Get(R"(/v1/jobs/([^/]+)/explain)", [](const Request& req, Response& res) {
      res.set_content("explain " + std::string(req.matches[1]), "text/plain");
    });
    h.Post("/echo", [](const Request& req, Response& res) {
      res.status = 202;
      res.set_content(req.body, "text/plain");
    });
  });
  auto c = test::loopback_client(*s);
  c.set_keep_alive(true);
  auto r = c.Get("/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "plain");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain");

  // Query values are percent-decoded ('+' is a space); header names fold case.
  r = c.Get("/v1/jobs/42?state=a%2Cb%20c&state=second", {{"Authorization", "Bearer t"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["id"], "42");
  EXPECT_EQ(j["has_state"], true);
  EXPECT_EQ(j["state"], "a,b c");
  EXPECT_EQ(j["second"], "second");
  EXPECT_EQ(j["missing"], "");
  EXPECT_EQ(j["auth"], "Bearer t");
  EXPECT_EQ(r->get_header_value("X-Extra"), "yes");

  // The regex must match the whole path: /explain is its own route.
  r = c.Get("/v1/jobs/7/explain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "explain 7");

  r = c.Post("/echo", "hello", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(r->body, "hello");

  // Unknown path, or known path with another method: 404 with the JSON error body.
  r = c.Get("/nowhere");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(nlohmann::json::parse(r->body).contains("error"));
  r = c.Delete("/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  // Every request above went over one keep-alive connection.
  EXPECT_EQ(s->stats().accepted, 1u);
}

TEST(NetServer, BodyOverTheLimitIs413WithAJsonError) {
  auto o = quiet_options();
  o.max_body_bytes = 1024;
  auto s = serve(o, [](Server& h) {
    h.Post("/in", [](const Request& req, Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
  });
  auto c = test::loopback_client(*s);
  auto r = c.Post("/in", std::string(1024, 'x'), "text/plain");  // at the limit: fine
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "1024");
  r = c.Post("/in", std::string(64 << 10, 'x'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"], "request body larger than the 1 KiB limit");
  EXPECT_TRUE(j["details"].is_array());
}

// A route may take larger bodies, only from callers its header check admits.
TEST(NetServer, LargerBodyOnlyForAdmittedCallers) {
  auto o = quiet_options();
  o.max_body_bytes = 1024;
  auto s = serve(o, [](Server& h) {
    h.Post("/upload/n1",
           [](const Request& req, Response& res) {
             res.set_content(std::to_string(req.body.size()), "text/plain");
           },
           {.max_body_bytes = 128 << 10,
            .large_body_allowed = [](const std::string& path, const std::string& auth) {
              return path == "/upload/n1" && auth == "Bearer node-secret";
            }});
  });
  auto c = test::loopback_client(*s);
  const std::string big(64 << 10, 'x');
  auto r = c.Post("/upload/n1", big, "text/plain");  // a stranger: the server's 1 KiB limit
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  httplib::Client admitted("127.0.0.1", s->port());
  admitted.set_default_headers({{"Authorization", "Bearer node-secret"}});
  r = admitted.Post("/upload/n1", big, "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::to_string(big.size()));
  r = admitted.Post("/upload/n1", std::string(129 << 10, 'x'), "text/plain");  // over the route's
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
}

TEST(NetServer, HeaderOverTheLimitIs431) {
  auto o = quiet_options();
  o.max_header_bytes = 1024;
  auto s = serve(o, [](Server& h) { health_route(h); });
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.ok());
  sock.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n");
  bool closed = false;
  const std::string got = sock.read_all(milliseconds(20'000), &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got;
  EXPECT_TRUE(closed);
}

// Issue 41 (found by fuzz_http_request): a trailer of 300 fields reached the handler as
// headers, and one of a 70 KB value got no answer at all (Beast threw on the I/O thread).
TEST(NetServer, ChunkedTrailerOverTheLimitsIs431) {
  std::atomic<int> handled{0};
  auto s = serve(quiet_options(), [&](Server& h) {
    h.Post("/up", [&](const Request&, Response& res) {
      ++handled;
      res.set_content("ok", "text/plain");
    });
  });
  const std::string head =
      "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
  std::string many;
  for (int i = 0; i < 300; ++i) many += "T" + std::to_string(i) + ": v\r\n";
  for (const std::string& trailer : {many, "X: " + std::string(70'000, 'b') + "\r\n"}) {
    RawSocket sock(s->port());
    ASSERT_TRUE(sock.ok());
    sock.send(head + trailer + "\r\n");
    const std::string got = sock.read_all(milliseconds(20'000));
    EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST(NetServer, SlowHeaderIsClosedAfterTheHeaderTimeout) {
  auto o = quiet_options();
  o.header_timeout = milliseconds(200);
  auto s = serve(o, [](Server& h) { health_route(h); });
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.ok());
  ASSERT_TRUE(sock.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // no blank line: stalls
  bool closed = false;
  sock.read_all(milliseconds(20'000), &closed);
  EXPECT_TRUE(closed);  // closed by the server, well before the 20 s bound
  EXPECT_TRUE(eventually([&] { return s->stats().timeouts >= 1; }));
}

TEST(NetServer, IdleKeepAliveConnectionIsClosedQuietly) {
  auto o = quiet_options();
  o.idle_timeout = milliseconds(200);
  auto s = serve(o, [](Server& h) { health_route(h); });
  RawSocket sock(s->port());
  ASSERT_TRUE(sock.ok());
  ASSERT_TRUE(sock.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const std::string got = sock.read_all(milliseconds(20'000), &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_TRUE(closed);  // after the idle timeout, without an error answer
  EXPECT_EQ(got.find("408"), std::string::npos);
}

TEST(NetServer, HealthAnswersWhile300SlowlorisConnectionsStall) {
  auto o = quiet_options();
  o.header_timeout = milliseconds(120'000);  // they stay open for the whole test
  auto s = serve(o, [](Server& h) {
    health_route(h);
    h.Get("/work", [](const Request&, Response& res) { res.set_content("done", "text/plain"); });
  });
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 300; ++i) {
    slow.push_back(std::make_unique<RawSocket>(s->port()));
    ASSERT_TRUE(slow.back()->ok()) << "connection " << i;
    slow.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");  // and nothing more
  }
  ASSERT_TRUE(eventually([&] { return s->stats().connections >= 300; }));
  auto c = test::loopback_client(*s);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/work");  // a worker route too: no thread is held by the stalled connections
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_GE(s->stats().connections, 300u);  // they are still open
}

TEST(NetServer, PerIpCapServesOnlyInlineRoutesOverTheCap) {
  auto o = quiet_options();
  o.max_connections_per_ip = 4;
  o.cap_loopback_per_ip = true;              // loopback is exempt by default
  o.reserve_connections = 8;                 // at most 2 reserve slots per address
  o.reserve_timeout = milliseconds(60'000);  // held reserve connections stay for the test
  auto s = serve(o, [](Server& h) {
    health_route(h);
    h.Get("/work", [](const Request&, Response& res) { res.set_content("done", "text/plain"); });
  });
  std::vector<std::unique_ptr<RawSocket>> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<RawSocket>(s->port()));
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 4; }));

  // The fifth connection is over the cap: /healthz still answers, /work is 503.
  auto c = test::loopback_client(*s);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 4; }));  // it closed
  r = c.Get("/work");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(nlohmann::json::parse(r->body).contains("error"));
  EXPECT_EQ(s->stats().over_cap_503, 1u);

  // With the reserve of this address full too, connections are closed at accept.
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 4; }));
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawSocket>(s->port()));
  EXPECT_TRUE(eventually([&] { return s->stats().refused_at_accept >= 1; }));
  EXPECT_EQ(s->stats().reserve_connections, 2u);

  // Once the held connections go, the address is under its cap again.
  held.clear();
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 0; }));
  r = c.Get("/work");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(NetServer, HandlerThatThrowsGives500AndTheServerGoesOn) {
  std::vector<std::string> logs;
  std::mutex mu;
  auto o = quiet_options();
  o.log = [&](const std::string& l) {
    std::lock_guard lk(mu);
    logs.push_back(l);
  };
  auto s = serve(o, [](Server& h) {
    h.Get("/boom", [](const Request&, Response&) -> void { throw std::runtime_error("kaput"); });
    h.Get("/boom-inline", [](const Request&, Response&) -> void { throw 42; },
          {.run_inline = true});
    h.Get("/fine", [](const Request&, Response& res) { res.set_content("fine", "text/plain"); });
  });
  auto c = test::loopback_client(*s);
  auto r = c.Get("/boom");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"], "internal error");
  EXPECT_EQ(j["details"][0], "kaput");
  r = c.Get("/boom-inline");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  r = c.Get("/fine");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(s->stats().handler_errors, 2u);
  std::lock_guard lk(mu);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[0].find("kaput"), std::string::npos);
}

// Handlers that block (the server's long poll) hold every worker; inline routes still answer,
// one more request queues, and past the queue bound the answer is 503.
TEST(NetServer, InlineRouteAnswersWhileLongPollsHoldEveryWorker) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto o = quiet_options();
  o.workers = 2;
  o.max_queued = 1;
  auto s = serve(o, [&](Server& h) {
    health_route(h);
    h.Get("/poll", [&](const Request&, Response& res) {
      std::unique_lock lk(mu);
      cv.wait_for(lk, std::chrono::seconds(60), [&] { return release; });
      res.set_content("woken", "text/plain");
    });
  });
  std::vector<std::thread> polls;
  std::vector<int> status(3, 0);
  for (int i = 0; i < 2; ++i)
    polls.emplace_back([&, i] {
      auto c = test::loopback_client(*s);
      c.set_read_timeout(90, 0);
      auto r = c.Get("/poll");
      status[static_cast<size_t>(i)] = r ? r->status : -1;
    });
  ASSERT_TRUE(eventually([&] { return s->stats().workers_busy == 2; }))
      << "busy " << s->stats().workers_busy << " queued " << s->stats().queued << " conns "
      << s->stats().connections << " accepted " << s->stats().accepted;
  polls.emplace_back([&] {  // the third waits in the queue
    auto c = test::loopback_client(*s);
    c.set_read_timeout(90, 0);
    auto r = c.Get("/poll");
    status[2] = r ? r->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return s->stats().queued == 1; }));

  auto c = test::loopback_client(*s);
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/poll");  // the queue is full
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(s->stats().busy_503, 1u);

  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : polls) t.join();
  EXPECT_EQ(status, (std::vector<int>{200, 200, 200}));
}

TEST(NetServer, PortInUseFailsWithAClearError) {
  auto a = serve(quiet_options(), [](Server& h) { health_route(h); });
  ASSERT_GT(a->port(), 0);
  Server b(quiet_options());
  auto again = b.listen("127.0.0.1", a->port());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(),
            "cannot listen on 127.0.0.1:" + std::to_string(a->port()) + ": address already in use");
  // The first server still answers every request (no SO_REUSEPORT sharing).
  auto c = test::loopback_client(*a);
  for (int i = 0; i < 4; ++i) {
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

TEST(NetServer, StopClosesOpenConnectionsAndJoins) {
  auto s = serve(quiet_options(), [](Server& h) { health_route(h); });
  RawSocket idle(s->port());
  RawSocket half(s->port());
  ASSERT_TRUE(idle.ok() && half.ok());
  half.send("GET /healthz HTTP/1.1\r\n");
  ASSERT_TRUE(eventually([&] { return s->stats().connections == 2; }));
  s->stop();
  bool closed = false;
  idle.read_all(milliseconds(20'000), &closed);
  EXPECT_TRUE(closed);
  half.read_all(milliseconds(20'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(s->stats().connections, 0u);
  s->stop();  // idempotent
}

TEST(NetMessage, PercentDecodingAndQueries) {
  EXPECT_EQ(percent_decode("a%20b+c", true), "a b c");
  EXPECT_EQ(percent_decode("a%20b+c", false), "a b+c");
  EXPECT_EQ(percent_decode("100%", true), "100%");    // a trailing '%' stays
  EXPECT_EQ(percent_decode("%zz%4", true), "%zz%4");  // so do malformed escapes
  auto q = parse_query("a=1&&b=&c&a=2");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>{"b", ""}));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>{"c", ""}));
  EXPECT_EQ(q[3], (std::pair<std::string, std::string>{"a", "2"}));
  Response r;
  r.set_header("X-Bad", "a\r\nInjected: yes");  // refused
  r.set_header("Content-Length", "5");          // the server's to set
  EXPECT_TRUE(r.headers.empty());
}

// ---------------------------------------------------------------------------------------------
// Asynchronous routes (Responder), the options the gateway uses (408 for a late request, 503
// over the caps, its error format) and drain().

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
