#pragma once
// The reading half of a server connection, without the socket: Beast's request parser set up
// as the server sets it up, the bounded buffer it reads into, and the checks made once the
// header is in. net::Connection drives it from its socket; tests/fuzz/fuzz_http_request.cc
// drives it from arbitrary bytes, so that the fuzzer runs the server's own configuration.
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/http_server.h"
#include "net/wire.h"

namespace sluice::net {

// An answer the stack gives instead of reading on; the connection closes after it.
struct Refusal {
  int status = 0;
  std::string reason;  // the slug: "header_too_large", "body_too_large", ...
  std::string error;
  std::vector<std::string> details;
};

std::string describe_bytes(size_t n);  // "1 MiB", "16 KiB", "1000 bytes"

class RequestReader {
 public:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
  using error_code = boost::system::error_code;
  // The most the buffer ever holds (a read takes at most what is left). Beast's fields keep a
  // name's and a value's size in 16 bits and throw std::length_error (out of its parser,
  // through the I/O thread) past 65,533 bytes; a header or a trailer is parsed only once all of
  // it is buffered, so a buffer below 64 KiB never gives the parser a field that large. Before
  // (16 KiB + one 64 KiB read), a 70 KB trailer value was answered by nothing and a log line
  // "I/O thread: field value too large" (found by fuzz_http_request).
  static constexpr size_t kMaxBuffer = 65535;

  explicit RequestReader(const ServerOptions& opts);  // kept by reference: must outlive this
  RequestReader(ServerOptions&&) = delete;            // a temporary would dangle

  // A new request: a fresh parser with the header limit, and `largest_body` (the largest body
  // any route takes) as its body limit: Beast checks a Content-Length against it while it
  // parses the header, before the route is known.
  void start(size_t largest_body);
  // Feeds the parser from the buffer as far as it goes without a read: to the end of the
  // header, or with `body` to the end of the message. need_more: a read is needed.
  error_code parse_buffered(bool body);
  // The header is in: what refuses it (too many fields 431, a long target 414, a coding other
  // than chunked 400, a Content-Length over this request's limit 413), else nullopt with this
  // request's body limit set. `route_limit` gives it where the body may exceed the server's
  // limit (a route's own, looked up only then).
  std::optional<Refusal> check_header(const std::function<size_t()>& route_limit);
  // The message is in: a chunked body's trailer, which Beast adds to the header's fields, keeps
  // the whole within max_header_fields, and the trailer within max_header_bytes (431).
  // Before, 300 trailer fields reached the handlers as headers (found by fuzz_http_request).
  std::optional<Refusal> check_trailer() const;
  // What a read error is answered with (431, 413, 400); nullopt: close without an answer.
  std::optional<Refusal> refusal(const error_code& ec) const;

  // What the socket reads into, at most kMaxBuffer. What waits in it is what the parser
  // has not taken yet: a header (bounded by header_limit), or a chunk-size line with its
  // extensions, or a trailer, which Beast keeps until their CRLF. Without a bound those grew
  // without limit before any token was checked (issue 41: a size line `5;` and 256 MB without
  // CRLF); past it a read fails with buffer_overflow (431).
  boost::beast::flat_buffer& buffer() { return buffer_; }
  Parser& parser() { return *parser_; }  // between start() and release() or reset()
  const Parser& parser() const { return *parser_; }
  // The parsed request; the parser is gone.
  BeastRequest release();
  void reset() { parser_.reset(); }
  size_t body_limit() const { return body_limit_; }

 private:
  const ServerOptions& opts_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  size_t body_limit_ = 0;    // of the request being read
  size_t header_bytes_ = 0;  // of the header's names and values (check_header)
};

}  // namespace sluice::net
