// net::RequestReader without a socket: the header checks, a chunked body's trailer held to the
// header limits, and a buffer that stays below the size Beast's fields can hold (issue 41;
// the trailer cases were found by tests/fuzz/fuzz_http_request.cc).
#include "net/request_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace sluice::net {
namespace {

namespace http = boost::beast::http;

// Starts a request and puts `bytes` in the buffer, as reads would (the limits' largest body:
// the server's).
void feed(RequestReader& r, const ServerOptions& o, const std::string& bytes) {
  r.start(o.max_body_bytes);
  auto space = r.buffer().prepare(bytes.size());
  std::memcpy(space.data(), bytes.data(), bytes.size());
  r.buffer().commit(bytes.size());
}

// The refusal of a whole request fed at once: by the header checks, the parser, or the
// trailer's; 0 when it is accepted.
int refusal_of(const std::string& request, const ServerOptions& o = {}) {
  RequestReader r(o);
  feed(r, o, request);
  if (auto ec = r.parse_buffered(false)) return r.refusal(ec) ? r.refusal(ec)->status : -1;
  if (auto no = r.check_header([&] { return o.max_body_bytes; })) return no->status;
  if (auto ec = r.parse_buffered(true)) return r.refusal(ec) ? r.refusal(ec)->status : -1;
  if (auto no = r.check_trailer()) return no->status;
  return 0;
}

const std::string kChunked =
    "POST /v1/jobs HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";

TEST(RequestReader, HeaderChecks) {
  EXPECT_EQ(refusal_of("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 0);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refusal_of(many + "\r\n"), 431);  // 101 fields, the limit 100
  EXPECT_EQ(refusal_of("GET /" + std::string(5000, 'a') + " HTTP/1.1\r\n\r\n"), 414);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 400);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"), 413);  // 1 MiB
  EXPECT_EQ(refusal_of(kChunked + "\r\n"), 0);
}

// Beast adds a trailer's fields to the header's: 300 of them reached the handlers.
TEST(RequestReader, TrailerFieldsCountAgainstTheHeaderLimit) {
  std::string trailer;
  for (int i = 0; i < 98; ++i) trailer += "T" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refusal_of(kChunked + trailer + "\r\n"), 0);  // 2 + 98 fields: the limit
  EXPECT_EQ(refusal_of(kChunked + trailer + "U: v\r\n\r\n"), 431);
  const ServerOptions o;  // the reader keeps a reference: it must outlive it
  RequestReader r(o);
  feed(r, o, kChunked + trailer + "U: v\r\nW: v\r\n\r\n");
  ASSERT_FALSE(r.parse_buffered(false));
  ASSERT_FALSE(r.check_header([] { return size_t{1} << 20; }));
  ASSERT_FALSE(r.parse_buffered(true));
  const auto no = r.check_trailer();
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error, "more than 100 header fields, the trailer's included");
}

TEST(RequestReader, TrailerBytesAreHeldToTheHeaderLimit) {
  EXPECT_EQ(refusal_of(kChunked + "X: " + std::string(15000, 'b') + "\r\n\r\n"), 0);
  EXPECT_EQ(refusal_of(kChunked + "X: " + std::string(20000, 'b') + "\r\n\r\n"), 431);  // 16 KiB
}

// A 70 KB trailer value made Beast throw std::length_error out of the I/O thread: no answer.
// The buffer holds less than a field Beast cannot hold; a read past it is a 431.
TEST(RequestReader, BufferStaysBelowWhatBeastsFieldsHold) {
  ServerOptions o;
  o.max_header_bytes = 1 << 20;  // a header limit above it does not raise it
  RequestReader r(o);
  EXPECT_EQ(r.buffer().max_size(), 65535u);
  const auto no = r.refusal(http::error::buffer_overflow);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 431);
}

}  // namespace
}  // namespace sluice::net
