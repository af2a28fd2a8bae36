// A streamed answer (net::Stream, a Kubernetes watch): the head with Transfer-Encoding: chunked,
// then chunks as the handler writes them, each under the write deadline, then the last chunk
// and a close. Meanwhile the connection reads, so that it learns when the client leaves; what
// a client sends during a stream is read and dropped (the connection closes after it anyway).
// A Stream holds its connection (and its place under the caps) until its last copy goes, also
// once the client left: its owner drops it when open() turns false (the watch thread does).
#include "net/server_impl.h"
#include "net/wire.h"

namespace sluice::net {

namespace {
constexpr size_t kReadChunk = 4096;
}

void Connection::stream_start(std::shared_ptr<Exchange> ex) {
  // Set before any chunk is framed: stream_push() reads it on the thread that writes.
  stream_chunked_ = ex->req.version >= 11;
  asio::post(socket_.get_executor(), [self = shared_from_this(), ex = std::move(ex)] {
    self->stop_watch();
    if (self->closed_) return;
    std::string head;
    serialize_response_head(ex->res, ex->req.version, /*keep_alive=*/false, false, head,
                            self->stream_chunked_);
    if (self->server_.opts.on_response) self->server_.opts.on_response(ex->res.status);
    self->stream_bytes_ += head.size();
    self->stream_q_.push_front(std::move(head));
    self->disarm(Phase::kHandler);
    self->stream_write_next();
    self->stream_read();
  });
}

bool Connection::stream_push(std::string data, bool last) {
  if (gone()) return false;
  if (data.empty() && !last) return true;
  std::string framed;
  if (!stream_chunked_) {
    framed = std::move(data);  // the close ends an HTTP/1.0 body
  } else {
    if (!data.empty()) framed = chunk_frame(data);
    if (last) framed += chunk_frame("");
  }
  const size_t queued = stream_bytes_.fetch_add(framed.size()) + framed.size();
  if (queued > Stream::kMaxQueuedBytes) {
    close();  // too far behind: closed, as the API server drops a watcher that cannot keep up
    return false;
  }
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), framed = std::move(framed), last]() mutable {
               if (self->closed_) return;
               self->stream_q_.push_back(std::move(framed));
               if (last) self->stream_q_.push_back({});  // the marker: close once written
               self->stream_write_next();
             });
  return true;
}

void Connection::stream_write_next() {
  if (stream_writing_ || closed_ || stream_q_.empty()) return;
  if (stream_q_.front().empty()) {  // the last chunk went out: the client closes, or the deadline
    error_code e;
    socket_.shutdown(tcp::socket::shutdown_send, e);
    if (e) return close_now();
    arm(Phase::kLinger, std::chrono::milliseconds(1000));
    return;
  }
  stream_writing_ = true;
  arm(Phase::kWrite, server_.opts.write_timeout);
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(stream_q_.front()), [self](error_code ec, size_t) {
    self->stream_writing_ = false;
    if (ec) return self->close_now();
    self->stream_bytes_ -= self->stream_q_.front().size();
    self->stream_q_.pop_front();
    self->disarm(Phase::kHandler);
    self->stream_write_next();
  });
}

void Connection::stream_read() {
  reader_.buffer().clear();
  socket_.async_read_some(reader_.buffer().prepare(kReadChunk),
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->close_now();
                            self->stream_read();
                          });
}

// ---------------------------------------------------------------------------------------------

Stream Responder::stream(Response head) const {
  auto [conn, ex] = state_->take();
  if (!conn) return {};
  ex->res = std::move(head);
  ex->res.body.clear();
  conn->stream_start(ex);
  return Stream(std::make_shared<Stream::State>(std::move(conn)));
}

bool Stream::write(std::string data) const {
  if (!s_ || s_->ended) return false;
  return s_->conn->stream_push(std::move(data), false);
}

void Stream::end() const {
  if (!s_ || s_->ended.exchange(true)) return;
  s_->conn->stream_push({}, true);
}

bool Stream::open() const {
  return s_ && !s_->ended && !s_->conn->gone();
}

size_t Stream::queued() const {
  return s_ ? s_->conn->stream_queued() : 0;
}

Stream::State::~State() {
  if (!ended.exchange(true)) conn->stream_push({}, true);
}

}  // namespace sluice::net
