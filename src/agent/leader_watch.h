#pragma once
// Which server an agent with several URLs (replicas on etcd, docs/ha.md) talks to. After a
// failed request, Agent::follow_leader() goes where a standby names the leader, or to the next
// URL. And an agent whose server stops answering must not wait out its read timeout when
// another replica already leads: a frozen leader, or one whose machine died, refuses nothing,
// and a long poll to it would hang for its wait plus the read margin (3 s). While a request is
// overdue, the agent asks the other replicas who leads (Agent::watch_loop) and goes there at
// once when one of them names another server than the silent one. Both in leader_watch.cc.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "net/leader_witness.h"

namespace sluice::agent {

// How late an answer may be (past its long poll's wait) before the agent asks the other servers.
constexpr int kOverdueMs = 500;
// How often it asks them while the request stays overdue, and how long it waits for each.
constexpr int kWitnessEveryMs = 200;
constexpr int kWitnessTimeoutMs = 300;

// Asks every server but servers[current] who leads (net/leader_witness.h): none when every
// answer names servers[current] (it still leads: it is only slow).
using net::witness_leader;

}  // namespace sluice::agent
