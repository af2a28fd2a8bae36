#include "cli/client_http.h"

#include <gtest/gtest.h>

#include "fake_server.h"

namespace sluice::cli {
namespace {

using nlohmann::json;
using testing::FakeServer;

TEST(ClientHttp, NormalizesServerUrls) {
  EXPECT_EQ(normalize_server_url("127.0.0.1:7070").value, "http://127.0.0.1:7070");
  EXPECT_EQ(normalize_server_url(" http://h:1/ ").value, "http://h:1");
  EXPECT_EQ(normalize_server_url("https://h").value, "https://h");
  auto bad = normalize_server_url("ftp://h");
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.failure.exit_code, 2);
  EXPECT_FALSE(normalize_server_url("http://h:1/prefix").ok);
  EXPECT_FALSE(normalize_server_url("").ok);
}

TEST(ClientHttp, UrlEncodeKeepsUnreservedCharacters) {
  EXPECT_EQ(url_encode("pending,running"), "pending%2Crunning");
  EXPECT_EQ(url_encode("team-a_1.x~"), "team-a_1.x~");
  EXPECT_EQ(url_encode("a b/c"), "a%20b%2Fc");
}

TEST(ClientHttp, SendsTheBearerTokenAndParsesJson) {
  FakeServer fake;
  fake.get("/v1/queues", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"queues":[]})", "application/json");
  });
  fake.start();
  HttpClient http({fake.url(), "s3cret"});
  auto r = http.call_json("GET", "/v1/queues");
  ASSERT_TRUE(r.ok) << r.failure.message;
  EXPECT_EQ(r.value, json::parse(R"({"queues":[]})"));
  EXPECT_EQ(fake.last().authorization, "Bearer s3cret");

  HttpClient anonymous({fake.url(), ""});
  ASSERT_TRUE(anonymous.call_json("GET", "/v1/queues").ok);
  EXPECT_EQ(fake.last().authorization, "");  // no header without a token
}

TEST(ClientHttp, ServerErrorsCarryStatusMessageAndDetails) {
  FakeServer fake;
  fake.post("/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(
        R"({"error": "unknown queue \"trian\" in namespace \"nlp\"", "details": ["known queues: train, infer"]})",
        "application/json");
  });
  fake.start();
  auto r = HttpClient({fake.url(), ""}).call_json("POST", "/v1/jobs", "{}");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.failure.exit_code, 1);
  EXPECT_EQ(r.failure.message,
            "error: HTTP 404 Not Found: unknown queue \"trian\" in namespace \"nlp\"\n"
            "  known queues: train, infer");
}

TEST(ClientHttp, ADetailThatRepeatsTheErrorIsPrintedOnce) {
  HttpReply reply{400, R"({"error": "x.yaml:3: bad", "details": ["x.yaml:3: bad", "more"]})", "",
                  ""};
  EXPECT_EQ(describe_http_error(reply, "http://h").message,
            "error: HTTP 400 Bad Request: x.yaml:3: bad\n  more");
}

TEST(ClientHttp, TooManyRequestsMentionsRetryAfter) {
  FakeServer fake;
  fake.post("/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
    res.status = 429;
    res.set_header("Retry-After", "30");
    res.set_content(
        R"J({"error": "queue team-a holds 1000 pending jobs (its cap)", "details": []})J",
        "application/json");
  });
  fake.start();
  auto r = HttpClient({fake.url(), ""}).call("POST", "/v1/jobs", "{}");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.failure.exit_code, 1);
  EXPECT_EQ(r.failure.message,
            "error: HTTP 429 Too Many Requests: queue team-a holds 1000 pending jobs (its cap)\n"
            "  the server is shedding load (a pending cap is full); retry after 30 s "
            "(Retry-After)");
}

TEST(ClientHttp, NonJsonErrorsAndRepliesAreReportedAsText) {
  FakeServer fake;
  fake.get("/boom", [](const httplib::Request&, httplib::Response& res) {
    res.status = 502;
    res.set_content("<html>bad gateway</html>\n", "text/html");
  });
  fake.get("/text", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("not json", "text/plain");
  });
  fake.get("/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
    res.status = 401;
    res.set_content(R"({"error": "missing bearer token"})", "application/json");
  });
  fake.start();
  HttpClient http({fake.url(), ""});
  EXPECT_EQ(http.call("GET", "/boom").failure.message,
            "error: HTTP 502 Bad Gateway: <html>bad gateway</html>");
  auto text = http.call_json("GET", "/text");
  ASSERT_FALSE(text.ok);
  EXPECT_EQ(text.failure.message, "error: GET /text: the server's reply is not JSON: not json");
  EXPECT_EQ(http.call("GET", "/v1/nodes").failure.message,
            "error: HTTP 401 Unauthorized: missing bearer token\n  " + fake.url() +
                " wants a token: set --token or SLUICE_TOKEN");
  // request() itself returns any status as a reply.
  auto raw = http.request("GET", "/boom");
  ASSERT_TRUE(raw.ok);
  EXPECT_EQ(raw.value.status, 502);
}

TEST(ClientHttp, ConnectionRefusedIsExitCodeTwoWithAHint) {
  std::string url;
  {
    FakeServer fake;  // a port that was just free; closed again when the server stops
    url = fake.url();
  }
  auto r = HttpClient({url, ""}).call_json("GET", "/v1/jobs");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.failure.exit_code, 2);
  EXPECT_EQ(r.failure.message, "error: cannot reach sluice server at " + url +
                                   " (is `sluice serve` running? set --server or SLUICE_SERVER)");
}

// Replicas (docs/ha.md): a standby's 503 not_leader and an unreachable server are skipped, the
// leader answers, and the next request goes to the leader first.
TEST(ClientHttp, SeveralServersFollowTheLeader) {
  FakeServer standby, leader, gone;
  standby.get("/v1/queues", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"error":"standby","code":"not_leader","leader":""})", "application/json");
  });
  leader.get("/v1/queues", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"queues":[]})", "application/json");
  });
  standby.start();
  leader.start();
  gone.stop();  // its port refuses connections
  HttpClient http({gone.url() + "," + standby.url() + "," + leader.url(), ""});
  auto r = http.call_json("GET", "/v1/queues");
  ASSERT_TRUE(r.ok) << r.failure.message;
  EXPECT_EQ(standby.seen().size(), 1u);  // asked once, answered "not the leader"
  ASSERT_TRUE(http.call_json("GET", "/v1/queues").ok);
  EXPECT_EQ(standby.seen().size(), 1u);  // not asked again: the leader first
  EXPECT_EQ(leader.seen().size(), 2u);
  // Only standbys: the last standby's answer, as an error with its message.
  HttpClient none({standby.url() + "," + standby.url(), ""});
  auto refused = none.call_json("GET", "/v1/queues");
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.failure.message.find("HTTP 503"), std::string::npos) << refused.failure.message;
}

// A frozen leader holds connections without answering: the client asks every server's /readyz
// (1 s) first and goes to the one that is ready, or to the leader a standby names, instead of
// waiting out its read timeout on the first server in the list.
TEST(ClientHttp, SeveralServersSkipAFrozenLeader) {
  FakeServer frozen, standby, leader;
  auto hang = [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(3));  // past the 1 s probe, then answers
    res.set_content(R"({"queues":[]})", "application/json");
  };
  frozen.get("/readyz", hang);
  frozen.get("/v1/queues", hang);
  standby.get("/readyz", [&leader](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_header("Sluice-Leader", leader.url());
  });
  leader.get("/readyz", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  leader.get("/v1/queues", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"queues":[]})", "application/json");
  });
  frozen.start();
  standby.start();
  leader.start();
  // The standby names the leader: the leader answers, the frozen server is never sent the call.
  HttpClient http({frozen.url() + "," + standby.url() + "," + leader.url(), ""});
  auto r = http.call_json("GET", "/v1/queues");
  ASSERT_TRUE(r.ok) << r.failure.message;
  EXPECT_EQ(leader.last().path, "/v1/queues");
  for (const auto& s : frozen.seen()) EXPECT_EQ(s.path, "/readyz");
  ASSERT_EQ(standby.seen().size(), 1u);
  EXPECT_EQ(standby.seen()[0].path, "/readyz");
  // The probe runs once per client: the next call goes straight to the leader.
  ASSERT_TRUE(http.call_json("GET", "/v1/queues").ok);
  EXPECT_EQ(frozen.seen().size(), 1u);
  EXPECT_EQ(standby.seen().size(), 1u);
}

}  // namespace
}  // namespace sluice::cli
