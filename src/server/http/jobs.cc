// The users' job API (docs/api.md): submit, one job's view and its explanation, cancel. The list
// is in jobs_list.cc, Slurm's job control in jobctl.cc, the pods' logs in logs.cc. Every handler:
// authorize, take the state lock for the shortest time, wait for the store outside it, answer.
#include "config/loader.h"
#include "server/http/advise.h"
#include "server/http/reply.h"
#include "server/http/submission.h"
#include "server/http/util.h"
#include "server/run_as.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

void Server::routes_jobs() {
  auto& h = *http_;
  // Asynchronous: the worker parses and admits, and the answer goes out from the store's
  // commit, so no worker (and none of the caller's turns) waits through the fsync.
  h.Async("POST", "/v1/jobs", [this](net::Request& req, net::Responder r) {
    r.to_worker([this, &req, r] { submit_jobs(req, r); });
  });
  h.Get("/v1/jobs", [this](const net::Request& req, net::Response& res) {
    if (auto caller = caller_of(req, res)) list_jobs(*caller, req, res);  // jobs_list.cc
  });
  h.Get(R"(/v1/jobs/([^/]+))", handler(&Server::get_job));
  h.Get(R"(/v1/jobs/([^/]+)/explain)", handler(&Server::explain_job));
  h.Post(R"(/v1/jobs/([^/]+)/cancel)", handler(&Server::cancel_job));
  h.Delete(R"(/v1/jobs/([^/]+))", handler(&Server::cancel_job));
  // Right-sizing (`sluice advise`, the dashboard): GPU-hours requested against used.
  h.Get("/v1/advise", [this](const net::Request& req, net::Response& res) {
    if (auto caller = caller_of(req, res)) get_advise(*state_, *caller, req, res, now_ns());
  });
}

// POST /v1/jobs: parse, check who may submit what, admit, acknowledge once it is on disk (on a
// worker; the acknowledgement from the store's commit).
void Server::submit_jobs(const net::Request& req, const net::Responder& r) {
  net::Response res;
  auto caller = caller_of(req, res);
  if (!caller || !may_write(res)) return r.send(std::move(res));
  Submission sub{.caller = std::move(*caller)};
  std::optional<Admitted> admitted;
  if (parse_submission(req, res, &sub)) admitted = admit_submission(sub, res);
  if (!admitted) return r.send(std::move(res));
  auto a = std::make_shared<Admitted>(std::move(*admitted));
  store_->when_durable(a->ticket, [this, a, r](bool durable) {
    net::Response out;
    answer_submission(*a, durable, out);
    r.send(std::move(out));
  });
}

// The documents against the configuration in force, outside the state lock; false with the
// answer written when they are refused (413 over a limit, 404 an unknown LocalQueue, 400
// malformed, 403 a namespace or user the caller may not use).
bool Server::parse_submission(const net::Request& req, net::Response& res, Submission* sub) {
  sub->config = state_->config_ptr();
  // Without tokens the client says who it is; with them, the token does.
  if (!auth_.enabled())
    sub->claimed =
        claimed_user(req.get_header_value("X-Sluice-User"), req.get_header_value("X-Sluice-Uid"),
                     req.get_header_value("X-Sluice-Gid"));
  Caller& caller = sub->caller;
  if (!sub->claimed.name.empty()) caller.name = sub->claimed.name;
  {
    const auto slot = parse_slots_.acquire(caller.name);
    // generateName suffixes from the clock: a resubmitted file gets new names.
    sub->parsed = parse_jobs(
        Source{"request", req.body}, *sub->config, static_cast<uint64_t>(now_ns()),
        sub->default_namespace.empty() ? implied_namespace(caller) : sub->default_namespace);
  }
  const JobsOutput& parsed = sub->parsed;
  if (!parsed.errors.empty()) {
    if (parsed.too_large)
      fail(res, 413, "the submission is over a limit (docs/api.md, Limits)", parsed.errors);
    else if (parsed.unknown_queue)  // "not found", not "malformed"
      fail(res, 404, parsed.errors.front(), parsed.errors);
    else
      fail(res, 400, "the body is not a valid job submission", parsed.errors);
    return false;
  }
  for (const auto& j : parsed.jobs)
    if (!caller.sees(j.namespace_)) {
      fail(res, 403,
           "token " + caller.name + " may not submit to namespace \"" + j.namespace_ + "\"");
      return false;
    }
  for (auto& j : sub->parsed.jobs) {
    if (auto why = resolve_run_as(j, caller, *sub->config); !why.empty()) {
      fail(res, 403, why);
      return false;
    }
    j.exec_mut().submitter_uid = sub->claimed.uid;
    j.exec_mut().submitter_gid = sub->claimed.gid;
  }
  return true;
}

// Admits the parsed jobs into the state (their records queued for the store), or writes the
// refusal and returns none.
std::optional<Server::Admitted> Server::admit_submission(Submission& sub, net::Response& res) {
  // Records and events encoded here, so that the state lock is held for less.
  PreparedSubmission prepared = ServerState::prepare(sub.parsed.jobs, sub.config);
  if (!sub.kube_meta.empty()) prepared.kube_meta.assign(sub.parsed.jobs.size(), sub.kube_meta);
  SubmitOutcome out;
  Admitted a;
  a.body =
      json{{"jobs", json::array()}, {"notes", sub.parsed.notes}, {"warnings", sub.parsed.warnings}};
  {
    std::lock_guard lk(state_->mu());
    out = name_in_use(sub.parsed.jobs, sub.unique_names);
    if (out.status == 202) out = state_->submit(std::move(sub.parsed.jobs), now_ns(), &prepared);
    if (out.status == 202)
      for (JobId id : out.ids) {
        const auto* r = state_->find(id);
        a.body["jobs"].push_back(
            {{"id", id},
             {"name", r->job.name},
             {"queue", r->cluster_queue},  // the ClusterQueue, as it always was
             {"local_queue", r->job.queue},
             {"namespace", r->job.namespace_}});
      }
  }
  if (out.status != 202) {
    if (out.status == 429)
      res.set_header("Retry-After", std::to_string(out.retry_after_s > 0 ? out.retry_after_s : 5));
    fail(res, out.status, out.error, out.details);
    return std::nullopt;
  }
  a.ids = std::move(out.ids);
  a.ticket = out.ticket;
  return a;
}

// The answer to an admitted submission once its commit is known: 202 with its jobs, or, when it
// could not be written, 503 and the jobs taken back (never acknowledged, so they can neither
// run nor reappear). Runs on the store's writer thread (submit_jobs): it does not take the
// state lock; the scheduling loop takes the jobs back (withdraw_later), and until then any
// decision about them fails to commit as theirs did.
void Server::answer_submission(const Admitted& a, bool durable, net::Response& res) {
  if (!durable) {
    withdraw_later(a.ids);
    if (!store_failed_.exchange(true))
      log("store commit failed: " + store_->error() + "; new work is refused");
    fail(res, 503, "the submission could not be written; nothing was submitted", {refusal()});
    return;
  }
  kick();
  reply(res, 202, a.body);
}

// Admits, waits for the store on this thread, answers (the Kubernetes API's Job create); the
// ids when acknowledged.
std::vector<JobId> Server::commit_submission(Submission& sub, net::Response& res) {
  auto a = admit_submission(sub, res);
  if (!a) return {};
  const bool durable = a->ticket == 0 || store_->wait(a->ticket);
  answer_submission(*a, durable, res);
  return durable ? a->ids : std::vector<JobId>{};
}

// 409 when an unfinished job of the same namespace already has the name of one of these jobs
// that must be unique: all of them (`all`, the Kubernetes API's create) or those whose
// Kubernetes document named itself (Job::unique_name). Call with the state lock held.
SubmitOutcome Server::name_in_use(const std::vector<Job>& jobs, bool all) const {
  SubmitOutcome out;
  static const std::set<JobId> none;
  for (const auto& j : jobs) {
    const auto* ids = all || j.unique_name ? state_->jobs_named(j.namespace_, j.name) : nullptr;
    for (JobId id : ids ? *ids : none)
      if (const JobRecord* r = state_->find(id); r && !is_terminal(r->state)) {
        out.status = 409;
        out.error = "jobs.batch \"" + j.name + "\" already exists";
        if (!all)
          out.details = {"namespace " + j.namespace_ + " has an unfinished job named " + j.name +
                         " (job " + std::to_string(id) +
                         "): a Kubernetes document's metadata.name is unique among them; use "
                         "metadata.generateName, or cancel that job first"};
        return out;
      }
  }
  return out;
}

// GET /v1/jobs/{id}[?start=1]: the job's view, with its predicted start when asked.
void Server::get_job(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  const auto now = now_ns();
  const auto preds = wants_start(req) ? predictor_.get(*state_, now) : nullptr;
  std::lock_guard lk(state_->mu());
  if (const auto* r = visible_job(*caller, req.matches[1], res)) {
    json view = state_->job_view(*r, now);
    if (preds) view["predicted_start"] = StartPredictor::view(*preds, *r, now);
    reply(res, 200, view);
  }
}

// GET /v1/jobs/{id}/explain: why it waits (or ran where it ran), and a pending job's estimate.
void Server::explain_job(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  bool pending = false;
  {
    std::lock_guard lk(state_->mu());
    const auto* r = visible_job(*caller, req.matches[1], res);
    if (!r) return;
    pending = r->state == JobState::kPending;
  }
  // The predictions are taken outside the state lock.
  const auto preds = pending ? predictor_.get(*state_, now_ns()) : nullptr;
  std::lock_guard lk(state_->mu());
  const auto* r = visible_job(*caller, req.matches[1], res);
  if (!r) return;
  const auto t = now_ns();
  std::string text = state_->explain(r->job.id, t);
  json predicted = nullptr;
  if (preds) {
    text += StartPredictor::explain_line(*preds, *r, state_->config(), t);
    predicted = StartPredictor::view(*preds, *r, t);
  }
  reply(res, 200,
        json{{"id", r->job.id},
             {"state", state_name(r->state)},
             {"explanation", text},
             {"predicted_start", predicted}});
}

// POST /v1/jobs/{id}/cancel and DELETE /v1/jobs/{id}: the job's view once it is on disk.
void Server::cancel_job(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller || !may_write(res)) return;
  uint64_t ticket = 0;
  json view;
  {
    std::lock_guard lk(state_->mu());
    const auto* r = visible_job(*caller, req.matches[1], res);
    if (!r) return;
    std::string err;
    const int status = state_->cancel(r->job.id, now_ns(), &err, &ticket);
    if (status != 200) return fail(res, status, err);
    view = state_->job_view(*r, now_ns());
  }
  if (ticket && !store_->wait(ticket))
    return fail(res, 503, "the cancellation could not be written", {refusal()});
  kick();
  reply(res, 200, view);
}

}  // namespace sluice::server
