#pragma once
// The heads the gateway writes by hand (one gather write of head and body: Beast's serializer
// costs more than the rest of a proxied request on the hot path). Pure functions of the parsed
// message, so the tests and the fuzz targets reach them without sockets.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <string_view>

namespace sluice::gateway {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Fields that stay on one hop: connection management, framing (Content-Length and
// Transfer-Encoding: each hop frames the body itself) and Expect.
bool is_hop_by_hop(boost::beast::http::field f);

// Request head for the upstream hop: always HTTP/1.1 keep-alive, length-delimited body (the
// client's framing is gone: Beast has de-chunked the body), `x-forwarded-for: client_ip`.
void serialize_request_head(const HttpRequest& req, std::string_view client_ip, std::string& out);

// Whether an upstream status can be relayed as the final answer: a 3-digit code from 200 up.
// Beast reads any 3 digits, so "000" arrives as 0, which the client's head would carry as the
// invalid "HTTP/1.1 0"; a 1xx is never final (the gateway sends no Expect or Upgrade upstream).
// Anything else is the backend's protocol error: 502 (found by tests/fuzz, fuzz_gateway_http).
inline bool relayable_status(unsigned code) {
  return code >= 200 && code <= 999;
}

// Response head for the client. `head_request`: keep the upstream's Content-Length (no body).
// `pool` non-empty adds `x-sluice-pool`.
void serialize_response_head(const HttpResponse& res, unsigned version, bool keep_alive,
                             bool head_request, std::string_view pool, std::string& out);

}  // namespace sluice::gateway
