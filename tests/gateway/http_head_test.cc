// The heads the gateway writes by hand (gateway/http_head.h).
#include <gtest/gtest.h>

#include <boost/beast/http.hpp>

#include "gateway/http_head.h"

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
  HttpRequest req{http::verb::post, "/v1/completions?x=1", 11};
  req.set(http::field::host, "gw");
  req.set(http::field::transfer_encoding, "chunked");
  req.set(http::field::connection, "close");
  req.set("x-api-key", "k");
  req.body() = "hello";
  std::string head;
  serialize_request_head(req, "10.0.0.1", head);
  EXPECT_EQ(head,
            "POST /v1/completions?x=1 HTTP/1.1\r\nHost: gw\r\nx-api-key: k\r\n"
            "x-forwarded-for: 10.0.0.1\r\ncontent-length: 5\r\n\r\n");
  http::request_parser<http::string_body> p;
  p.eager(true);  // header and body in one put
  boost::beast::error_code ec;
  const std::string wire = head + req.body();
  EXPECT_EQ(p.put(boost::asio::buffer(wire), ec), wire.size());
  EXPECT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_done());
  EXPECT_EQ(p.get().body(), "hello");
}

TEST(HttpHead, ResponseHead) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::transfer_encoding, "chunked");
  res.body() = "{}";
  std::string head;
  serialize_response_head(res, 11, false, false, "p", head);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 2\r\n"
            "x-sluice-pool: p\r\nconnection: close\r\n\r\n");
}

}  // namespace
}  // namespace sluice::gateway
