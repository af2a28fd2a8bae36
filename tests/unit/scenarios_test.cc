// Scenario tests: each tests/scenarios/*.yaml describes a cluster, queues and jobs plus a
// `Scenario` document with steps; every step runs one cycle and asserts its decisions.
//
//   kind: Scenario
//   spec:
//     steps:
//     - at: 0                       # seconds; jobs with submitTime <= at are submitted first
//       finish: [job-a]             # running jobs that end before this cycle
//       expect:
//         admitted: [job-b]         # exactly these start in this cycle
//         pending: {job-c: "text"}  # these stay pending; the reason contains the text
//         flavor: {job-b: h100}     # flavor chosen for the GPU resource group
//         borrowing: [job-b]        # admitted above nominal quota
//         nodes: {job-b: [n1, n2]}  # the set of nodes the job's pods run on
//         sameDomain: {job-b: rack} # all pods inside one domain of that level
//         preempted: {victim: preemptor}  # exactly these evictions (none when absent)
//         rejected: {job-d: "text"} # jobs rejected (interactive timeout, over budget); the reason
//                                   # contains the text
//         explain: {job-b: "text"}  # describe(Admission) contains the text ("" = is empty)
//         bestEffort: [job-b]       # exactly these admitted jobs are best-effort (over budget)
//         pods: {job-b: 2}          # the number of pods placed
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config/loader.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

std::string scenarios_dir() {
  return std::string(SLUICE_SOURCE_DIR) + "/tests/scenarios";
}

std::vector<std::string> names_of(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n)
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, Decisions) {
  const std::string path = scenarios_dir() + "/" + GetParam();
  auto src = read_source(path);
  ASSERT_TRUE(src.ok()) << src.error();
  LoadOptions opts;
  opts.ignore_kinds = {"Scenario"};
  LoadOutput out = load({*src}, opts);
  ASSERT_TRUE(out.ok()) << ::testing::PrintToString(out.errors);

  YAML::Node scenario;
  for (const auto& doc : YAML::LoadAll(src->text))
    if (doc["kind"] && doc["kind"].as<std::string>() == "Scenario") scenario = doc;
  ASSERT_TRUE(scenario) << "no Scenario document in " << path;

  auto config = std::make_shared<const Config>(std::move(out.config));
  Scheduler s(config);
  std::map<std::string, Job> jobs;
  std::map<std::string, JobId> id_of;
  std::map<JobId, std::string> name_of;
  for (auto& j : out.jobs) {
    id_of[j.name] = j.id;
    name_of[j.id] = j.name;
    jobs[j.name] = j;
  }
  std::set<std::string> submitted;
  // The latest reason of every pending job: an incremental cycle reports new jobs only, so
  // reasons carry over, as they do in the daemon.
  std::map<std::string, PendingDecision> pending;
  int step_no = 0;
  for (const auto& step : scenario["spec"]["steps"]) {
    ++step_no;
    const double at_s = step["at"] ? step["at"].as<double>() : 0.0;
    const TimeNs now = static_cast<TimeNs>(at_s * kNsPerSec);
    SCOPED_TRACE(GetParam() + " step " + std::to_string(step_no) + " (at " + std::to_string(at_s) +
                 "s)");
    for (const auto& name : names_of(step["finish"])) {
      ASSERT_TRUE(id_of.count(name)) << name;
      ASSERT_TRUE(s.finish(id_of[name], now)) << name << " was not running";
    }
    for (const auto& [name, job] : jobs) {
      if (submitted.count(name) || job.submit_ns > now) continue;
      auto r = s.submit(job);
      ASSERT_EQ(r.status, SubmitStatus::kAccepted) << name << ": " << r.message;
      submitted.insert(name);
    }
    CycleResult r = s.run_cycle(now);
    // Same state, same time: byte-identical decisions; and an incremental cycle admits exactly
    // what a full one would.
    ASSERT_EQ(r, s.run_cycle(now));
    // (An incremental cycle keeps the standing backfill reservation; a full one may pick
    // another holder, so the comparison is made when none is in force.)
    if (!r.reservation.job) {
      ASSERT_EQ(r.admitted, s.run_cycle(now, Scheduler::CycleMode::kFull).admitted);
    }
    std::map<std::string, const Admission*> admitted;
    for (const auto& a : r.admitted) {
      admitted[name_of[a.job]] = &a;
      pending.erase(name_of[a.job]);
    }
    for (const auto& p : r.pending) pending[name_of[p.job]] = p;
    for (const auto& x : r.rejected) pending.erase(name_of[x.job]);
    for (const auto& pr : r.preempted) {  // victims go back to their queue
      PendingDecision back;
      back.job = pr.victim;
      pending[name_of[pr.victim]] = back;
    }
    const YAML::Node expect = step["expect"];
    if (expect["admitted"]) {
      std::set<std::string> want;
      for (const auto& n : names_of(expect["admitted"])) want.insert(n);
      std::set<std::string> got;
      for (const auto& [n, a] : admitted) got.insert(n);
      std::string reasons;
      for (const auto& [n, p] : pending) reasons += "\n  " + n + ": " + describe(p.reason, *config);
      EXPECT_EQ(got, want) << "pending reasons:" << reasons;
    }
    for (const auto& kv : expect["pending"]) {
      const auto name = kv.first.as<std::string>();
      const auto text = kv.second.as<std::string>();
      ASSERT_TRUE(pending.count(name)) << name << " is not pending";
      const std::string why = describe(pending[name].reason, *config);
      EXPECT_NE(why.find(text), std::string::npos) << name << ": " << why;
    }
    {
      std::map<std::string, std::string> got, want;
      for (const auto& pr : r.preempted) got[name_of[pr.victim]] = name_of[pr.preemptor];
      for (const auto& kv : expect["preempted"])
        want[kv.first.as<std::string>()] = kv.second.as<std::string>();
      if (expect["preempted"] || !got.empty()) {
        EXPECT_EQ(got, want) << "victim -> preemptor";
      }
    }
    for (const auto& kv : expect["rejected"]) {
      const auto name = kv.first.as<std::string>();
      auto it = std::find_if(r.rejected.begin(), r.rejected.end(),
                             [&](const Rejection& x) { return name_of[x.job] == name; });
      ASSERT_NE(it, r.rejected.end()) << name << " was not rejected";
      EXPECT_NE(describe(it->reason, *config).find(kv.second.as<std::string>()), std::string::npos)
          << name << ": " << describe(it->reason, *config);
      pending.erase(name);
    }
    for (const auto& kv : expect["flavor"]) {
      const auto name = kv.first.as<std::string>();
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      std::vector<std::string> fl;
      for (FlavorId f : admitted[name]->flavors)
        if (f >= 0) fl.push_back(config->flavors[f].name);
      EXPECT_NE(std::find(fl.begin(), fl.end(), kv.second.as<std::string>()), fl.end()) << name;
    }
    for (const auto& kv : expect["explain"]) {
      const auto name = kv.first.as<std::string>();
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      const std::string text = describe(*admitted[name], *config),
                        want = kv.second.as<std::string>();
      if (want.empty()) {
        EXPECT_EQ(text, "") << name;
      } else {
        EXPECT_NE(text.find(want), std::string::npos) << name << ": " << text;
      }
    }
    if (expect["bestEffort"]) {
      std::set<std::string> want, got;
      for (const auto& n : names_of(expect["bestEffort"])) want.insert(n);
      for (const auto& [n, a] : admitted)
        if (a->best_effort) got.insert(n);
      EXPECT_EQ(got, want) << "best-effort admissions";
    }
    for (const auto& kv : expect["pods"]) {
      const auto name = kv.first.as<std::string>();
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      EXPECT_EQ(admitted[name]->placement.pods.size(), kv.second.as<size_t>()) << name;
    }
    for (const auto& name : names_of(expect["borrowing"])) {
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      EXPECT_TRUE(admitted[name]->borrowing) << name;
    }
    for (const auto& kv : expect["nodes"]) {
      const auto name = kv.first.as<std::string>();
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      std::set<std::string> want, got;
      for (const auto& n : kv.second) want.insert(n.as<std::string>());
      for (const auto& pod : admitted[name]->placement.pods)
        got.insert(config->cluster.nodes[pod.node].name);
      EXPECT_EQ(got, want) << name;
    }
    for (const auto& kv : expect["sameDomain"]) {
      const auto name = kv.first.as<std::string>();
      ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
      const int level = config->cluster.level_index(kv.second.as<std::string>());
      ASSERT_GE(level, 0);
      std::set<int32_t> domains;
      for (const auto& pod : admitted[name]->placement.pods) {
        const auto& node = config->cluster.nodes[pod.node];
        domains.insert(level == static_cast<int>(config->cluster.levels.size())
                           ? pod.node
                           : node.domains[level]);
      }
      EXPECT_EQ(domains.size(), 1u) << name << " spans " << domains.size() << " domains";
    }
    s.apply(r, now);
    std::string why;
    ASSERT_TRUE(s.check_invariants(&why)) << why;
  }
}

std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(scenarios_dir()))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, ScenarioTest, ::testing::ValuesIn(scenario_files()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 5);
                           std::replace_if(
                               n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace sluice
