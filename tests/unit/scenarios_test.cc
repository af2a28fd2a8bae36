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
//         podSetCounts: {job-b: {main: 2}}  # pods placed per pod set (partial admission)
//         flavors: {job-b: {main: {cpu: on-demand}}}  # flavor per pod set and resource
//
// Jobs with a status.admission (config/state/admitted.h) run from the start: the scenario starts
// from that state. tests/scenarios/kueue/ holds Kueue's own test cases in this form
// (docs/kueue-conformance.md); those listed in its known_differences.yaml must fail (sluice
// decides differently today, for the reason given there) and are reported when they pass.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "config/loader.h"
#include "config/state/admitted.h"
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

// The flavor an admission gives resource r of a job's pod set `set`.
std::string flavor_of(const Admission& a, size_t set, ResourceId r, const Config& c) {
  const auto& groups = c.cluster_queues[static_cast<size_t>(a.queue)].resource_groups;
  const auto& flavors = a.flavors_of(set);
  for (size_t g = 0; g < groups.size() && g < flavors.size(); ++g)
    if (std::count(groups[g].covered.begin(), groups[g].covered.end(), r) && flavors[g] >= 0)
      return c.flavors[static_cast<size_t>(flavors[g])].name;
  return "";
}

// One scenario file's run: its configuration, its scheduler, its jobs by name, and what the
// cycles so far decided. Each step: finish and submit, one cycle, the step's expectations, apply.
// The checks use ASSERT_* inside these member functions: a fatal failure ends the function, and
// run_scenario() stops at the end of the check (HasFatalFailure). Under a known difference's
// intercepting reporter the run goes on to more (intercepted) failures instead; every lookup
// behind an ASSERT is in the same function as it.
struct ScenarioRun {
  std::shared_ptr<const Config> config;
  std::unique_ptr<Scheduler> s;
  std::map<std::string, Job> jobs;
  std::map<std::string, JobId> id_of;
  std::map<JobId, std::string> name_of;
  std::set<std::string> submitted;  // admitted ones run from the start
  // The latest reason of every pending job: an incremental cycle reports new jobs only, so
  // reasons carry over, as they do in the daemon.
  std::map<std::string, PendingDecision> pending;
  std::map<std::string, const Admission*> admitted;  // by this step's cycle

  void start(const LoadOutput& out);
  void finish_and_submit(const YAML::Node& step, TimeNs now);
  void cycle(TimeNs now, CycleResult* r);
  void expect_decisions(const YAML::Node& expect, const CycleResult& r);
  void expect_admissions(const YAML::Node& expect);
  void for_each_pod_set(
      const YAML::Node& by_job,
      const std::function<void(const Admission&, int32_t, const YAML::Node&)>& each);
  void expect_pod_sets(const YAML::Node& expect);
  void expect_placement(const YAML::Node& expect);
  std::string pending_reasons() const;
};

void ScenarioRun::start(const LoadOutput& out) {
  config = std::make_shared<const Config>(out.config);
  s = std::make_unique<Scheduler>(config);
  const auto restore_errors = restore_admitted(*s, out);
  ASSERT_TRUE(restore_errors.empty()) << ::testing::PrintToString(restore_errors);
  for (auto& j : out.jobs) {
    id_of[j.name] = j.id;
    name_of[j.id] = j.name;
    jobs[j.name] = j;
    if (out.admitted.count(j.id)) submitted.insert(j.name);
  }
}

void ScenarioRun::finish_and_submit(const YAML::Node& step, TimeNs now) {
  for (const auto& name : names_of(step["finish"])) {
    ASSERT_TRUE(id_of.count(name)) << name;
    ASSERT_TRUE(s->finish(id_of[name], now)) << name << " was not running";
  }
  for (const auto& [name, job] : jobs) {
    if (submitted.count(name) || job.submit_ns > now) continue;
    auto r = s->submit(job);
    ASSERT_EQ(r.status, SubmitStatus::kAccepted) << name << ": " << r.message;
    submitted.insert(name);
  }
}

// One cycle, checked for determinism; the admitted and pending jobs updated from it.
void ScenarioRun::cycle(TimeNs now, CycleResult* out) {
  CycleResult& r = *out;
  r = s->run_cycle(now);
  // Same state, same time: byte-identical decisions; and an incremental cycle admits exactly
  // what a full one would.
  ASSERT_EQ(r, s->run_cycle(now));
  // (An incremental cycle keeps the standing backfill reservation; a full one may pick
  // another holder, so the comparison is made when none is in force.)
  if (!r.reservation.job) {
    ASSERT_EQ(r.admitted, s->run_cycle(now, Scheduler::CycleMode::kFull).admitted);
  }
  admitted.clear();
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
}

std::string ScenarioRun::pending_reasons() const {
  std::string reasons;
  for (const auto& [n, p] : pending) reasons += "\n  " + n + ": " + describe(p.reason, *config);
  return reasons;
}

// admitted, pending, preempted, rejected.
void ScenarioRun::expect_decisions(const YAML::Node& expect, const CycleResult& r) {
  if (expect["admitted"]) {
    std::set<std::string> want;
    for (const auto& n : names_of(expect["admitted"])) want.insert(n);
    std::set<std::string> got;
    for (const auto& [n, a] : admitted) got.insert(n);
    EXPECT_EQ(got, want) << "pending reasons:" << pending_reasons();
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
}

// flavor, explain, bestEffort, pods, borrowing: one admission each.
void ScenarioRun::expect_admissions(const YAML::Node& expect) {
  for (const auto& kv : expect["flavor"]) {
    const auto name = kv.first.as<std::string>();
    ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
    std::vector<std::string> fl;
    for (FlavorId f : admitted[name]->flavors_used()) fl.push_back(config->flavors[f].name);
    EXPECT_NE(std::find(fl.begin(), fl.end(), kv.second.as<std::string>()), fl.end()) << name;
  }
  for (const auto& kv : expect["explain"]) {
    const auto name = kv.first.as<std::string>();
    ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
    const std::string text = describe(*admitted[name], *config), want = kv.second.as<std::string>();
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
}

// Calls each(admission, pod set index, what) for every {job: {pod set: what}} of `by_job`.
void ScenarioRun::for_each_pod_set(
    const YAML::Node& by_job,
    const std::function<void(const Admission&, int32_t, const YAML::Node&)>& each) {
  for (const auto& kv : by_job) {
    const auto name = kv.first.as<std::string>();
    ASSERT_TRUE(admitted.count(name)) << name << " not admitted";
    const Job& job = jobs[name];
    for (const auto& ps : kv.second) {
      const auto set = ps.first.as<std::string>();
      auto it = std::find_if(job.pod_sets.begin(), job.pod_sets.end(),
                             [&](const PodSet& x) { return x.name == set; });
      ASSERT_NE(it, job.pod_sets.end()) << name << " has no pod set " << set;
      SCOPED_TRACE(name + " pod set " + set);
      each(*admitted[name], static_cast<int32_t>(it - job.pod_sets.begin()), ps.second);
    }
  }
}

// podSetCounts (pods placed) and flavors (per resource): per pod set of an admitted job.
void ScenarioRun::expect_pod_sets(const YAML::Node& expect) {
  for_each_pod_set(
      expect["podSetCounts"], [&](const Admission& a, int32_t set, const YAML::Node& count) {
        const auto& pods = a.placement.pods;
        EXPECT_EQ(std::count_if(pods.begin(), pods.end(),
                                [&](const PodPlacement& p) { return p.pod_set == set; }),
                  count.as<int64_t>());
      });
  if (::testing::Test::HasFatalFailure()) return;
  for_each_pod_set(expect["flavors"], [&](const Admission& a, int32_t set,
                                          const YAML::Node& flavors) {
    for (const auto& rf : flavors) {
      auto r = config->resources.find(rf.first.as<std::string>());
      ASSERT_TRUE(r) << rf.first.as<std::string>();
      EXPECT_EQ(flavor_of(a, static_cast<size_t>(set), *r, *config), rf.second.as<std::string>())
          << rf.first.as<std::string>();
    }
  });
}

// nodes and sameDomain: where an admitted job's pods go.
void ScenarioRun::expect_placement(const YAML::Node& expect) {
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
}

void run_scenario(const std::string& dir, const std::string& file) {
  const std::string path = dir + "/" + file;
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

  ScenarioRun run;
  run.start(out);
  if (::testing::Test::HasFatalFailure()) return;
  int step_no = 0;
  for (const auto& step : scenario["spec"]["steps"]) {
    ++step_no;
    const double at_s = step["at"] ? step["at"].as<double>() : 0.0;
    const TimeNs now = static_cast<TimeNs>(at_s * kNsPerSec);
    SCOPED_TRACE(file + " step " + std::to_string(step_no) + " (at " + std::to_string(at_s) + "s)");
    run.finish_and_submit(step, now);
    CycleResult r;
    run.cycle(now, &r);
    if (::testing::Test::HasFatalFailure()) return;
    const YAML::Node expect = step["expect"];
    run.expect_decisions(expect, r);
    run.expect_admissions(expect);
    run.expect_pod_sets(expect);
    run.expect_placement(expect);
    run.s->apply(r, now);
    std::string why;
    ASSERT_TRUE(run.s->check_invariants(&why)) << why;
  }
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, Decisions) {
  run_scenario(scenarios_dir(), GetParam());
}

std::string kueue_dir() {
  return scenarios_dir() + "/kueue";
}

// known_differences.yaml: {file.yaml: "why sluice decides differently"}.
std::map<std::string, std::string> known_differences() {
  std::map<std::string, std::string> out;
  const YAML::Node list = YAML::LoadFile(kueue_dir() + "/known_differences.yaml");
  for (const auto& kv : list) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return out;
}

class KueueConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(KueueConformance, Decisions) {
  const auto known = known_differences();
  const auto it = known.find(GetParam());
  if (it == known.end()) return run_scenario(kueue_dir(), GetParam());
  // A known difference: its expectations (Kueue's outcome) must fail somewhere. The file itself
  // must load (a broken file is not a difference).
  auto src = read_source(kueue_dir() + "/" + GetParam());
  ASSERT_TRUE(src.ok()) << src.error();
  LoadOptions opts;
  opts.ignore_kinds = {"Scenario"};
  ASSERT_TRUE(load({*src}, opts).ok());
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    run_scenario(kueue_dir(), GetParam());
  }
  EXPECT_GT(failures.size(), 0) << GetParam() << " is listed in known_differences.yaml ("
                                << it->second
                                << ") but now decides as Kueue does: remove its entry";
}

TEST(KueueConformanceList, EveryKnownDifferenceNamesAScenario) {
  for (const auto& [file, why] : known_differences()) {
    EXPECT_TRUE(fs::exists(kueue_dir() + "/" + file)) << file;
    EXPECT_FALSE(why.empty()) << file << ": give the reason";
  }
}

std::vector<std::string> yaml_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml" && e.path().filename() != "known_differences.yaml")
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(All, ScenarioTest, ::testing::ValuesIn(yaml_files(scenarios_dir())),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Kueue, KueueConformance, ::testing::ValuesIn(yaml_files(kueue_dir())),
                         test_name);

}  // namespace
}  // namespace sluice
