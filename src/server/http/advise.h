#pragma once
// GET /v1/advise (docs/api.md, "Right-sizing"): the right-sizing report of the jobs the caller
// may see (server/advise_report.h), for `sluice advise` and the dashboard.
#include <cstdint>

#include "net/message.h"
#include "server/auth.h"
#include "server/state.h"

namespace sluice::server {

// ?namespace=, ?user=: only those; ?headroom=PCT (0-100, default 20); ?limit=N: the newest N
// jobs looked at (default 5,000, at most 20,000). The job views are built a page at a time
// under the state lock (as GET /v1/jobs does), the report after it is released.
void get_advise(ServerState& state, const Caller& caller, const net::Request& req,
                net::Response& res, int64_t now_ns);

}  // namespace sluice::server
