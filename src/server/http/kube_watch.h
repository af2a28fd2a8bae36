#pragma once
// Watches of the Kubernetes API (kube_watch.cc, docs/kubernetes.md): each is a chunked stream
// of watch events ({"type": "ADDED", "object": {...}} a line) that one thread of the server
// (Server::kube_watch_loop) feeds from the state's change journal. A watch holds a connection
// and a place among at most kMaxWatches, never a worker or the state lock while it waits.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/responder.h"
#include "server/http/kube.h"

namespace sluice::server::kube {

// Open watches at most; beyond, a watch request is answered 429 TooManyRequests (Retry-After).
inline constexpr size_t kMaxWatches = 256;
// A watch without timeoutSeconds ends after this long, and none lasts longer (the API server
// ends its watches after 30 to 60 minutes); clients watch again from their last version.
inline constexpr int64_t kMaxWatchSeconds = 1800;
// With allowWatchBookmarks, a BOOKMARK after this long without an event.
inline constexpr auto kBookmarkEvery = std::chrono::seconds(10);
// Per watch and round of the watch thread: at most this many changed jobs, or job records
// looked at for its initial ADDED events; and no new events while more than a quarter of
// net::Stream::kMaxQueuedBytes wait for its client. So a large burst goes out in steps that a
// client reading at its pace takes without being closed for falling behind.
inline constexpr size_t kPerRound = 1'000;

using WatchClock = std::chrono::steady_clock;

struct Watch {
  const Kind* kind = nullptr;  // batch/v1 jobs or Kueue workloads
  Caller caller;
  std::string ns;  // the path's namespace; "" every visible one
  Selector labels, fields;
  bool table = false;  // kubectl get -w: each event's object is a Table of one row
  std::string include;
  bool bookmarks = false;
  bool send_initial_events = false;  // then a BOOKMARK marks the initial events' end
  // resourceVersion "" or "0": ADDED events for the current objects first (newest first from
  // `initial_before`, 0: from the newest), then the changes after `from`.
  bool initial = false;
  JobId initial_before = 0;
  uint64_t from = 0;  // events after this resourceVersion
  WatchClock::time_point until, last_sent;
  net::Stream out;

  bool shows(const json& object) const;  // its namespace visible, the selectors match
};

// An object a round of the watch thread built, and its Table row.
struct Built {
  json object, cells;
};
// What one round writes to one watch: its events (type, object), or its 410.
struct WatchOut {
  std::vector<std::pair<const char*, const Built*>> events;
  bool expired = false, initial_done = false;
  uint64_t expired_rv = 0;
};

// A query flag as the API server reads it (Go's strconv.ParseBool): "true", "True", "TRUE",
// "t", "T" or "1" (the Python client sends watch=True).
bool flag_true(std::string_view value);

// The query of a watch request into `w`; "" or what is wrong (a 400).
std::string read_watch_query(const net::Request& req, Watch& w);
// One watch event as a line; `object` is shown as a Table row when the watch wants one.
std::string watch_event(const Watch& w, const char* type, const json& object, const json& cells);
// BOOKMARK (the version reached) and ERROR (410 Expired) events.
// `initial_end`: the BOOKMARK that ends sendInitialEvents' events.
std::string bookmark_event(const Watch& w, uint64_t rv, bool initial_end);
std::string expired_event(uint64_t rv);

}  // namespace sluice::server::kube
