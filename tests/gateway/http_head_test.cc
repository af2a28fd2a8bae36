// The heads the gateway writes by hand (gateway/http_head.h).
#include <gtest/gtest.h>

#include <boost/beast/http.hpp>

#include "gateway/http_head.h"
#include "net/wire.h"

namespace sluice::gateway {
namespace {

namespace http = boost::beast::http;

// An upstream status Beast reads but that cannot be a final answer is the backend's error:
// "000" used to be relayed as "HTTP/1.1 0 <unknown-status>", a head no client parses (found by
// tests/fuzz, fuzz_gateway_http).
TEST(HttpHead, OnlyFinalThreeDigitStatusesAreRelayed) {
  EXPECT_FALSE(relayable_status(0));    // "000"
  EXPECT_FALSE(relayable_status(99));   // "099"
  EXPECT_FALSE(relayable_status(100));  // interim: never the final answer
  EXPECT_FALSE(relayable_status(199));
  EXPECT_TRUE(relayable_status(200));
  EXPECT_TRUE(relayable_status(503));
  EXPECT_TRUE(relayable_status(999));  // unusual, but valid HTTP
}

TEST(HttpHead, RequestHeadDropsTheClientsFramingAndParsesBack) {
  net::Request req;
  req.method = "POST";
  req.target = "/v1/completions?x=1";
  req.headers = {{"Host", "gw"},
                 {"Transfer-Encoding", "chunked"},
                 {"Connection", "close"},
                 {"x-api-key", "k"}};
  req.body = "hello";
  req.remote_addr = "10.0.0.1";
  std::string head;
  serialize_request_head(req, req.body.size(), head);
  EXPECT_EQ(head,
            "POST /v1/completions?x=1 HTTP/1.1\r\nHost: gw\r\nx-api-key: k\r\n"
            "x-forwarded-for: 10.0.0.1\r\ncontent-length: 5\r\n\r\n");
  http::request_parser<http::string_body> p;
  p.eager(true);  // header and body in one put
  boost::beast::error_code ec;
  const std::string wire = head + req.body;
  EXPECT_EQ(p.put(boost::asio::buffer(wire), ec), wire.size());
  EXPECT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_done());
  EXPECT_EQ(p.get().body(), "hello");
}

TEST(HttpHead, HopByHopNamesAnyCase) {
  for (const char* n : {"Connection", "keep-alive", "Proxy-Connection", "TE", "Trailer", "Upgrade",
                        "transfer-encoding", "Content-Length", "Expect"})
    EXPECT_TRUE(is_hop_by_hop(n)) << n;
  for (const char* n : {"Host", "x-api-key", "Content-Type", "Authorization", "tex", ""})
    EXPECT_FALSE(is_hop_by_hop(n)) << n;
}

// The upstream's answer as the client gets it: its end-to-end headers and body, and (written
// by src/net) this hop's framing and connection header.
TEST(HttpHead, RelayedResponseHead) {
  HttpResponse up{http::status::ok, 11};
  up.set(http::field::content_type, "application/json");
  up.set(http::field::transfer_encoding, "chunked");
  up.set(http::field::connection, "keep-alive");
  up.body() = "{}";
  net::Response res = relay_response(std::move(up), false);
  res.headers.emplace_back("x-sluice-pool", "p");
  std::string head;
  net::serialize_response_head(res, 11, false, false, head);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-sluice-pool: p\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(res.body, "{}");
}

// HEAD: no body upstream, the Content-Length a GET would have had is relayed.
TEST(HttpHead, RelayedHeadKeepsTheUpstreamLength) {
  HttpResponse up{http::status::ok, 11};
  up.set(http::field::content_length, "1234");
  net::Response res = relay_response(std::move(up), true);
  std::string head;
  net::serialize_response_head(res, 11, true, true, head);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
}

}  // namespace
}  // namespace sluice::gateway
