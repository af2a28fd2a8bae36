// A webhook provisioner's call (src/server/provisioner_webhook.cc) against a loopback stand-in:
// the POST carries the call's JSON body and the bearer token; 2xx is ok, another status failed
// with the status and the answer's tail, no answer within the call's timeout a timeout, a
// refused connection failed; the server stopping cancels a call in flight.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "server/provisioner.h"

namespace sluice::server {
namespace provisioner_webhook_test {  // its own namespace: the unit tests build in unity batches
namespace {

// Accepts one connection, reads one request (head and Content-Length body), then answers
// `answer` verbatim, or (empty `answer`) holds the connection until the client closes it.
class StandIn {
 public:
  explicit StandIn(std::string answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      ADD_FAILURE() << "cannot listen on loopback";
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~StandIn() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  const std::string& request() const { return request_; }  // after the call returned

 private:
  // Waits for `fd` to be readable, polling stop_ (a bounded wait each time).
  bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    while (!stop_)
      if (::poll(&p, 1, 20) > 0) return true;
    return false;
  }
  void serve() {
    if (!readable(fd_)) return;
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    size_t want = std::string::npos;
    while (readable(c)) {
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      request_.append(buf, static_cast<size_t>(n));
      const size_t head = request_.find("\r\n\r\n");
      if (head != std::string::npos && want == std::string::npos) {
        const size_t cl = request_.find("Content-Length: ");
        want = head + 4 + (cl == std::string::npos ? 0 : std::stoul(request_.substr(cl + 16)));
      }
      if (request_.size() >= want) break;
    }
    if (!answer_.empty()) {
      (void)!::write(c, answer_.data(), answer_.size());
    } else {
      while (readable(c) && ::read(c, buf, sizeof buf) > 0) {
      }
    }
    ::close(c);
  }

  std::string answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::string request_;
  std::thread thread_;
};

std::string reply(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

struct WebhookTest : ::testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("sluice-hook-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  ProvisionCall call_to(const std::string& url, TimeNs timeout = 20 * kNsPerSec) {
    ProvisionCall c;
    c.pool_name = "spot";
    c.node = "sp-0";
    c.op = "create";
    c.url = url;
    c.body = {{"op", "create"}, {"pool", "spot"}, {"node", "sp-0"}, {"server", "http://s:1"}};
    c.timeout_ns = timeout;
    return c;
  }
  std::string log() const { return (dir / "call.log").string(); }
  std::filesystem::path dir;
};

TEST_F(WebhookTest, ThePostCarriesTheBodyAndTheTokenAndA2xxIsOk) {
  StandIn hook(reply(201, "{\"instance\": \"i-123\"}\n"));
  ProvisionCall c = call_to(hook.url("/v1/provision?zone=a"));
  c.token_file = (dir / "token").string();
  std::ofstream(c.token_file) << "s3cret-token\n";
  ProvisionResult r = run_provision_call(c, log());  // dispatched on the URL
  EXPECT_TRUE(r.ok) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.http_status, 201);
  EXPECT_EQ(r.exit_code, -1);  // no process
  EXPECT_EQ(r.output, "HTTP 201: {\"instance\": \"i-123\"}");
  const std::string& req = hook.request();
  EXPECT_EQ(req.rfind("POST /v1/provision?zone=a HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("Authorization: Bearer s3cret-token\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("Content-Type: application/json"), std::string::npos) << req;
  const auto body = nlohmann::json::parse(req.substr(req.find("\r\n\r\n") + 4));
  EXPECT_EQ(body, c.body);
  // The answer is in the call's log; the token is not (in neither).
  std::ifstream in(log());
  const std::string logged((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(logged.find("i-123"), std::string::npos);
  EXPECT_EQ(logged.find("s3cret"), std::string::npos);
  EXPECT_EQ(r.output.find("s3cret"), std::string::npos);
}

TEST_F(WebhookTest, AnotherStatusFailsWithTheStatusAndTheTailOfTheAnswer) {
  StandIn hook(reply(500, std::string(5000, 'x') + "no capacity in zone a\n"));
  ProvisionResult r = run_webhook_call(call_to(hook.url("/p")), log());
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.http_status, 500);
  EXPECT_EQ(r.output.rfind("HTTP 500: ...", 0), 0u) << r.output.substr(0, 40);
  EXPECT_LT(r.output.size(), 2100u);  // the tail, not the whole answer
  EXPECT_NE(r.output.find("no capacity in zone a"), std::string::npos);
}

TEST_F(WebhookTest, NoAnswerWithinTheTimeoutIsATimeout) {
  StandIn hook("");  // reads the request, never answers
  ProvisionResult r = run_webhook_call(call_to(hook.url("/p"), kNsPerSec / 5), log());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.http_status, 0);
  // The client's read deadline or the watchdog's, whichever fires first: both say so.
  EXPECT_NE(r.output.find("no answer within"), std::string::npos) << r.output;
}

TEST_F(WebhookTest, ARefusedConnectionOrAMissingTokenFails) {
  int port = 0;
  {
    StandIn gone(reply(200, ""));
    port = std::stoi(gone.url("").substr(17));
    run_webhook_call(call_to(gone.url("/")), log());  // lets it end
  }
  ProvisionResult r =
      run_webhook_call(call_to("http://127.0.0.1:" + std::to_string(port) + "/"), log());
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.output.empty());
  ProvisionCall c = call_to("http://127.0.0.1:" + std::to_string(port) + "/");
  c.token_file = (dir / "absent").string();
  r = run_webhook_call(c, log());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("cannot read bearerTokenFile"), std::string::npos) << r.output;
  std::ofstream(dir / "blank") << "\n";
  c.token_file = (dir / "blank").string();
  EXPECT_NE(run_webhook_call(c, log()).output.find("holds no token"), std::string::npos);
}

TEST_F(WebhookTest, StoppingTheServerCancelsACallInFlight) {
  StandIn hook("");
  std::atomic<bool> stopping{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stopping = true;
  });
  ProvisionResult r = run_webhook_call(call_to(hook.url("/p"), 600 * kNsPerSec), log(), &stopping);
  stopper.join();
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("the server is stopping"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace provisioner_webhook_test
}  // namespace sluice::server
