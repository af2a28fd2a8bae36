// Streamed answers (net::Stream, a Kubernetes watch): chunked framing, the last chunk and the
// close, a client that leaves, and one that stops reading (closed past the queue's bound).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "net/http_server.h"
#include "net/wire.h"
#include "raw_socket.h"

namespace sluice::net {
namespace stream_test {

using std::chrono::milliseconds;
using test::eventually;
using test::RawSocket;

// A server whose one route parks its Responder for the test thread.
struct Rig {
  std::mutex mu;
  std::optional<Responder> parked;
  std::unique_ptr<Server> server;

  Rig() {
    ServerOptions o;
    o.name = "stream-test";
    o.log = [](const std::string&) {};
    server = std::make_unique<Server>(o);
    server->Async("GET", "/watch", [this](Request&, Responder r) {
      std::lock_guard lk(mu);
      parked = std::move(r);
    });
    EXPECT_TRUE(server->listen("127.0.0.1", 0));
    server->start();
  }
  ~Rig() {
    server->stop();  // a Responder (and a Stream) must not outlive its server
    std::lock_guard lk(mu);
    parked.reset();
  }
  std::optional<Responder> take() {
    std::lock_guard lk(mu);
    return parked;
  }
};

constexpr const char* kAsk = "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(NetWire, ChunkFramesInHexAndTheLastChunkIsEmpty) {
  EXPECT_EQ(chunk_frame("abc"), "3\r\nabc\r\n");
  EXPECT_EQ(chunk_frame(std::string(26, 'x')).substr(0, 4), "1a\r\n");
  EXPECT_EQ(chunk_frame(std::string(4096, 'x')).substr(0, 6), "1000\r\n");
  EXPECT_EQ(chunk_frame(""), "0\r\n\r\n");
}

TEST(NetStream, WritesChunksInOrderThenTheLastChunkAndCloses) {
  Rig rig;
  RawSocket sock(rig.server->port());
  ASSERT_TRUE(sock.send(kAsk));
  ASSERT_TRUE(eventually([&] { return rig.take().has_value(); }));
  Response head;
  head.content_type = "application/json";
  Stream st = rig.take()->stream(head);
  ASSERT_TRUE(st);
  EXPECT_TRUE(st.write("{\"a\":1}\n"));
  EXPECT_TRUE(st.write(""));  // nothing: an empty chunk would end the body
  EXPECT_TRUE(st.write("{\"b\":2}\n"));
  rig.take()->send(Response{});  // the stream is the answer: ignored
  st.end();
  EXPECT_FALSE(st.write("late"));
  bool closed = false;
  const std::string got = sock.read_all(milliseconds(20'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("Content-Length"), std::string::npos) << got;
  const std::string body = got.substr(got.find("\r\n\r\n") + 4);
  EXPECT_EQ(body, "8\r\n{\"a\":1}\n\r\n8\r\n{\"b\":2}\n\r\n0\r\n\r\n");
}

TEST(NetStream, AClientThatLeavesClosesTheStream) {
  Rig rig;
  auto sock = std::make_unique<RawSocket>(rig.server->port());
  ASSERT_TRUE(sock->send(kAsk));
  ASSERT_TRUE(eventually([&] { return rig.take().has_value(); }));
  Stream st = rig.take()->stream(Response{});
  EXPECT_TRUE(st.open());
  sock.reset();
  EXPECT_TRUE(eventually([&] { return !st.open(); }));
  EXPECT_FALSE(st.write("x"));
  st = Stream();  // the last copy: the connection goes with it (a watch's owner drops it)
  EXPECT_TRUE(eventually([&] { return rig.server->stats().connections == 0; }));
}

TEST(NetStream, AClientThatStopsReadingIsClosedPastTheBound) {
  Rig rig;
  RawSocket sock(rig.server->port());
  ASSERT_TRUE(sock.send(kAsk));
  ASSERT_TRUE(eventually([&] { return rig.take().has_value(); }));
  Stream st = rig.take()->stream(Response{});
  const std::string mib(1 << 20, 'x');
  // The socket buffers take a few MiB; then the queue fills to its bound and the stream closes.
  size_t written = 0;
  while (written < 256 && st.write(mib)) ++written;
  EXPECT_LT(written, 256u);
  EXPECT_GE(written, Stream::kMaxQueuedBytes / mib.size() - 1);
  EXPECT_TRUE(eventually([&] { return !st.open(); }));
}

}  // namespace stream_test
}  // namespace sluice::net
