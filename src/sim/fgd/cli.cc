#include "sim/fgd/cli.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "proto/split.h"
#include "sim/fgd/experiment.h"
#include "sim/fgd/mix.h"
#include "sim/fgd/trace.h"

namespace sluice::sim {

namespace {

struct FgdArgs {
  std::string nodes, pods, expected;
  std::string policy = "fgd";
  std::string mix = "default";
  std::string seeds = "42-51";
  double inflate = 1.3;
  bool json = false;
};

std::string traces_dir() {
  const char* env = std::getenv("SLUICE_TRACES");
  return env && *env ? std::string(env) : std::string("../shared/traces");
}

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "sluice sim fgd: " << msg << "\n";
  throw CLI::RuntimeError(1);
}

std::vector<std::string> split_list(const std::string& s, const std::vector<std::string>& all) {
  return s == "all" ? all : proto::split_list(s);
}

std::vector<uint64_t> parse_seeds(const std::string& s) {
  std::vector<uint64_t> out;
  for (const std::string& part : split_list(s, {})) {
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(std::stoull(part));
      } else {
        const uint64_t a = std::stoull(part.substr(0, dash)),
                       b = std::stoull(part.substr(dash + 1));
        if (b < a || b - a > 10000) die("--seeds: bad range '" + part + "'");
        for (uint64_t x = a; x <= b; ++x) out.push_back(x);
      }
    } catch (const std::logic_error&) {
      die("--seeds: '" + part + "' is not a seed or a range like 42-51");
    }
  }
  if (out.empty()) die("--seeds: no seeds");
  return out;
}

void require_file(const std::string& path, const char* what, bool defaulted) {
  if (std::filesystem::exists(path)) return;
  std::string msg = std::string(what) + " file '" + path + "' not found.";
  if (defaulted)
    msg +=
        " Set SLUICE_TRACES to the directory holding alibaba-openb/ (default: ../shared/traces, "
        "relative to the current directory), or pass --nodes/--pods. The trace is public: "
        "https://github.com/alibaba/clusterdata, directory cluster-trace-gpu-v2023/csv/ "
        "(openb_node_list_gpu_node.csv, openb_pod_list_default.csv).";
  die(msg);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Sample standard deviation (n - 1), as the published ± is.
double stdev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// The published curves by paper name; none without --expected or when its default is absent.
std::map<std::string, std::vector<fgd::Curve>> expected_curves(const FgdArgs& a,
                                                               bool expected_default) {
  std::map<std::string, std::vector<fgd::Curve>> expected;
  if (!a.expected.empty()) {
    if (std::filesystem::exists(a.expected)) {
      auto e = fgd::read_expected(a.expected);
      if (!e) die(e.error());
      expected = std::move(*e);
    } else if (!expected_default) {
      die("expected-results file '" + a.expected + "' not found");
    }
  }
  return expected;
}

// One row of the output: a policy on a mix over every seed.
struct FgdRow {
  std::vector<double> at100, at130;  // the curves at 100% and 130% arrived, per seed
  double per_run = 0;                // seconds per run
  nlohmann::json obj;                // the row as JSON
  std::string pub_text = "-", diff_text = "-";
};

// Runs `policy` on the `mix` pods once per seed: the row without the published figures.
FgdRow run_seeds(const std::vector<fgd::TraceNode>& nodes, const std::vector<fgd::TracePod>& pods,
                 const std::string& policy, const std::string& mix,
                 const std::vector<uint64_t>& seeds, const fgd::ExperimentOptions& opt) {
  FgdRow row;
  nlohmann::json curves = nlohmann::json::array();
  double seconds = 0;
  for (uint64_t seed : seeds) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = fgd::run_experiment(nodes, pods, policy, seed, opt);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) die(r.error());
    row.at100.push_back(r->curve[100]);
    row.at130.push_back(r->curve[130]);
    curves.push_back({{"seed", seed},
                      {"pods", r->pods},
                      {"placed", r->placed},
                      {"alloc_pct", std::vector<double>(r->curve.begin(), r->curve.end())}});
  }
  row.per_run = seconds / static_cast<double>(seeds.size());
  row.obj = {{"policy", policy},
             {"mix", mix},
             {"seeds", seeds},
             {"alloc_pct_100_mean", mean(row.at100)},
             {"alloc_pct_100_std", stdev(row.at100)},
             {"alloc_pct_130_mean", mean(row.at130)},
             {"seconds_per_run", row.per_run},
             {"curves", curves}};
  return row;
}

// The published mean at 100% and our difference from it, for a published policy on the
// default mix.
void add_published(FgdRow& row, const std::string& policy, const std::string& mix,
                   const std::map<std::string, std::vector<fgd::Curve>>& expected) {
  const std::string pub = fgd::published_name(policy);
  if (mix != "default" || pub.empty() || !expected.count(pub)) return;
  std::vector<double> p100;
  for (const auto& c : expected.at(pub)) p100.push_back(c[100]);
  row.obj["published_100_mean"] = mean(p100);
  row.obj["published_100_std"] = stdev(p100);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", mean(p100));
  row.pub_text = buf;
  std::snprintf(buf, sizeof buf, "%+.2f", mean(row.at100) - mean(p100));
  row.diff_text = buf;
}

// Prints the row as a line of the table.
void print_row(const FgdRow& row, const std::string& policy, const std::string& mix, size_t seeds) {
  char m100[48];
  std::snprintf(m100, sizeof m100, "%.2f ± %.2f", mean(row.at100), stdev(row.at100));
  std::printf("%-14s %-12s %6zu  %-16s %-10s %7s  %-9.2f %8.3f\n", policy.c_str(), mix.c_str(),
              seeds, m100, row.pub_text.c_str(), row.diff_text.c_str(), mean(row.at130),
              row.per_run);
  std::fflush(stdout);
}

void run(const FgdArgs& a, bool nodes_default, bool pods_default, bool expected_default) {
  require_file(a.nodes, "nodes", nodes_default);
  require_file(a.pods, "pods", pods_default);
  auto nodes = fgd::read_nodes(a.nodes);
  if (!nodes) die(nodes.error());
  auto pods = fgd::read_pods(a.pods);
  if (!pods) die(pods.error());
  const auto expected = expected_curves(a, expected_default);
  const std::vector<uint64_t> seeds = parse_seeds(a.seeds);
  const std::vector<std::string> policies = split_list(a.policy, fgd::policy_names());
  const std::vector<std::string> mixes = split_list(a.mix, fgd::mix_names());
  if (policies.empty()) die("--policy: no policy");
  if (a.inflate <= 0 || a.inflate > 10) die("--inflate must be in (0, 10]");
  fgd::ExperimentOptions opt;
  opt.inflate = a.inflate;

  nlohmann::json results = nlohmann::json::array();
  if (!a.json)
    std::printf("%-14s %-12s %6s  %-16s %-10s %7s  %-9s %8s\n", "policy", "mix", "seeds",
                "alloc@100", "published", "diff", "alloc@130", "s/run");
  for (const std::string& mix : mixes) {
    auto mixed = fgd::apply_mix(*pods, *nodes, mix);
    if (!mixed) die(mixed.error());
    for (const std::string& policy : policies) {
      FgdRow row = run_seeds(*nodes, *mixed, policy, mix, seeds, opt);
      add_published(row, policy, mix, expected);
      if (a.json)
        results.push_back(row.obj);
      else
        print_row(row, policy, mix, seeds.size());
    }
  }
  if (a.json)
    std::cout << (results.size() == 1 ? results[0] : nlohmann::json{{"results", results}}).dump()
              << "\n";
}

}  // namespace

void register_fgd_command(CLI::App& sim_subcommand) {
  auto args = std::make_shared<FgdArgs>();
  const std::string dir = traces_dir() + "/alibaba-openb/";
  args->nodes = dir + "openb_node_list_gpu_node.csv";
  args->pods = dir + "openb_pod_list_default.csv";
  args->expected = dir + "fgd_expected_alloc_default.csv";
  auto* cmd = sim_subcommand.add_subcommand(
      "fgd", "The GPU-fragmentation experiment (Weng et al., ATC'23) on the Alibaba openb trace");
  auto* o_nodes =
      cmd->add_option("--nodes", args->nodes, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)");
  auto* o_pods =
      cmd->add_option("--pods", args->pods,
                      "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...)");
  auto* o_exp = cmd->add_option("--expected", args->expected,
                                "published curves CSV (fgd_expected_alloc_default.csv)");
  cmd->add_option(
         "--policy", args->policy,
         "policy, comma list or 'all': random, dotprod, gpuclustering, gpupacking, bestfit, "
         "fgd, binpack, spread, fgdpack, fgdmix")
      ->capture_default_str();
  cmd->add_option("--mix", args->mix,
                  "pod mix, comma list or 'all' (default, sharing, multigpu, constrained, "
                  "cpuheavy); a mix is a name or FAMILY:SHARE (sharing, multigpu, gpuspec, "
                  "gpuspecuniform, cpu), several joined by +: gpuspec:0.2+cpu:0.3")
      ->capture_default_str();
  cmd->add_option("--seeds", args->seeds, "seeds: 42-51, or 42,43")->capture_default_str();
  cmd->add_option("--inflate", args->inflate, "workload as a share of GPU capacity")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args, o_nodes, o_pods, o_exp]() {
    run(*args, o_nodes->count() == 0, o_pods->count() == 0, o_exp->count() == 0);
  });
}

}  // namespace sluice::sim
