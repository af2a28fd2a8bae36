#pragma once
// A replica of `sluice serve --store etcd://...` before it leads (docs/ha.md): it campaigns for
// the leader key every 100 ms (revoking the lease of a leader whose process is gone:
// leader_probe.h) and meanwhile answers on its --listen address as a standby:
// /healthz 200, /readyz 503 ("standby; the leader is URL"), and every API request 503 with
// {"code": "not_leader", "leader": URL}, which the CLI and the agents take as "try the next
// server URL".
#include <functional>
#include <memory>
#include <string>

#include "server/etcd_store.h"

namespace sluice::server {

struct ElectionOptions {
  std::string host;
  int port = 0;           // 0: any free port; the leader serves on the same one
  std::string advertise;  // the URL others reach this replica at; "": http://HOST:PORT
  std::function<bool()> stop_requested;  // polled between rounds
  std::function<void(const std::string&)> log;
};

struct Elected {
  std::unique_ptr<EtcdStore> store;  // null: stop_requested() before this replica led
  int port = 0;                      // the port the standby listened on
  // How it took over when it revoked the previous leader's lease just before it won ("" when
  // the key was free): "revoked the lease of URL (why)", for the replica's log.
  std::string took_over;
};

// Blocks until this replica leads (the store holds the leader key and its lease) or a stop is
// requested. Errors: the port cannot be bound. etcd unreachable is logged and retried.
Result<Elected> wait_for_leadership(std::unique_ptr<EtcdStore> store, ElectionOptions options);

}  // namespace sluice::server
