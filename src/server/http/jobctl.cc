// The HTTP API of Slurm's job control and accounting (docs/api.md): hold, release and requeue
// a job; an interactive job's terminal; the job history (sacct) and GPU-hours per namespace or
// user per period.
#include <algorithm>

#include "proto/split.h"
#include "server/http/util.h"
#include "server/server.h"

namespace sluice::server {

namespace {

using nlohmann::json;

constexpr size_t kMaxTtyBody = 4096;       // keystrokes per POST /v1/jobs/{id}/tty
constexpr JobId kMaxHistoryPage = 10'000;  // rows of one GET /v1/history

// The history's filters from the query string; an error message when one is malformed.
std::string read_history_query(const net::Request& req, HistoryQuery* q) {
  q->user = req.get_param_value("user");
  q->namespace_ = req.get_param_value("namespace");
  q->queue = req.get_param_value("queue");
  q->name = req.get_param_value("name");
  for (const auto& s : proto::split_list(req.get_param_value("state"))) {
    const auto st = parse_state_filter(s);
    if (!st) return "state: unknown state \"" + s + "\" (" + kStateFilterHelp + ")";
    q->states.push_back(state_name(*st));
  }
  for (auto [key, out] : {std::pair{"since", &q->since_ns}, std::pair{"until", &q->until_ns}}) {
    if (!req.has_param(key)) continue;
    auto t = parse_time_param(req.get_param_value(key));
    if (!t)
      return std::string(key) +
             ": expected unix seconds or a UTC date (2026-12-01, 2026-12-01T10:00:00)";
    *out = *t;
  }
  if (req.has_param("limit")) {
    auto l = parse_id(req.get_param_value("limit"));
    if (!l || *l == 0) return "limit: expected a positive integer";
    // One answer is built under the state lock: a larger limit is cut to the page's size (the
    // answer says `truncated`; page on with `until`).
    q->limit = static_cast<size_t>(std::min<JobId>(*l, kMaxHistoryPage));
  }
  return {};
}

}  // namespace

void Server::routes_jobctl() {
  auto& h = *http_;
  // POST /v1/jobs/{id}/hold | release | requeue[?hold=1]: the job's view after it.
  for (const char* v : {"hold", "release", "requeue"})
    h.Post(std::string(R"(/v1/jobs/([^/]+)/)") + v,
           [this, what = std::string(v)](const net::Request& req, net::Response& res) {
             control_job(req, res, what);
           });
  h.Post(R"(/v1/jobs/([^/]+)/tty)", handler(&Server::type_into_job));
  // GET /v1/history: sacct. GET /v1/usage: GPU-hours per period and namespace or user.
  h.Get("/v1/history", handler(&Server::get_history));
  h.Get("/v1/usage", handler(&Server::get_usage));
}

// `what`: hold, release or requeue (with ?hold=1: Slurm's requeuehold).
void Server::control_job(const net::Request& req, net::Response& res, const std::string& what) {
  auto caller = caller_of(req, res);
  if (!caller || !may_write(res)) return;
  uint64_t ticket = 0;
  json view;
  {
    std::lock_guard lk(state_->mu());
    const JobRecord* r = visible_job(*caller, req.matches[1], res);
    if (!r) return;
    const JobId id = r->job.id;
    const TimeNs now = now_ns();
    std::string err;
    const bool hold_too = req.get_param_value("hold") == "1";
    const int status = what == "hold"      ? state_->hold(id, now, &err, &ticket)
                       : what == "release" ? state_->release(id, now, &err, &ticket)
                                           : state_->requeue(id, hold_too, now, &err, &ticket);
    if (status != 200) return fail(res, status, err);
    view = state_->job_view(*state_->find(id), now_ns());
  }
  if (ticket && !store_->wait(ticket))
    return fail(res, 503, "the " + what + " could not be written", {refusal()});
  kick();
  reply(res, 200, view);
}

// POST /v1/jobs/{id}/tty[?rows=R&cols=C]: keystrokes (the raw body, at most kMaxTtyBody bytes)
// and the window size for an interactive job's terminal (`sluice run --pty`), relayed to its
// agent (state_tty.cc). Only the job's submitter or an admin: whoever types here runs commands
// as the job's user. Another namespace's job is "no job", as everywhere.
void Server::type_into_job(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  if (req.body.size() > kMaxTtyBody)
    return fail(res, 413,
                "at most " + std::to_string(kMaxTtyBody) + " bytes of keystrokes per request");
  int32_t size[2] = {0, 0};
  const char* keys[2] = {"rows", "cols"};
  for (int i = 0; i < 2; ++i) {
    if (!req.has_param(keys[i])) continue;
    const auto v = parse_id(req.get_param_value(keys[i]));
    if (!v || *v == 0 || *v > 10000)
      return fail(res, 400, std::string(keys[i]) + ": expected an integer 1 to 10000");
    size[i] = static_cast<int32_t>(*v);
  }
  if ((size[0] > 0) != (size[1] > 0)) return fail(res, 400, "give both rows and cols, or none");
  std::lock_guard lk(state_->mu());
  const JobRecord* r = visible_job(*caller, req.matches[1], res);
  if (!r) return;
  if (!caller->admin && caller->name != r->job.exec().user)
    return fail(res, 403,
                "only the job's submitter (" + r->job.exec().user +
                    ") or an admin may type into its terminal");
  std::string err;
  const int status = state_->send_tty(r->job.id, req.body, size[0], size[1], &err);
  if (status != 200) return fail(res, status, err);
  reply(res, 200, json{{"sent", req.body.size()}});
}

void Server::get_history(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  HistoryQuery q;
  if (auto why = read_history_query(req, &q); !why.empty()) return fail(res, 400, why);
  json body;
  {
    std::lock_guard lk(state_->mu());
    body = state_->history().query(q, now_ns(),
                                   [&](const HistoryRow& r) { return caller->sees(r.namespace_); });
  }
  reply(res, 200, body);
}

void Server::get_usage(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  HistoryQuery q;
  if (auto why = read_history_query(req, &q); !why.empty()) return fail(res, 400, why);
  std::string period = req.has_param("period") ? req.get_param_value("period") : "month";
  std::string by = req.has_param("by") ? req.get_param_value("by") : "namespace";
  if (period != "day" && period != "week" && period != "month" && period != "all")
    return fail(res, 400, "period: day, week, month or all");
  if (by != "namespace" && by != "user") return fail(res, 400, "by: namespace or user");
  json body;
  {
    std::lock_guard lk(state_->mu());
    body = state_->history().usage(q, period, by, now_ns(),
                                   [&](const HistoryRow& r) { return caller->sees(r.namespace_); });
  }
  reply(res, 200, body);
}

}  // namespace sluice::server
