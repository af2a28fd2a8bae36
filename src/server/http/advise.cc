// GET /v1/advise: the right-sizing report of the jobs a caller may see (advise.h).
#include "server/http/advise.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "server/advise_report.h"
#include "server/http/reply.h"
#include "server/http/util.h"

namespace sluice::server {

namespace {

constexpr size_t kDefaultJobs = 5'000;
constexpr size_t kMaxJobs = 20'000;
constexpr size_t kPage = 1'000;      // views built in one hold of the state lock
constexpr size_t kMaxScan = 20'000;  // records looked at in one hold (as GET /v1/jobs)

struct AdviseQuery {
  std::string ns, user;
  double headroom = 0.2;
  size_t limit = kDefaultJobs;
};

std::string read_advise_query(const net::Request& req, AdviseQuery* q) {
  q->ns = req.get_param_value("namespace");
  q->user = req.get_param_value("user");
  if (req.has_param("headroom")) {
    auto h = parse_id(req.get_param_value("headroom"));
    if (!h || *h > 100) return "headroom: expected a percentage from 0 to 100";
    q->headroom = static_cast<double>(*h) / 100.0;
  }
  if (req.has_param("limit")) {
    auto l = parse_id(req.get_param_value("limit"));
    if (!l || *l == 0) return "limit: expected a positive integer";
    q->limit = static_cast<size_t>(std::min<JobId>(*l, kMaxJobs));
  }
  return {};
}

// One page of views, newest first, of the jobs before `before` (0: from the newest) that the
// caller sees and the query selects and that ever held GPUs: at most kPage views and kMaxScan
// records looked at, so that a caller who sees few of many jobs holds the lock for a bounded
// time; returns where the next page starts (0: none left).
JobId advise_page(ServerState& state, const Caller& caller, const AdviseQuery& q, JobId before,
                  int64_t now, nlohmann::json& jobs) {
  std::lock_guard lk(state.mu());
  const auto& recs = state.records();
  auto it = std::make_reverse_iterator(before ? recs.lower_bound(before) : recs.end());
  for (size_t built = 0, scanned = 0; it != recs.rend(); ++it, ++scanned) {
    const JobRecord& r = it->second;
    if (scanned == kMaxScan) return r.job.id + 1;  // the next page looks from this record on
    if (!caller.sees(r.job.namespace_) || r.admit_ns <= 0) continue;
    if (!q.ns.empty() && r.job.namespace_ != q.ns) continue;
    if (!q.user.empty() && r.job.exec().user != q.user) continue;
    if (built == kPage || jobs.size() == q.limit) return r.job.id + 1;
    jobs.push_back(state.job_view(r, now));
    ++built;
  }
  return 0;
}

}  // namespace

void get_advise(ServerState& state, const Caller& caller, const net::Request& req,
                net::Response& res, int64_t now_ns) {
  AdviseQuery q;
  if (auto why = read_advise_query(req, &q); !why.empty()) return fail(res, 400, why);
  nlohmann::json jobs = nlohmann::json::array();
  JobId next = 0;
  do next = advise_page(state, caller, q, next, now_ns, jobs);
  while (next != 0 && jobs.size() < q.limit);
  nlohmann::json nodes;
  {
    std::lock_guard lk(state.mu());
    nodes = state.nodes_view(now_ns);
  }
  reply(res, 200,
        advise_report(nlohmann::json{{"jobs", std::move(jobs)}}, nodes,
                      {q.headroom, static_cast<double>(now_ns) / 1e9}));
}

}  // namespace sluice::server
