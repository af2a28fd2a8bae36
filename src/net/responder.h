#pragma once
// The answer of an asynchronous route (Server::Async): the handler returns at once and answers
// later, from any thread, through a Responder. The connection waits meanwhile without a deadline
// (the handler owns the wait: a proxy's queue and upstream timeouts) and without a thread; the
// answer is written on the connection's strand under the write deadline. A Responder must not
// outlive its Server (stop() the server, then drop what still holds one).
//
//   http.Async("*", "*", [](Request& req, Responder r) {
//     start_work(std::move(req.body), [r](std::string out) { r.send(make_answer(out)); });
//   });
//   http.Async("POST", "/v1/x", [](Request& req, Responder r) {
//     if (auto res = answer_without_blocking(req)) return r.send(*res);
//     r.to_worker([&req, r] { r.send(answer_blocking(req)); });  // req lives until the answer
//   });
#include <functional>
#include <memory>

#include "net/message.h"

namespace sluice::net {

// A streamed answer (Responder::stream): its head went out with Transfer-Encoding: chunked,
// each write() is one chunk, end() the last one, after which the connection closes. Writes
// queue on the connection's strand and never block: a client that falls more than
// kMaxQueuedBytes behind is closed (write() then returns false), so a slow reader costs memory
// bounded by that, never a thread. Copies share one stream; when the last goes, it ends. Any
// thread. Like a Responder, it must not outlive its Server.
class Stream {
 public:
  static constexpr size_t kMaxQueuedBytes = 8 << 20;
  struct State;  // connection.cc
  Stream() = default;
  explicit Stream(std::shared_ptr<State> s) : s_(std::move(s)) {}
  // One chunk (empty data writes nothing). False once the client is gone, or was closed for
  // falling behind, or end() was called.
  bool write(std::string data) const;
  void end() const;
  bool open() const;  // the client is still there and end() was not called
  // Bytes written but not yet taken by the client: a writer with much to say (a watch's
  // initial events) waits while this is high rather than be closed for falling behind.
  size_t queued() const;
  explicit operator bool() const { return s_ != nullptr; }

 private:
  std::shared_ptr<State> s_;
};

class Responder {
 public:
  struct State;  // the connection and its exchange (connection.cc)
  explicit Responder(std::shared_ptr<State> state) : state_(std::move(state)) {}

  // Writes the answer. Once: later calls (and close()) are ignored. Any thread.
  void send(Response res) const;
  // Closes the connection without an answer (the client left). Any thread.
  void close() const;
  // `f` runs on the connection's strand when the client closes its connection before the answer
  // (the bytes of a pipelined request are not a close: the watch then ends without a call). One
  // watch per responder; send() and close() end it.
  void on_disconnect(std::function<void()> f) const;
  // Whether send() or close() was called.
  bool answered() const;
  // Runs `job` on one of the server's worker threads, where it may block (a long poll, a store
  // commit) before it answers through this Responder. An asynchronous route answers what it
  // can on the I/O thread and hands only the rest over: a request answered there costs no
  // thread hand-off and no wake-up. When every worker is busy and the queue is full the answer
  // is 503 (busy, as for a synchronous route) and `job` is dropped unrun. Any thread; ignored
  // once answered.
  void to_worker(std::function<void()> job) const;
  // Answers with `head` (its status, type and headers; its body is ignored) as the start of a
  // chunked stream, and returns it; an empty Stream when answered before. It counts as the
  // answer: send() and close() are then ignored.
  Stream stream(Response head) const;

 private:
  // Copies share it. When the last copy goes without an answer the client gets a 500 and the
  // server logs it: a lost responder never leaves a connection hanging.
  std::shared_ptr<State> state_;
};

}  // namespace sluice::net
