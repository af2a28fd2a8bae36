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

 private:
  // Copies share it. When the last copy goes without an answer the client gets a 500 and the
  // server logs it: a lost responder never leaves a connection hanging.
  std::shared_ptr<State> state_;
};

}  // namespace sluice::net
