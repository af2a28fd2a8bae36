// `sluice plan`: run one scheduling cycle over a configuration and a set of jobs and print the
// decisions: admissions with their placements, whom they preempt, and a reason for every job
// left pending. Jobs with a status.admission are the running state the cycle starts from
// (config/state/admitted.h); `--server URL` takes that state from a live server (GET /v1/state)
// and adds the jobs given, without submitting them.
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/client_http.h"
#include "cli/client_term.h"
#include "cli/commands.h"
#include "cli/decisions_json.h"
#include "cli/load_files.h"
#include "config/state/admitted.h"
#include "core/cycle/scheduler.h"

namespace sluice::cli {

namespace {

struct PlanArgs {
  std::vector<std::string> config, cluster, jobs;
  bool json = false;
  bool strict = false;
  double now_s = -1;
  Connection conn{""};
};

// The live state (GET /v1/state) as a source; exits 1 or 2 with the failure when it cannot.
Source fetch_state(const Connection& conn) {
  auto reply = HttpClient(conn).call("GET", "/v1/state");
  if (reply.ok) return Source{conn.server + "/v1/state", reply.value.body};
  print_err(reply.failure.message + "\n");
  throw CLI::RuntimeError(reply.failure.exit_code);
}

void print_table(std::ostream& o, const CycleResult& r, const Scheduler& s,
                 const std::map<JobId, std::string>& job_names) {
  // Names from a live server may predate the refusal of control characters.
  auto names_at = [&](JobId id) { return printable_text(job_names.at(id)); };
  const Config& c = s.config();
  o << "ADMITTED (" << r.admitted.size() << ")\n";
  o << std::left << std::setw(28) << "JOB" << std::setw(20) << "QUEUE" << std::setw(16) << "FLAVOR"
    << std::setw(8) << "BORROW"
    << "PLACEMENT\n";
  for (const auto& a : r.admitted) {
    std::string flavors;
    for (FlavorId f : a.flavors_used()) flavors += (flavors.empty() ? "" : ",") + c.flavors[f].name;
    o << std::setw(28) << names_at(a.job) << std::setw(20) << c.cluster_queues[a.queue].name
      << std::setw(16) << flavors << std::setw(8) << (a.borrowing ? "yes" : "no")
      << placement_text(a.placement, c) << "\n";
  }
  if (!r.preempted.empty()) {
    o << "\nPREEMPTED (" << r.preempted.size() << ")\n";
    for (const auto& p : r.preempted)
      o << std::setw(28) << names_at(p.victim) << "for " << names_at(p.preemptor)
        << (p.reason == PreemptReason::kWithinClusterQueue ? " (within ClusterQueue)"
                                                           : " (reclaim within cohort)")
        << ", grace " << p.grace_ns / kNsPerSec << "s\n";
  }
  if (!r.rejected.empty()) {
    o << "\nREJECTED (" << r.rejected.size() << ")\n";
    for (const auto& x : r.rejected)
      o << std::setw(28) << names_at(x.job)
        << "interactive timeout passed: " << describe(x.reason, c) << "\n";
  }
  o << "\nPENDING (" << r.pending.size() << ")\n";
  o << std::setw(28) << "JOB" << std::setw(20) << "QUEUE"
    << "REASON\n";
  for (const auto& p : r.pending)
    o << std::setw(28) << names_at(p.job) << std::setw(20) << c.cluster_queues[p.reason.queue].name
      << describe(p.reason, c) << "\n";
}

}  // namespace

void register_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "Run one scheduling cycle over a configuration and jobs; print the decisions");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("--config", a->config,
                  "Queue configuration (Kueue manifests, SchedulerPolicy), or a saved state "
                  "(`sluice snapshot`)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cluster", a->cluster, "Cluster description (sluice Cluster)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--jobs,jobs", a->jobs,
                  "Jobs (sluice Job, Pod, batch/v1 Job); those with a status.admission run")
      ->check(CLI::ExistingFile);
  cmd->add_option("--server", a->conn.server,
                  "Start from this server's live state (admin token) instead of --config");
  cmd->add_option("--token", a->conn.token, "Bearer token for --server (default: $SLUICE_TOKEN)")
      ->envname("SLUICE_TOKEN");
  cmd->add_option("--now", a->now_s,
                  "Cycle time in seconds (default: the state's Snapshot time, else the latest "
                  "submit or admission time)");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_flag("--strict", a->strict, "Treat configuration warnings as errors");
  cmd->callback([a] {
    const bool remote = !a->conn.server.empty();
    if (remote == !a->config.empty())
      throw CLI::ValidationError("plan", "give either --config or --server");
    std::vector<std::string> files = a->config;
    files.insert(files.end(), a->cluster.begin(), a->cluster.end());
    files.insert(files.end(), a->jobs.begin(), a->jobs.end());
    std::vector<Source> pre;
    if (remote) pre.push_back(fetch_state(a->conn));
    auto out = load_files(files, a->strict, a->json, std::move(pre));
    if (!out) throw CLI::RuntimeError(1);
    auto config = std::make_shared<const Config>(std::move(out->config));
    Scheduler s(config);
    std::map<JobId, std::string> names;
    for (const auto& job : out->jobs) names[job.id] = job.name;
    TimeNs now = state_time(*out);
    if (a->now_s >= 0) now = static_cast<TimeNs>(a->now_s * kNsPerSec);
    // Against a state (live, or saved by `sluice snapshot`), a job given without a submit time
    // is submitted at the cycle's time (the what-if), not at time 0, which would make it the
    // oldest job there and, aged, a starving one.
    if (out->snapshot_ns)
      for (Job& job : out->jobs)
        if (job.submit_ns == 0 && !out->admitted.count(job.id)) job.submit_ns = now;
    const auto errors = load_state(s, *out);
    for (const auto& e : errors) print_err("error: " + e + "\n");
    if (!errors.empty()) throw CLI::RuntimeError(1);
    CycleResult r = s.run_cycle(now);
    if (a->json) {
      auto name = [&](JobId id) { return names.at(id); };
      std::cout << cycle_json(r, s, name).dump(2) << "\n";
    } else {
      std::ostringstream o;
      if (s.running_count() > 0)
        o << "STARTING STATE: " << s.running_count() << " running, " << s.pending_count()
          << " pending\n\n";
      print_table(o, r, s, names);
      print_out(o.str());
    }
  });
}

}  // namespace sluice::cli
