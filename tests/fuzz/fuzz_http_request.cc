// The server's request reading (src/net: `sluice serve`, the node agent) over arbitrary bytes:
// net::RequestReader, the parser set up as net::Connection sets it up, with its bounded buffer
// and its header checks, driven as the connection drives it (what is buffered first, then
// Beast's reads with the size Beast picks, pipelined requests on one connection), the bytes
// arriving in pieces of the size the first byte picks. Chunked bodies with extensions and
// trailers, many headers and long lines are the cases of interest (issue 41).
//
// Invariants: no crash, exception or sanitizer report; the buffer never holds more than
// RequestReader::kMaxBuffer (under 64 KiB: memory per connection is bounded whatever the
// bytes); a request read to its
// end has a body within its limit and no more header fields, trailer included, than the
// limit; every refusal is one of the stack's (400, 413, 414, 431).
//
// First byte: bits 0-5 the piece size (0: as much as a read takes), bit 6 a route with a
// larger body limit (8 MiB, as `sluice serve`'s route for agents' log deliveries), bit 7 small
// limits (1 KiB of header, 8 fields, 2 KiB of body) so that short inputs reach them; otherwise
// the server's defaults (ServerOptions).
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "net/request_reader.h"
#include "net/wire.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using sluice::net::RequestReader;

// Fails the run with the invariant's text (libFuzzer keeps the input).
void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_http_request: invariant broken: %s\n", what);
  std::abort();
}

// A socket's reads over the input: at most `piece` bytes each (0: as much as asked), then EOF.
class PieceStream {
 public:
  PieceStream(std::string_view in, size_t piece) : in_(in), piece_(piece) {}

  template <class Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    ec = {};
    if (pos_ == in_.size()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    size_t n = in_.size() - pos_;
    if (piece_ > 0 && n > piece_) n = piece_;
    n = boost::asio::buffer_copy(buffers, boost::asio::buffer(in_.data() + pos_, n));
    pos_ += n;
    return n;
  }
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    beast::error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t piece_;
  size_t pos_ = 0;
};

bool stack_status(int s) {
  return s == 400 || s == 413 || s == 414 || s == 431;
}

// A read error: refused with one of the stack's statuses, or a close. Always false.
bool closed(const RequestReader& reader, const beast::error_code& ec) {
  if (auto no = reader.refusal(ec)) require(stack_status(no->status), "a refusal's status");
  return false;
}

bool refused(const sluice::net::Refusal& no) {
  require(stack_status(no.status), "a refusal's status");
  return false;
}

// One request as Connection reads it (next_request, on_bytes, on_header, read_body,
// on_request). False: the connection would be closed.
bool one_request(RequestReader& reader, PieceStream& stream, const sluice::net::ServerOptions& opts,
                 size_t route_limit) {
  const size_t max_buffer = RequestReader::kMaxBuffer;
  reader.start(std::max(opts.max_body_bytes, route_limit));
  beast::error_code ec = reader.parse_buffered(false);
  if (ec == http::error::need_more) http::read_header(stream, reader.buffer(), reader.parser(), ec);
  require(reader.buffer().capacity() <= max_buffer, "buffer bound (header)");
  if (ec) return closed(reader, ec);
  if (auto no = reader.check_header([&] { return std::max(opts.max_body_bytes, route_limit); }))
    return refused(*no);
  ec = reader.parse_buffered(true);
  if (ec == http::error::need_more) http::read(stream, reader.buffer(), reader.parser(), ec);
  require(reader.buffer().capacity() <= max_buffer, "buffer bound (body)");
  if (ec) return closed(reader, ec);
  if (auto no = reader.check_trailer()) return refused(*no);
  const size_t limit = reader.body_limit();
  auto msg = reader.release();
  require(msg.body().size() <= limit, "body within its limit");
  require(static_cast<size_t>(std::distance(msg.begin(), msg.end())) <= opts.max_header_fields,
          "header fields within the limit");
  const bool keep_alive = msg.keep_alive();
  const auto req = sluice::net::to_request(std::move(msg), "127.0.0.1", 1);
  require(req.headers.size() <= opts.max_header_fields, "the handlers' view of the fields");
  return keep_alive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  sluice::net::ServerOptions opts;
  if (mode & 0x80) {
    opts.max_header_bytes = 1024;
    opts.max_header_fields = 8;
    opts.max_target_bytes = 256;
    opts.max_body_bytes = 2048;
  }
  const size_t route_limit = (mode & 0x40) ? size_t{8} << 20 : 0;
  PieceStream stream(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                     mode & 0x3f);
  RequestReader reader(opts);
  // Pipelined requests on one keep-alive connection; bounded by the input (each request reads
  // at least one byte) and by a count.
  for (int i = 0; i < 64 && one_request(reader, stream, opts, route_limit); ++i)
    if (stream.done() && reader.buffer().size() == 0) break;
  return 0;
}
