#include "net/request_reader.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

namespace sluice::net {

namespace beast = boost::beast;
namespace http = beast::http;

std::string describe_bytes(size_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= (1 << 10) && n % (1 << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

RequestReader::RequestReader(const ServerOptions& opts) : opts_(opts), buffer_(kMaxBuffer) {}

void RequestReader::start(size_t largest_body) {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  body_limit_ = largest_body;
  parser_->body_limit(static_cast<std::uint64_t>(body_limit_));
}

RequestReader::error_code RequestReader::parse_buffered(bool body) {
  for (;;) {
    if (body ? parser_->is_done() : parser_->is_header_done()) return {};
    if (buffer_.size() == 0) return http::error::need_more;
    error_code ec;
    const size_t n = parser_->put(buffer_.data(), ec);
    buffer_.consume(n);
    if (ec) return ec;
    if (n == 0) return http::error::need_more;
  }
}

namespace {

// The fields of a message and the bytes of their names and values.
template <class Fields>
std::pair<size_t, size_t> count_fields(const Fields& fields) {
  size_t n = 0, bytes = 0;
  for (const auto& f : fields) {
    ++n;
    bytes += f.name_string().size() + f.value().size();
  }
  return {n, bytes};
}

}  // namespace

std::optional<Refusal> RequestReader::check_header(const std::function<size_t()>& route_limit) {
  const auto& h = parser_->get();
  size_t fields = 0;
  std::tie(fields, header_bytes_) = count_fields(h);
  if (fields > opts_.max_header_fields)
    return Refusal{431, "header_too_large",
                   "more than " + std::to_string(opts_.max_header_fields) + " header fields"};
  if (h.target().size() > opts_.max_target_bytes)
    return Refusal{
        414, "target_too_long",
        "request target longer than the " + describe_bytes(opts_.max_target_bytes) + " limit"};
  // Only `chunked` is understood. Any other coding leaves the body without a length (RFC 9112
  // 6.3: a server answers 400); reading to the end would hold the connection until the body
  // deadline.
  const auto te = h[http::field::transfer_encoding];
  if (!te.empty() && !beast::iequals(te, "chunked"))
    return Refusal{400, "malformed", "unsupported Transfer-Encoding (only chunked is accepted)"};
  // The route is looked up only for a body that may exceed the server's limit.
  const auto length = parser_->content_length();
  const bool large = length ? *length > opts_.max_body_bytes : parser_->chunked();
  body_limit_ = large ? route_limit() : opts_.max_body_bytes;
  if (length && *length > body_limit_)
    return Refusal{413, "body_too_large",
                   "request body larger than the " + describe_bytes(body_limit_) + " limit"};
  parser_->body_limit(static_cast<std::uint64_t>(body_limit_));
  return std::nullopt;
}

std::optional<Refusal> RequestReader::check_trailer() const {
  if (!parser_->chunked()) return std::nullopt;
  const auto [fields, bytes] = count_fields(parser_->get());
  if (fields > opts_.max_header_fields)
    return Refusal{431, "header_too_large",
                   "more than " + std::to_string(opts_.max_header_fields) +
                       " header fields, the trailer's included"};
  if (bytes > header_bytes_ + opts_.max_header_bytes)
    return Refusal{
        431, "header_too_large",
        "a trailer larger than the " + describe_bytes(opts_.max_header_bytes) + " limit"};
  return std::nullopt;
}

std::optional<Refusal> RequestReader::refusal(const error_code& ec) const {
  if (ec == http::error::buffer_overflow)
    return Refusal{431, "header_too_large",
                   "a header, chunk-size line or trailer larger than the " +
                       describe_bytes(opts_.max_header_bytes) + " limit"};
  if (ec == http::error::header_limit)
    return Refusal{
        431, "header_too_large",
        "request header larger than the " + describe_bytes(opts_.max_header_bytes) + " limit"};
  if (ec == http::error::body_limit)
    return Refusal{413, "body_too_large",
                   "request body larger than the " + describe_bytes(body_limit_) + " limit"};
  if (ec.category() == http::make_error_code(http::error::bad_target).category())
    return Refusal{400, "malformed", "malformed request", {ec.message()}};
  return std::nullopt;
}

BeastRequest RequestReader::release() {
  auto msg = parser_->release();
  parser_.reset();
  return msg;
}

}  // namespace sluice::net
