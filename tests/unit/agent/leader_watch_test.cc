// An agent with several server URLs whose leader goes silent (frozen, or its machine died:
// nothing refuses the connection) goes to the leader the other replicas name, without waiting
// out its read timeout (leader_watch.h); witness_leader() reads the replicas' answers.
#include "agent/leader_watch.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>

#include "agent/agent.h"
#include "loopback_server.h"
#include "test_util.h"

namespace sluice::agent {
namespace leader_watch_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing::TempDir;
using testing::wait_until;

// A replica on a free loopback port. As a leader: /readyz 200, registers and long-polls agents
// (until freeze(): then every request hangs, as on a frozen process). As a standby: /readyz 503
// naming `leader` in Sluice-Leader, every other request 503 not_leader (election.cc).
class Replica : public testing::LoopbackServer {
 public:
  explicit Replica(bool leads, std::string leader = "") : leads_(leads), leader_(leader) {
    http_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      if (hang()) return;
      if (leads_) return res.set_content("ready\n", "text/plain");
      res.status = 503;
      if (!leader_.empty()) res.set_header("Sluice-Leader", leader_);
      res.set_content("not ready: standby replica\n", "text/plain");
    });
    http_.Post("/v1/agents/register", [this](const httplib::Request&, httplib::Response& res) {
      if (hang() || refuse(res)) return;
      {
        std::lock_guard lock(mu_);
        ++registers_;
      }
      proto::RegisterResponse resp;
      resp.heartbeat_ms = 200;
      res.set_content(nlohmann::json(resp).dump(), "application/json");
    });
    http_.Post(R"(/v1/agents/([^/]+)/sync)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (hang() || refuse(res)) return;
                 const auto sync = nlohmann::json::parse(req.body).get<proto::SyncRequest>();
                 std::unique_lock lock(mu_);
                 cv_.wait_for(lock, std::chrono::milliseconds(sync.wait_ms), [&] { return quit_; });
                 proto::SyncResponse resp;
                 resp.heartbeat_ms = 200;
                 res.set_content(nlohmann::json(resp).dump(), "application/json");
               });
    listen();
  }
  ~Replica() { shutdown(); }
  void freeze() {
    std::lock_guard lock(mu_);
    frozen_ = true;
  }
  int registers() {
    std::lock_guard lock(mu_);
    return registers_;
  }

 private:
  // Frozen: no answer until the test ends (the agent must not wait for one).
  bool hang() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return quit_ || !frozen_; });
    return quit_;
  }
  bool refuse(httplib::Response& res) {
    if (leads_) return false;
    res.status = 503;
    res.set_content(nlohmann::json{{"code", "not_leader"}, {"leader", leader_}}.dump(),
                    "application/json");
    return true;
  }

  const bool leads_;
  const std::string leader_;
  bool frozen_ = false;
  int registers_ = 0;
};

TEST(WitnessLeader, GoesWhereAReplicaLeadsOrAStandbyNamesAnotherServer) {
  Replica ready(true);
  Replica loading(false);  // a replica that just won and loads its state: 503, names nobody
  Replica names_loading(false, loading.url());
  Replica names_ready(false, ready.url());
  Replica names_elsewhere(false, "http://10.9.9.9:7070");
  const std::string silent = "http://127.0.0.1:1";  // never asked: it is the current server
  std::string closed;
  {
    Replica gone(true);
    closed = gone.url();  // its port refuses once it is gone
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(witness_leader(V{silent, names_loading.url(), loading.url()}, 0, 300), 2u);
  EXPECT_EQ(witness_leader(V{silent, ready.url()}, 0, 300), 1u);
  EXPECT_EQ(witness_leader(V{names_ready.url(), silent, ready.url()}, 1, 300), 2u);
  // Every answer names the current server (it still leads: it is slow), or a URL not in the
  // list, or nobody answers: stay.
  Replica names_silent(false, silent);
  EXPECT_EQ(witness_leader(V{silent, names_silent.url()}, 0, 300), std::nullopt);
  EXPECT_EQ(witness_leader(V{silent, names_elsewhere.url(), loading.url()}, 0, 300), std::nullopt);
  EXPECT_EQ(witness_leader(V{silent, closed}, 0, 300), std::nullopt);
  EXPECT_EQ(witness_leader(V{ready.url()}, 0, 300), std::nullopt);
}

// The leader freezes in the middle of a long poll: the agent asks the standby, which names the
// new leader, and registers there (its log says why), long before its read timeout (3 s past
// the poll) would have sent it on.
TEST(LeaderWatch, AgentLeavesAFrozenLeaderForTheOneTheStandbyNames) {
  auto old_leader = std::make_unique<Replica>(true);
  Replica new_leader(true);
  Replica standby(false, new_leader.url());
  TempDir dir;
  std::mutex log_mu;
  std::vector<std::string> lines;
  AgentOptions o;
  o.server_url = old_leader->url() + "," + standby.url() + "," + new_leader.url();
  o.node = "n1";
  o.gpus_spec = "fake:1xH100";
  o.nvml.library = SLUICE_FAKE_NVML;
  o.state_dir = dir.path();
  o.heartbeat_ms = 200;
  o.tick_ms = 10;
  o.max_backoff_ms = 200;
  o.isolation.drop_privileges = 0;
  o.isolation.cgroups.mode = "off";
  o.log = [&](const std::string& line) {
    std::lock_guard lock(log_mu);
    lines.push_back(line);
  };
  auto agent = Agent::create(o);
  ASSERT_TRUE(agent) << agent.error();
  (*agent)->start();
  ASSERT_TRUE(wait_until([&] { return old_leader->registers() > 0; }));
  old_leader->freeze();
  ASSERT_TRUE(wait_until([&] { return new_leader.registers() > 0; }));
  std::string why;
  {
    std::lock_guard lock(log_mu);
    for (const auto& l : lines)
      if (l.find("leads now: going there") != std::string::npos) why = l;
  }
  EXPECT_NE(why.find(old_leader->url() + " has not answered"), std::string::npos) << why;
  EXPECT_NE(why.find(new_leader.url() + " leads now"), std::string::npos) << why;
  (*agent)->stop();
  old_leader.reset();  // its hanging requests end with the test
}

}  // namespace
}  // namespace leader_watch_test
}  // namespace sluice::agent
