// End to end: a real Agent against a small in-test server that speaks the agent protocol.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <csignal>
#include <deque>

#include "loopback_server.h"
#include "secret/secret.h"
#include "test_util.h"

namespace sluice::agent {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::TempDir;
using testing::wait_until;

const std::string kJoinToken = "join-token-0123456789";

// The server side of docs/api.md "Agent protocol", scripted by the test.
class FakeServer : public testing::LoopbackServer {
 public:
  FakeServer() {
    http_.Post("/v1/agents/register", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      auth_.push_back(req.get_header_value("Authorization"));
      // A node the server has no credential for joins with the join token (docs/api.md).
      if (!joined_ && auth_.back() != "Bearer " + kJoinToken) {
        res.status = 401;
        res.set_content(R"({"error":"no credential on record","code":"no-node-credential"})",
                        "application/json");
        return;
      }
      joined_ = true;
      registers_.push_back(nlohmann::json::parse(req.body).get<proto::RegisterRequest>());
      registered_ = true;
      agent_id_ = registers_.back().agent_id;
      proto::RegisterResponse resp;
      resp.node = registers_.back().node;
      resp.heartbeat_ms = 200;
      resp.stop = std::exchange(register_stops_, {});
      res.set_content(nlohmann::json(resp).dump(), "application/json");
    });
    http_.Post(
        R"(/v1/agents/([^/]+)/sync)", [this](const httplib::Request& req, httplib::Response& res) {
          auto sync = nlohmann::json::parse(req.body).get<proto::SyncRequest>();
          std::unique_lock lock(mu_);
          syncs_.push_back(sync);
          if (!registered_) {
            res.status = 404;
            res.set_content(R"({"error":"unknown agent"})", "application/json");
            return;
          }
          if (!sync.exits.empty() && fail_exit_syncs_ > 0) {
            --fail_exit_syncs_;
            res.status = 500;
            res.set_content(R"({"error":"disk full"})", "application/json");
            return;
          }
          // Long poll: hold the reply until there are orders (bounded by wait_ms and by quit).
          cv_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(sync.wait_ms, 2000)),
                       [&] { return quit_ || !orders_.assign.empty() || !orders_.stop.empty(); });
          // A poll of a previous agent process (cut short when it stopped) gets no orders: they
          // are for the agent registered now.
          proto::SyncResponse resp;
          if (sync.agent_id == agent_id_) resp = std::exchange(orders_, {});
          resp.heartbeat_ms = 200;
          res.set_content(nlohmann::json(resp).dump(), "application/json");
        });
    listen();
  }
  ~FakeServer() { shutdown(); }
  void assign(proto::Assignment a) {
    {
      std::lock_guard lock(mu_);
      orders_.assign.push_back(std::move(a));
    }
    cv_.notify_all();
  }
  void stop(proto::StopOrder s) {
    {
      std::lock_guard lock(mu_);
      orders_.stop.push_back(std::move(s));
    }
    cv_.notify_all();
  }
  void forget() {  // as if the server restarted: the next sync gets 404
    std::lock_guard lock(mu_);
    registered_ = false;
  }
  void fail_exit_syncs(int n) {
    std::lock_guard lock(mu_);
    fail_exit_syncs_ = n;
  }
  std::vector<proto::RegisterRequest> registers() {
    std::lock_guard lock(mu_);
    return registers_;
  }
  std::vector<std::string> auth() {
    std::lock_guard lock(mu_);
    return auth_;
  }
  std::vector<proto::SyncRequest> syncs() {
    std::lock_guard lock(mu_);
    return syncs_;
  }
  // Syncs that carried an exit of `job`.
  std::vector<proto::PodExit> exits_of(uint64_t job) {
    std::vector<proto::PodExit> out;
    for (const auto& s : syncs()) {
      for (const auto& e : s.exits) {
        if (e.job == job) out.push_back(e);
      }
    }
    return out;
  }
  bool saw_started(uint64_t job) {
    for (const auto& s : syncs()) {
      for (const auto& p : s.started) {
        if (p.job == job) return true;
      }
    }
    return false;
  }
  bool saw_running(uint64_t job) {
    auto s = syncs();
    if (s.empty()) return false;
    for (const auto& p : s.back().running) {
      if (p.job == job && p.pid > 0) return true;
    }
    return false;
  }

 private:
  bool registered_ = false;
  bool joined_ = false;
  std::string agent_id_;
  int fail_exit_syncs_ = 0;
  proto::SyncResponse orders_;
  std::vector<proto::StopOrder> register_stops_;
  std::vector<proto::RegisterRequest> registers_;
  std::vector<std::string> auth_;
  std::vector<proto::SyncRequest> syncs_;
};

class AgentTest : public ::testing::Test {
 protected:
  std::unique_ptr<Agent> make(bool drain = false, const std::string& gpus = "fake:2xH100") {
    AgentOptions o;
    o.server_url = server_.url();
    o.node = "n1";
    o.gpus_spec = gpus;
    o.nvml.library = SLUICE_FAKE_NVML;
    o.state_dir = dir_.path();
    o.join_token = kJoinToken;
    o.heartbeat_ms = 200;
    o.tick_ms = 10;
    o.max_backoff_ms = 200;
    o.drain = drain;
    o.drain_grace_ms = 5000;
    // The protocol, not isolation (isolation_test.cc): pods write into the test's 0700 dir.
    o.isolation.drop_privileges = 0;
    o.isolation.cgroups.mode = "off";
    if (!std::getenv("SLUICE_AGENT_TEST_LOG")) o.log = [](const std::string&) {};  // quiet
    auto a = Agent::create(o);
    EXPECT_TRUE(a) << (a ? "" : a.error());
    return a ? std::move(*a) : nullptr;
  }
  static proto::Assignment sh(uint64_t job, const std::string& script,
                              std::vector<int32_t> gpus = {0}) {
    proto::Assignment a;
    a.job = job;
    a.job_name = "j" + std::to_string(job);
    a.job_namespace = "default";
    a.peers = {{0, "n1", ""}};
    a.command = {"/bin/sh", "-c", script};
    a.gpus = std::move(gpus);
    return a;
  }
  static constexpr const char* kSleeper = "trap 'exit 0' TERM; while :; do sleep 0.05; done";

  FakeServer server_;
  TempDir dir_;
};

TEST_F(AgentTest, RegistersRunsAPodAndReportsItsExit) {
  auto agent = make();
  ASSERT_TRUE(agent);
  agent->start();
  ASSERT_TRUE(wait_until([&] { return !server_.registers().empty(); }));
  auto reg = server_.registers()[0];
  EXPECT_EQ(reg.node, "n1");
  EXPECT_EQ(reg.address, agent->address());
  ASSERT_EQ(reg.gpus.size(), 2u);
  EXPECT_EQ(reg.gpus[1].uuid, "fake-n1-1");
  EXPECT_FALSE(reg.agent_id.empty());
  EXPECT_GT(reg.cpu_milli, 0);
  // First as the node (its credential, refused: the server has none), then with the join
  // token, bringing the credential the agent made in its state directory (0600).
  const std::string credential = read_file(dir_.path() + "/node-credential");
  ASSERT_GE(credential.size(), 32u);
  EXPECT_EQ(reg.credential + "\n", credential);
  ASSERT_GE(server_.auth().size(), 2u);
  EXPECT_EQ(server_.auth()[0], "Bearer " + reg.credential);
  EXPECT_EQ(server_.auth()[1], "Bearer " + kJoinToken);
  struct stat st {};
  ASSERT_EQ(::stat((dir_.path() + "/node-credential").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  server_.assign(sh(7, "echo hello from $SLUICE_NODE; exit 3"));
  ASSERT_TRUE(wait_until([&] { return !server_.exits_of(7).empty(); }));
  auto exit = server_.exits_of(7)[0];
  EXPECT_EQ(exit.reason, "exited");
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_TRUE(server_.saw_started(7));
  // Exits go out until a sync carrying them succeeds, then stop.
  ASSERT_TRUE(wait_until([&] { return agent->status().unacked_exits == 0; }));

  // The agent's own endpoints: health, logs (what `sluice logs` proxies), checkpoint.
  httplib::Client cli(agent->address());
  auto health = cli.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->body, "ok");
  auto anonymous = cli.Get("/v1/logs/7/0");  // logs and pods need the node's credential
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto pods = cli.Get("/v1/pods");
  ASSERT_TRUE(pods);
  EXPECT_EQ(pods->status, 401);
  const httplib::Headers node{{"Authorization", "Bearer " + reg.credential}};
  auto logs = cli.Get("/v1/logs/7/0", node);
  ASSERT_TRUE(logs);
  EXPECT_EQ(logs->status, 200);
  EXPECT_EQ(logs->body, "hello from n1\n");
  auto tail = cli.Get("/v1/logs/7/0?tail_bytes=3", node);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->body, "[... 11 bytes cut ...]\nn1\n");  // never cut silently
  auto missing = cli.Get("/v1/logs/8/0", node);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  agent->stop();
}

TEST_F(AgentTest, CheckpointEndpointReachesTheServer) {
  auto agent = make();
  agent->start();
  server_.assign(sh(9, kSleeper));
  ASSERT_TRUE(wait_until([&] { return server_.saw_running(9); }));
  httplib::Client cli(agent->address());
  // Only with the pod's own token ($SLUICE_CHECKPOINT_TOKEN): another pod's is refused.
  auto token = [&](uint64_t job) {
    const std::string key = read_file(dir_.path() + "/pod-token.key");
    return httplib::Headers{
        {"Authorization",
         "Bearer " + secret::hmac_sha256_hex(key.substr(0, key.size() - 1),
                                             "checkpoint/" + std::to_string(job) + "/0")}};
  };
  auto anonymous = cli.Post("/v1/checkpoint/9/0");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto others = cli.Post("/v1/checkpoint/9/0", token(10), "", "text/plain");
  ASSERT_TRUE(others);
  EXPECT_EQ(others->status, 401);
  auto ok = cli.Post("/v1/checkpoint/9/0", token(9), "", "text/plain");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto unknown = cli.Post("/v1/checkpoint/10/0", token(10), "", "text/plain");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  ASSERT_TRUE(wait_until([&] {
    for (const auto& s : server_.syncs()) {
      for (const auto& c : s.checkpoints) {
        if (c.job == 9) return true;
      }
    }
    return false;
  }));
  server_.stop({9, 0, "SIGTERM", 5000, "cancelled"});
  ASSERT_TRUE(wait_until([&] { return !server_.exits_of(9).empty(); }));
  EXPECT_EQ(server_.exits_of(9)[0].reason, "stopped");
}

TEST_F(AgentTest, RegistersAgainOn404AndReportsRunningPods) {
  auto agent = make();
  agent->start();
  server_.assign(sh(11, kSleeper));
  ASSERT_TRUE(wait_until([&] { return server_.saw_running(11); }));
  ASSERT_EQ(server_.registers().size(), 1u);
  server_.forget();
  ASSERT_TRUE(wait_until([&] { return server_.registers().size() == 2; }));
  auto again = server_.registers()[1];
  ASSERT_EQ(again.running.size(), 1u);  // the pod kept running across the server restart
  EXPECT_EQ(again.running[0].job, 11u);
  EXPECT_GT(again.running[0].pid, 0);
  // The server saw the register before the agent read the reply and counted it.
  EXPECT_TRUE(wait_until([&] { return agent->status().registrations == 2u; }));
  server_.stop({11, 0, "SIGTERM", 5000, "cancelled"});
  ASSERT_TRUE(wait_until([&] { return !server_.exits_of(11).empty(); }));
}

TEST_F(AgentTest, ResendsExitsUntilASyncSucceeds) {
  auto agent = make();
  agent->start();
  ASSERT_TRUE(wait_until([&] { return !server_.registers().empty(); }));
  server_.fail_exit_syncs(2);
  server_.assign(sh(12, "exit 0"));
  // Two syncs carrying the exit fail (500), the third succeeds; then it is not sent again.
  ASSERT_TRUE(wait_until(
      [&] { return server_.exits_of(12).size() >= 3 && agent->status().unacked_exits == 0; }));
  const size_t carried = server_.exits_of(12).size();
  EXPECT_EQ(carried, 3u);
  EXPECT_GE(agent->status().sync_errors, 2u);
  const size_t syncs = server_.syncs().size();
  ASSERT_TRUE(wait_until([&] { return server_.syncs().size() >= syncs + 2; }));
  EXPECT_EQ(server_.exits_of(12).size(), carried);
}

TEST_F(AgentTest, RestartedAgentAdoptsItsPods) {
  auto first = make();
  first->start();
  server_.assign(sh(13, kSleeper));
  ASSERT_TRUE(wait_until([&] { return server_.saw_running(13); }));
  const int64_t pid = server_.syncs().back().running[0].pid;
  first->stop();  // no drain: the pod keeps running
  first.reset();
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), 0), 0);
  auto second = make();
  second->start();
  ASSERT_TRUE(wait_until([&] { return server_.registers().size() == 2; }));
  auto reg = server_.registers()[1];
  ASSERT_EQ(reg.running.size(), 1u);
  EXPECT_EQ(reg.running[0].pid, pid);
  EXPECT_NE(reg.agent_id, server_.registers()[0].agent_id);
  server_.stop({13, 0, "TERM", 5000, "cancelled"});
  ASSERT_TRUE(wait_until([&] { return !server_.exits_of(13).empty(); }));
  EXPECT_EQ(server_.exits_of(13)[0].reason, "stopped");
}

TEST_F(AgentTest, DrainStopsPodsAndReportsTheirExits) {
  auto agent = make(/*drain=*/true);
  agent->start();
  server_.assign(sh(14, kSleeper));
  ASSERT_TRUE(wait_until([&] { return server_.saw_running(14); }));
  agent->stop();
  auto exits = server_.exits_of(14);
  ASSERT_FALSE(exits.empty());  // the last sync carried it
  EXPECT_EQ(exits[0].reason, "stopped");
  EXPECT_TRUE(agent->runner().running().empty());
}

TEST_F(AgentTest, BadAssignmentsFailToStart) {
  auto agent = make();
  agent->start();
  server_.assign(sh(15, "exit 0", {5}));  // the node has GPUs 0 and 1
  proto::Assignment missing = sh(16, "");
  missing.command = {"/no/such/binary"};
  server_.assign(missing);
  ASSERT_TRUE(
      wait_until([&] { return !server_.exits_of(15).empty() && !server_.exits_of(16).empty(); }));
  EXPECT_EQ(server_.exits_of(15)[0].reason, "start-failed");
  EXPECT_NE(server_.exits_of(15)[0].message.find("GPU 5 does not exist"), std::string::npos);
  EXPECT_EQ(server_.exits_of(16)[0].reason, "start-failed");
  // A stop order for a pod the agent does not run is answered with an exit.
  server_.stop({17, 0, "SIGTERM", 0, "cancelled"});
  ASSERT_TRUE(wait_until([&] { return !server_.exits_of(17).empty(); }));
}

TEST_F(AgentTest, SyncsCarryNvmlUtilisation) {
  ::setenv("SLUICE_FAKE_NVML_UTIL", "10,20,30,40", 1);
  auto agent = make(false, "auto");  // NVML, through tests/fake_nvml
  ASSERT_TRUE(agent);
  agent->start();
  ASSERT_TRUE(wait_until([&] {
    for (const auto& s : server_.syncs())
      if (s.gpu_utilization_pct == std::vector<int32_t>{10, 20, 30, 40}) return true;
    return false;
  }));
  EXPECT_EQ(server_.registers()[0].gpus.size(), 4u);
  ::unsetenv("SLUICE_FAKE_NVML_UTIL");
  agent->stop();
}

TEST_F(AgentTest, FakeGpusSendNoUtilisation) {
  auto agent = make();
  agent->start();
  ASSERT_TRUE(wait_until([&] { return !server_.syncs().empty(); }));
  EXPECT_TRUE(server_.syncs()[0].gpu_utilization_pct.empty());
}

TEST(AgentCreate, ReportsBadOptions) {
  TempDir dir;
  AgentOptions o;
  o.node = "n1";
  o.state_dir = dir.path();
  o.gpus_spec = "fake:8xH100:80";
  EXPECT_FALSE(Agent::create(o));
  o.gpus_spec = "fake:1xL4";
  o.listen = "nonsense";
  EXPECT_FALSE(Agent::create(o));
  o.listen = "127.0.0.1:0";
  o.node = "";
  EXPECT_FALSE(Agent::create(o));
  o.node = "n1";
  o.gpus_spec = "auto";
  o.nvml.library = "libnvidia-ml-missing.so.1";
  auto r = Agent::create(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("NVML not found"), std::string::npos);
}

}  // namespace
}  // namespace sluice::agent
