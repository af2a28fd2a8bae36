#include "server/election.h"

#include <mutex>
#include <thread>

#include "net/http_server.h"
#include "proto/protocol.h"
#include "server/leader_probe.h"

namespace sluice::server {

namespace {

// How often a standby reads the leader key (and probes the leader).
constexpr int kPollMs = 100;

// The standby's answers; the leader's URL changes between campaign rounds.
class StandbyHttp {
 public:
  void set_leader(std::string url) {
    std::lock_guard lk(mu_);
    leader_ = std::move(url);
  }
  std::string leader() const {
    std::lock_guard lk(mu_);
    return leader_;
  }

  void routes(net::Server& h) {
    const net::RouteOptions inline_route{.run_inline = true};
    h.Get(
        "/healthz",
        [](const net::Request&, net::Response& res) { res.set_content("ok\n", "text/plain"); },
        inline_route);
    h.Get(
        "/readyz",
        [this](const net::Request&, net::Response& res) {
          const std::string l = leader();
          res.status = 503;
          if (!l.empty()) res.set_header("Sluice-Leader", l);  // agents' leader watch reads it
          res.set_content("not ready: standby replica; the leader is " +
                              (l.empty() ? std::string("not known yet") : l) + "\n",
                          "text/plain");
        },
        inline_route);
    auto refuse = [this](const net::Request&, net::Response& res) {
      const std::string l = leader();
      res.status = 503;
      res.set_header("Retry-After", "1");
      nlohmann::json body{{"error", "this sluice server is a standby replica; the leader is " +
                                        (l.empty() ? std::string("not known yet") : l)},
                          {"details", {"send requests to the leader (docs/ha.md)"}},
                          {"code", "not_leader"},
                          {"leader", l}};
      res.set_content(proto::dump_json(body), "application/json");
    };
    h.Get("*", refuse, inline_route);
    h.Post("*", refuse, inline_route);
    h.Put("*", refuse, inline_route);
    h.Delete("*", refuse, inline_route);
  }

 private:
  mutable std::mutex mu_;
  std::string leader_;
};

// Why the leader named by the key (under `lease`) is gone and its lease should be revoked now,
// instead of waiting out its TTL; "" while it is not (docs/ha.md, "Failover"):
//  - the key names this replica's own URL: a previous run of it that died (this one holds the
//    port now);
//  - its port refuses connections: its process died;
//  - its API has been silent for silent-leader-ms and etcd says its lease missed a renewal: it is
//    frozen, its machine died, or it is cut off from etcd too. A standby cut off from a leader
//    that still renews its lease (a partition between the two only) deposes nobody.
std::string leader_gone(EtcdStore& store, LeaderProbe& probe, const std::string& me,
                        const std::string& leader, int64_t lease) {
  if (!store.options().probe_leader || lease == 0) return "";
  if (leader == me) return "a previous run of this replica";
  const LeaderState state = probe.check(lease, leader);
  if (state == LeaderState::Refused) return "its port refuses connections";
  if (state != LeaderState::Silent) return "";
  auto left = store.lease_left(lease);
  if (!left || !missed_renewal(left->left_s, left->granted_s)) return "";
  return "its API has not answered for " + std::to_string(probe.silent_ms()) +
         " ms and its lease missed a renewal: " + std::to_string(left->left_s) + " of " +
         std::to_string(left->granted_s) + " s left";
}

}  // namespace

Result<Elected> wait_for_leadership(std::unique_ptr<EtcdStore> store, ElectionOptions o) {
  StandbyHttp standby;
  net::ServerOptions ho;
  ho.name = "standby";
  ho.workers = 1;
  auto http = std::make_unique<net::Server>(ho);
  standby.routes(*http);
  auto bound = http->listen(o.host, o.port);
  if (!bound) return Error{bound.error()};
  http->start();
  const std::string me =
      o.advertise.empty() ? "http://" + o.host + ":" + std::to_string(*bound) : o.advertise;
  std::string said;  // the last state logged: one line per change
  auto say = [&](const std::string& line) {
    if (line != said && o.log) o.log(line);
    said = line;
  };
  LeaderProbe probe(store->options().silent_leader_ms);
  std::string took_over;  // the lease this replica revoked last round, and why
  // Bounded by stop_requested(): a standby waits as long as another replica leads.
  while (!o.stop_requested || !o.stop_requested()) {
    std::string leader;
    int64_t lease = 0;
    auto won = store->campaign(me, &leader, &lease);
    if (won && *won) {
      standby.set_leader(me);  // until the port is the leader's: it leads, ask again
      http->stop();            // frees the port for the leader's API
      if (o.log) o.log("this replica (" + me + ") leads now");
      return Elected{std::move(store), *bound, took_over};
    }
    took_over.clear();
    if (!won) {
      standby.set_leader("");
      say("standby: cannot campaign: " + won.error() + "; retrying");
    } else {
      standby.set_leader(leader);
      say("standby: the leader is " + leader);
      const std::string gone = leader_gone(*store, probe, me, leader, lease);
      if (!gone.empty()) {
        auto revoked = store->revoke(lease);
        if (o.log)
          o.log("standby: the leader " + leader + " is gone (" + gone + "): " +
                (revoked ? "revoked its lease" : "cannot revoke its lease: " + revoked.error()));
        if (revoked) {
          took_over = "revoked the lease of " + leader + " (" + gone + ")";
          continue;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  http->stop();
  return Elected{nullptr, *bound};
}

}  // namespace sluice::server
