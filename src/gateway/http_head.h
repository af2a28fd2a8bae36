#pragma once
// What the gateway writes by hand on the upstream hop, and what it makes of the upstream's
// answer for the client (src/net writes the client's head). Pure functions, so the tests and
// the fuzz targets reach them without sockets.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <string_view>

#include "net/message.h"

namespace sluice::gateway {

using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Fields that stay on one hop: connection management, framing (Content-Length and
// Transfer-Encoding: each hop frames the body itself) and Expect. Case-insensitive.
bool is_hop_by_hop(std::string_view name);

// Request head for the upstream hop: always HTTP/1.1 keep-alive, length-delimited body of
// `body_size` bytes (the client's framing is gone: the body arrives de-chunked),
// `x-forwarded-for: req.remote_addr`.
void serialize_request_head(const net::Request& req, size_t body_size, std::string& out);

// Whether an upstream status can be relayed as the final answer: a 3-digit code from 200 up.
// Beast reads any 3 digits, so "000" arrives as 0, which the client's head would carry as the
// invalid "HTTP/1.1 0"; a 1xx is never final (the gateway sends no Expect or Upgrade upstream).
// Anything else is the backend's protocol error: 502 (found by tests/fuzz, fuzz_gateway_http).
inline bool relayable_status(unsigned code) {
  return code >= 200 && code <= 999;
}

// The client's answer from the upstream's: status, end-to-end headers in order, body (moved).
// `head_request`: the upstream's Content-Length is kept (there is no body).
net::Response relay_response(HttpResponse&& res, bool head_request);

}  // namespace sluice::gateway
