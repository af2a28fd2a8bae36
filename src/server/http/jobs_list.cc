// GET /v1/jobs (docs/api.md, "Listing jobs"): the jobs a caller may see, newest first, one page
// at a time. The views are built under the state lock, so a page is bounded twice: at most
// kMaxPage jobs (a larger `limit` is cut to it) and at most kMaxScan records looked at. Where a
// page stops early, `truncated` is true and `continue` says where the next one starts (pass it
// back as ?continue=); a caller listing 160,000 jobs holds the lock for one page at a time,
// never for all of them (issue 41).
#include <algorithm>

#include "proto/split.h"
#include "server/http/util.h"
#include "server/server.h"

namespace sluice::server {

namespace {

constexpr size_t kDefaultPage = 500;
constexpr size_t kMaxPage = 1000;
constexpr size_t kMaxScan = 20'000;

struct ListQuery {
  std::vector<JobState> states;
  std::vector<JobId> ids;  // ?id=3,5 (squeue -j): only these, newest first; empty: any
  std::string queue, ns, user;
  size_t limit = kDefaultPage;
  JobId before = 0;  // 0: from the newest
  bool start = false;
};

// The query's filters, or an error message.
std::string read_list_query(const net::Request& req, ListQuery* q) {
  for (const auto& s : proto::split_list(req.get_param_value("state"))) {
    auto st = parse_state_filter(s);
    if (!st) return "unknown state \"" + s + "\" (states: " + kStateFilterHelp + ")";
    q->states.push_back(*st);
  }
  for (const auto& s : proto::split_list(req.get_param_value("id"))) {
    auto id = parse_id(s);
    if (!id) return "id: \"" + s + "\" is not a job id";
    if (q->ids.size() == kMaxPage) return "id: at most 1000 ids a request";
    q->ids.push_back(*id);
  }
  std::sort(q->ids.begin(), q->ids.end(), std::greater<>());  // the list's order: newest first
  q->ids.erase(std::unique(q->ids.begin(), q->ids.end()), q->ids.end());
  q->start = wants_start(req);
  q->queue = req.get_param_value("queue");
  q->ns = req.get_param_value("namespace");
  q->user = req.get_param_value("user");
  if (req.has_param("limit")) {
    auto l = parse_id(req.get_param_value("limit"));
    if (!l || *l == 0) return "limit: expected a positive integer";
    q->limit = static_cast<size_t>(std::min<JobId>(*l, kMaxPage));
  }
  if (req.has_param("continue")) {
    auto c = parse_id(req.get_param_value("continue"));
    if (!c || *c == 0) return "continue: expected the value a previous page gave";
    q->before = *c;
  }
  return {};
}

bool matches(const ListQuery& q, const Caller& caller, const JobRecord& r) {
  if (!caller.sees(r.job.namespace_)) return false;
  if (!q.states.empty() && std::find(q.states.begin(), q.states.end(), r.state) == q.states.end())
    return false;
  if (!q.queue.empty() && r.job.queue != q.queue && r.cluster_queue != q.queue) return false;
  if (!q.ns.empty() && r.job.namespace_ != q.ns) return false;
  return q.user.empty() || r.job.exec().user == q.user;
}

}  // namespace

void Server::list_jobs(const Caller& caller, const net::Request& req, net::Response& res) {
  ListQuery q;
  if (auto why = read_list_query(req, &q); !why.empty()) return fail(res, 400, why);
  nlohmann::json jobs = nlohmann::json::array();
  JobId next = 0;  // where the next page starts; 0: this page is the last
  // Start predictions: taken (or replayed) before the state lock, never under it.
  const auto preds = q.start ? predictor_.get(*state_, now_ns()) : nullptr;
  {
    // The views are built under the lock; the body is written after it is released.
    std::lock_guard lk(state_->mu());
    const auto t = now_ns();
    const auto& recs = state_->records();
    // Ids given: only those records are looked at (one page: at most kMaxPage ids).
    for (JobId id : q.ids)
      if (const JobRecord* r = state_->find(id); r && matches(q, caller, *r)) {
        jobs.push_back(state_->job_view(*r, t));
        if (preds) jobs.back()["predicted_start"] = StartPredictor::view(*preds, *r, t);
      }
    auto it = std::make_reverse_iterator(q.before ? recs.lower_bound(q.before) : recs.end());
    if (!q.ids.empty()) it = recs.rend();
    for (size_t scanned = 0; it != recs.rend(); ++it, ++scanned) {
      const JobRecord& r = it->second;
      if (scanned == kMaxScan) {  // more may match: the next page looks from this record on
        next = r.job.id + 1;
        break;
      }
      if (!matches(q, caller, r)) continue;
      if (jobs.size() == q.limit) {  // one more matches: the next page starts with it
        next = r.job.id + 1;
        break;
      }
      jobs.push_back(state_->job_view(r, t));
      if (preds) jobs.back()["predicted_start"] = StartPredictor::view(*preds, r, t);
    }
  }
  nlohmann::json body = nlohmann::json::object();
  body["jobs"] = std::move(jobs);
  body["truncated"] = next != 0;
  body["continue"] = next != 0 ? nlohmann::json(std::to_string(next)) : nlohmann::json(nullptr);
  reply(res, 200, body);
}

}  // namespace sluice::server
