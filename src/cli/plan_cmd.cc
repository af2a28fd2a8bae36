// `sluice plan`: run one scheduling cycle over a configuration and a set of jobs and print the
// decisions: admissions with their placements, and a reason for every job left pending.
#include <iomanip>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/decisions_json.h"
#include "cli/load_files.h"
#include "core/cycle/scheduler.h"

namespace sluice::cli {

namespace {

struct PlanArgs {
  std::vector<std::string> config, cluster, jobs;
  bool json = false;
  bool strict = false;
  double now_s = -1;
};

void print_table(const CycleResult& r, const Scheduler& s,
                 const std::map<JobId, std::string>& names) {
  const Config& c = s.config();
  std::cout << "ADMITTED (" << r.admitted.size() << ")\n";
  std::cout << std::left << std::setw(28) << "JOB" << std::setw(20) << "QUEUE" << std::setw(16)
            << "FLAVOR" << std::setw(8) << "BORROW"
            << "PLACEMENT\n";
  for (const auto& a : r.admitted) {
    std::string flavors;
    for (FlavorId f : a.flavors)
      if (f >= 0) flavors += (flavors.empty() ? "" : ",") + c.flavors[f].name;
    std::cout << std::setw(28) << names.at(a.job) << std::setw(20) << c.cluster_queues[a.queue].name
              << std::setw(16) << flavors << std::setw(8) << (a.borrowing ? "yes" : "no")
              << placement_text(a.placement, c) << "\n";
  }
  if (!r.preempted.empty()) {
    std::cout << "\nPREEMPTED (" << r.preempted.size() << ")\n";
    for (const auto& p : r.preempted)
      std::cout << std::setw(28) << names.at(p.victim) << "for " << names.at(p.preemptor)
                << (p.reason == PreemptReason::kWithinClusterQueue ? " (within ClusterQueue)"
                                                                   : " (reclaim within cohort)")
                << ", grace " << p.grace_ns / kNsPerSec << "s\n";
  }
  if (!r.rejected.empty()) {
    std::cout << "\nREJECTED (" << r.rejected.size() << ")\n";
    for (const auto& x : r.rejected)
      std::cout << std::setw(28) << names.at(x.job)
                << "interactive timeout passed: " << describe(x.reason, c) << "\n";
  }
  std::cout << "\nPENDING (" << r.pending.size() << ")\n";
  std::cout << std::setw(28) << "JOB" << std::setw(20) << "QUEUE"
            << "REASON\n";
  for (const auto& p : r.pending)
    std::cout << std::setw(28) << names.at(p.job) << std::setw(20)
              << c.cluster_queues[p.reason.queue].name << describe(p.reason, c) << "\n";
}

}  // namespace

void register_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "Run one scheduling cycle over a configuration and jobs; print the decisions");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("--config", a->config, "Queue configuration (Kueue manifests, SchedulerPolicy)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--cluster", a->cluster, "Cluster description (sluice Cluster)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--jobs", a->jobs, "Jobs (sluice Job, Pod, batch/v1 Job)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--now", a->now_s, "Cycle time in seconds (default: the latest job submitTime)");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_flag("--strict", a->strict, "Treat configuration warnings as errors");
  cmd->callback([a] {
    std::vector<std::string> files = a->config;
    files.insert(files.end(), a->cluster.begin(), a->cluster.end());
    files.insert(files.end(), a->jobs.begin(), a->jobs.end());
    auto out = load_files(files, a->strict, a->json);
    if (!out) throw CLI::RuntimeError(1);
    auto config = std::make_shared<const Config>(std::move(out->config));
    Scheduler s(config);
    std::map<JobId, std::string> names;
    TimeNs now = 0;
    bool rejected = false;
    for (auto& job : out->jobs) {
      now = std::max(now, job.submit_ns);
      names[job.id] = job.name;
      auto res = s.submit(job);
      if (res.status != SubmitStatus::kAccepted) {
        std::cerr << "error: job " << job.name << ": " << res.message << "\n";
        rejected = true;
      }
    }
    if (rejected) throw CLI::RuntimeError(1);
    if (a->now_s >= 0) now = static_cast<TimeNs>(a->now_s * kNsPerSec);
    CycleResult r = s.run_cycle(now);
    if (a->json) {
      auto name = [&](JobId id) { return names.at(id); };
      std::cout << cycle_json(r, s, name).dump(2) << "\n";
    } else {
      print_table(r, s, names);
    }
  });
}

}  // namespace sluice::cli
