// Responder::to_worker: an asynchronous route answers on the I/O thread what it can and hands
// the rest to a worker thread, where it may block. No timing assertions.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gate.h"
#include "net/http_server.h"
#include "raw_socket.h"
#include "test_client.h"

namespace sluice::net {
namespace worker_handoff_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using test::eventually;

using test::Gate;

// POST /x: "now" is answered by the handler itself; anything else on a worker, after the gate.
// The threads that ran the handler and the job are noted.
struct Handoff {
  Gate gate;
  std::mutex mu;
  std::thread::id handler_thread, job_thread;
  std::atomic<int> jobs{0};
};

std::unique_ptr<Server> serve(ServerOptions o, Handoff& h) {
  o.name = "test";
  o.log = [](const std::string&) {};
  auto s = std::make_unique<Server>(std::move(o));
  s->Async("POST", "/x", [&h](Request& req, Responder r) {
    {
      std::lock_guard lk(h.mu);
      h.handler_thread = std::this_thread::get_id();
    }
    Response res;
    if (req.body == "now") {
      res.set_content("now", "text/plain");
      return r.send(res);
    }
    if (req.body == "throw") return r.to_worker([] { throw std::runtime_error("the job failed"); });
    r.to_worker([&h, &req, r] {
      ++h.jobs;
      {
        std::lock_guard lk(h.mu);
        h.job_thread = std::this_thread::get_id();
      }
      h.gate.pass();
      Response out;
      out.set_content("later " + req.body, "text/plain");  // req lives until the answer
      r.send(out);
    });
  });
  EXPECT_TRUE(s->listen("127.0.0.1", 0));
  s->start();
  return s;
}

TEST(NetWorkerHandoff, AnswersOnTheIoThreadOrOnAWorkerThatMayBlock) {
  Handoff h;
  auto s = serve({}, h);
  int slow_status = 0;
  std::string slow_body;
  std::thread t([&] {
    auto c = test::loopback_client(*s, /*keep_alive=*/true);
    if (auto r = c.Post("/x", "wait", "text/plain")) {
      slow_status = r->status;
      slow_body = r->body;
    }
  });
  ASSERT_TRUE(eventually([&] { return h.gate.waiting == 1; }));
  // The job blocks a worker, not the I/O thread: an answer the handler gives itself goes out.
  auto c = test::loopback_client(*s, /*keep_alive=*/true);
  auto now = c.Post("/x", "now", "text/plain");
  ASSERT_TRUE(now);
  EXPECT_EQ(now->status, 200);
  EXPECT_EQ(now->body, "now");
  {
    std::lock_guard lk(h.mu);
    EXPECT_NE(h.job_thread, h.handler_thread);
  }
  h.gate.release();
  t.join();
  EXPECT_EQ(slow_status, 200);
  EXPECT_EQ(slow_body, "later wait");
  // Both kinds of answer leave the connection open for the next request.
  auto again = c.Post("/x", "more", "text/plain");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, "later more");
  EXPECT_EQ(s->stats().connections, 1u);
  s->stop();
}

TEST(NetWorkerHandoff, AFullQueueIs503BusyAndTheJobNeverRuns) {
  Handoff h;
  ServerOptions o;
  o.workers = 1;
  o.max_queued = 0;
  auto s = serve(o, h);
  std::string first_body;
  std::thread t([&] {
    auto c = test::loopback_client(*s, /*keep_alive=*/true);
    if (auto r = c.Post("/x", "one", "text/plain")) first_body = r->body;
  });
  ASSERT_TRUE(eventually([&] { return h.gate.waiting == 1; }));
  auto c = test::loopback_client(*s, /*keep_alive=*/true);
  auto busy = c.Post("/x", "two", "text/plain");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  EXPECT_NE(busy->body.find("busy"), std::string::npos) << busy->body;
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
  EXPECT_EQ(s->stats().busy_503, 1u);
  h.gate.release();
  t.join();
  EXPECT_EQ(first_body, "later one");
  EXPECT_EQ(h.jobs, 1);
  // The refused connection stays usable.
  auto now = c.Post("/x", "now", "text/plain");
  ASSERT_TRUE(now);
  EXPECT_EQ(now->status, 200);
  s->stop();
}

TEST(NetWorkerHandoff, AJobThatThrowsBeforeItAnswersIs500) {
  Handoff h;
  auto s = serve({}, h);
  auto c = test::loopback_client(*s, /*keep_alive=*/true);
  auto r = c.Post("/x", "throw", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("the job failed"), std::string::npos) << r->body;
  EXPECT_EQ(s->stats().handler_errors, 1u);
  auto now = c.Post("/x", "now", "text/plain");
  ASSERT_TRUE(now);
  EXPECT_EQ(now->status, 200);
  s->stop();
}

}  // namespace
}  // namespace worker_handoff_test
}  // namespace sluice::net
