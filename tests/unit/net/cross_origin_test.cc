// net::cross_origin: whether a browser sent the request from another origin's page.
#include <gtest/gtest.h>

#include "net/message.h"

namespace sluice::net::cross_origin_test {

Request with(std::string host, std::optional<std::string> origin) {
  Request r;
  r.method = "POST";
  if (!host.empty()) r.headers.emplace_back("Host", std::move(host));
  if (origin) r.headers.emplace_back("Origin", std::move(*origin));
  return r;
}

TEST(CrossOrigin, NoOriginIsNotABrowserPageOfAnotherSite) {
  EXPECT_FALSE(cross_origin(with("127.0.0.1:7070", std::nullopt)));
  EXPECT_FALSE(cross_origin(with("", std::nullopt)));
}

struct Case {
  const char* host;
  const char* origin;
  bool cross;
};

TEST(CrossOrigin, OnlyTheServersOwnHostAndPortInAnyCaseIsTheSameOrigin) {
  const Case cases[] = {
      {"127.0.0.1:7070", "http://127.0.0.1:7070", false},
      {"Sluice.Example:7070", "HTTP://sluice.example:7070", false},
      {"sluice.example", "http://sluice.example:80", false},  // the scheme's default port
      {"sluice.example:443", "https://sluice.example", false},
      {"[::1]:7070", "http://[::1]:7070", false},
      {"127.0.0.1:7070", "http://evil.example", true},
      {"127.0.0.1:7070", "http://127.0.0.1:8080", true},
      {"127.0.0.1:7070", "null", true},  // a sandboxed page, a file
      {"127.0.0.1:7070", "file://", true},
      {"127.0.0.1:7070", "http://127.0.0.1:7070/path", true},
      {"127.0.0.1:7070", "", true},
      {"", "http://127.0.0.1:7070", true},  // no Host to be the same as
      {"[::1]", "http://[::1]:7070", true},
  };
  for (const Case& c : cases)
    EXPECT_EQ(cross_origin(with(c.host, std::string(c.origin))), c.cross)
        << "Host " << c.host << ", Origin " << c.origin;
}

}  // namespace sluice::net::cross_origin_test
