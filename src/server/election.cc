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
  LeaderProbe probe;
  // Bounded by stop_requested(): a standby waits as long as another replica leads.
  while (!o.stop_requested || !o.stop_requested()) {
    std::string leader;
    int64_t lease = 0;
    auto won = store->campaign(me, &leader, &lease);
    if (won && *won) {
      standby.set_leader(me);  // until the port is the leader's: it leads, ask again
      http->stop();            // frees the port for the leader's API
      if (o.log) o.log("this replica (" + me + ") leads now");
      return Elected{std::move(store), *bound};
    }
    if (!won) {
      standby.set_leader("");
      say("standby: cannot campaign: " + won.error() + "; retrying");
    } else {
      standby.set_leader(leader);
      say("standby: the leader is " + leader);
      // The leader's process is gone: its port refuses connections, or the key names this
      // replica's own URL (a previous run of it that died: this one holds the port now). Its
      // lease goes now and this replica campaigns at once instead of waiting out the TTL.
      const char* gone = !store->options().probe_leader ? nullptr
                         : leader == me                 ? "a previous run of this replica"
                         : probe.gone(lease, leader)    ? "its port refuses connections"
                                                        : nullptr;
      if (gone && lease != 0) {
        auto revoked = store->revoke(lease);
        if (o.log)
          o.log("standby: the leader " + leader + " is gone (" + gone + "): " +
                (revoked ? "revoked its lease" : "cannot revoke its lease: " + revoked.error()));
        if (revoked) continue;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  http->stop();
  return Elected{nullptr, *bound};
}

}  // namespace sluice::server
