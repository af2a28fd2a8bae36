#include "server/job_codec.h"

#include "core/model/deadline.h"
#include "core/model/right_size.h"
#include "proto/protocol.h"
#include "server/json_text.h"

namespace sluice::server {
namespace {

using nlohmann::json;

json encode_requests(const ResourceVec& v, const Config& config) {
  json out = json::object();
  for (int r = 0; r < config.resources.size(); ++r)
    if (v[static_cast<ResourceId>(r)] != 0)
      out[config.resources.name(static_cast<ResourceId>(r))] = v[static_cast<ResourceId>(r)];
  return out;
}

Result<ResourceVec> decode_requests(const json& j, const Config& config) {
  ResourceVec v;
  for (const auto& [name, amount] : j.items()) {
    auto id = config.resources.find(name);
    if (!id) return Error{"resource \"" + name + "\" is not in the configuration"};
    v[*id] = amount.get<int64_t>();
  }
  return v;
}

json encode_env(const std::vector<std::pair<std::string, std::string>>& env) {
  json out = json::array();
  for (const auto& [k, v] : env) out.push_back({k, v});
  return out;
}

void decode_env(const json& j, const char* key,
                std::vector<std::pair<std::string, std::string>>& out) {
  if (j.contains(key))
    for (const auto& kv : j[key])
      out.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
}

const char* gang_env_name(GangEnv e) {
  return e == GangEnv::kTorch ? "torch" : e == GangEnv::kMpi ? "mpi" : "";
}

}  // namespace

// Slurm-style job control (job_exec.h): only what is set, so other jobs' records stay as they were.
static void encode_control(const Job& job, json& out) {
  const JobExec& x = job.exec();
  if (!x.dependency.empty()) out["dependency"] = x.dependency;
  if (x.hold) out["hold"] = true;
  if (!x.array.empty()) out["array"] = x.array;
  if (!x.output.empty()) out["output"] = x.output;
  if (!x.error.empty()) out["error"] = x.error;
  if (x.tty) out["tty"] = true;
  if (job.right_size) out["right_size"] = true;
  if (x.array_task >= 0) {
    out["array_task"] = x.array_task;
    out["array_job"] = x.array_job;
    out["array_throttle"] = x.array_throttle;
  }
}

static void decode_control(const json& j, Job& job) {
  JobExec& x = job.exec_mut();
  x.dependency = j.value("dependency", "");
  x.hold = j.value("hold", false);
  x.array = j.value("array", "");
  x.output = j.value("output", "");
  x.error = j.value("error", "");
  x.tty = j.value("tty", false);
  job.right_size = j.value("right_size", false);
  x.array_task = j.value("array_task", -1);
  x.array_job = j.value("array_job", JobId{0});
  x.array_throttle = j.value("array_throttle", 0);
}

json encode_job(const Job& job, const Config& config) {
  json pod_sets = json::array();
  for (const auto& ps : job.pod_sets) {
    json p = {{"name", ps.name},
              {"count", ps.count},
              {"requests", encode_requests(ps.requests, config)},
              {"gpus", ps.gpus},
              {"gpu_milli", ps.gpu_milli}};
    if (!ps.exec().command.empty()) p["command"] = ps.exec().command;
    if (!ps.exec().image.empty()) p["image"] = ps.exec().image;
    if (ps.exec().image_args_only) p["image_args_only"] = true;
    if (!ps.exec().env.empty()) p["env"] = encode_env(ps.exec().env);
    if (ps.indexed_group > 0) p["indexed_group"] = ps.indexed_group;
    if (ps.min_count > 0) p["min_count"] = ps.min_count;
    if (ps.max_per_node > 0) p["max_per_node"] = ps.max_per_node;
    pod_sets.push_back(std::move(p));
  }
  json env = encode_env(job.exec().env);
  json topo = nullptr;
  const auto& levels = config.cluster.levels;
  auto level_name = [&](int32_t l) {
    return static_cast<size_t>(l) < levels.size() ? levels[static_cast<size_t>(l)] : "node";
  };
  if (job.topology.level >= 0 || !job.topology.slices.empty()) {
    topo = {{"level", job.topology.level >= 0 ? json(level_name(job.topology.level)) : json()},
            {"required", job.topology.required}};
    if (!job.topology.slices.empty()) {
      json slices = json::array();
      for (const auto& sl : job.topology.slices)
        slices.push_back({{"level", level_name(sl.level)}, {"size", sl.size}});
      topo["slices"] = slices;
    }
  }
  json out = {
      {"id", job.id},
      {"name", job.name},
      {"namespace", job.namespace_},
      {"queue", job.queue},
      {"priority_class", job.exec().priority_class},
      {"priority", job.priority},
      {"preemptible", job.preemptible},
      {"interactive", job.interactive},
      {"pod_sets", pod_sets},
      {"allowed_models", job.allowed_models},
      {"topology", topo},
      {"gpu_locality", job.gpu_locality == GpuLocality::kRequireNvlink ? "nvlink" : "preferred"},
      {"walltime_ns", job.walltime_ns},
      {"checkpoint_grace_ns", job.checkpoint_grace_ns},
      {"submit_ns", job.submit_ns},
      {"command", job.exec().command},
      {"env", env},
      {"user", job.exec().user},
      {"run_as_uid", job.exec().run_as_uid},
      {"run_as_gid", job.exec().run_as_gid},
      {"submitter_uid", job.exec().submitter_uid},
      {"submitter_gid", job.exec().submitter_gid},
      {"working_dir", job.exec().working_dir},
      {"gang_env", gang_env_name(job.exec().gang_env)},
      {"completions", job.exec().completions.total},
      {"indexed", job.exec().completions.indexed}};
  // Only with a deadline (most jobs have none). A body encoded before submission holds
  // completeWithin; decode_job() turns it into completeBy with the submit time.
  if (job.complete_by_ns > 0) out["complete_by_ns"] = job.complete_by_ns;
  if (job.complete_within_ns > 0) out["complete_within_ns"] = job.complete_within_ns;
  encode_control(job, out);
  return out;
}

std::string encode_job_body(const Job& job, const Config& config) {
  json j = encode_job(job, config);
  j.erase("id");
  j.erase("name");
  j.erase("submit_ns");
  return proto::dump_json(j);
}

std::string job_json_with(const Job& job, std::string_view body) {
  std::string out;
  out.reserve(body.size() + job.name.size() + 64);
  json_text::key(out, "id", true);
  out.insert(0, 1, '{');
  json_text::num(out, static_cast<int64_t>(job.id));
  json_text::key(out, "name");
  json_text::str(out, job.name);
  json_text::key(out, "submit_ns");
  json_text::num(out, job.submit_ns);
  if (body.size() > 2) out += ',';  // body: "{...}", never empty in practice
  out += body.substr(1);
  return out;
}

std::optional<std::string> time_out_of_bounds(TimeFields points, TimeFields durations) {
  for (const auto& [field, v] : durations)
    if (v < 0 || v > kMaxDurationNs) return std::string(field) + " is outside [0, 10 years]";
  for (const auto& [field, v] : points)
    if (v < 0 || v > kMaxTimePointNs) return std::string(field) + " is outside [0, 2200-01-01]";
  return std::nullopt;
}

namespace {

Result<PodSet> decode_pod_set(const json& p, const Config& config) {
  PodSet ps;
  ps.name = p.value("name", "main");
  ps.count = p.value("count", 1);
  auto req = decode_requests(p.at("requests"), config);
  if (!req) return Error{req.error()};
  ps.requests = *req;
  ps.gpus = p.value("gpus", 0);
  ps.gpu_milli = p.value("gpu_milli", 1000);
  ps.exec_mut().command = p.value("command", std::vector<std::string>{});
  ps.exec_mut().image = p.value("image", std::string());
  ps.exec_mut().image_args_only = p.value("image_args_only", false);
  decode_env(p, "env", ps.exec_mut().env);
  ps.indexed_group = p.value("indexed_group", 0);
  ps.min_count = p.value("min_count", 0);
  ps.max_per_node = p.value("max_per_node", 0);
  if (ps.max_per_node < 0)
    return Error{"pod set " + ps.name + ": max_per_node " + std::to_string(ps.max_per_node) +
                 " is negative"};
  if (ps.min_count < 0 || ps.min_count > ps.count)
    return Error{"pod set " + ps.name + ": min_count " + std::to_string(ps.min_count) +
                 " is not between 1 and its count " + std::to_string(ps.count)};
  return ps;
}

Result<TopologyRequest> decode_topology(const json& t, const Config& config) {
  TopologyRequest out;
  auto level_of = [&](const json& name) -> Result<int32_t> {
    const std::string level = name.get<std::string>();
    const int idx = config.cluster.level_index(level);
    if (idx < 0) return Error{"topology level \"" + level + "\" is not in the cluster"};
    return static_cast<int32_t>(idx);
  };
  if (t.contains("level") && !t["level"].is_null()) {
    auto idx = level_of(t["level"]);
    if (!idx) return Error{idx.error()};
    out.level = *idx;
  }
  out.required = t.value("required", false);
  if (t.contains("slices"))
    for (const auto& sl : t["slices"]) {
      auto idx = level_of(sl.at("level"));
      if (!idx) return Error{idx.error()};
      out.slices.push_back({*idx, sl.at("size").get<int32_t>()});
    }
  return out;
}

}  // namespace

Result<Job> decode_job(const json& j, const Config& config) {
  try {
    Job job;
    job.id = j.at("id").get<JobId>();
    job.name = j.value("name", "");
    job.namespace_ = j.value("namespace", "default");
    job.queue = j.value("queue", "default");
    job.exec_mut().priority_class = j.value("priority_class", "");
    job.priority = j.value("priority", 0);
    job.preemptible = j.value("preemptible", true);
    job.interactive = j.value("interactive", false);
    for (const auto& p : j.at("pod_sets")) {
      auto ps = decode_pod_set(p, config);
      if (!ps) return Error{"job " + std::to_string(job.id) + ": " + ps.error()};
      job.pod_sets.push_back(std::move(*ps));
    }
    job.allowed_models = j.value("allowed_models", std::vector<std::string>{});
    if (j.contains("topology") && !j["topology"].is_null()) {
      auto topology = decode_topology(j["topology"], config);
      if (!topology) return Error{"job " + std::to_string(job.id) + ": " + topology.error()};
      job.topology = std::move(*topology);
    }
    job.gpu_locality = j.value("gpu_locality", "preferred") == "nvlink"
                           ? GpuLocality::kRequireNvlink
                           : GpuLocality::kPreferred;
    job.walltime_ns = j.value("walltime_ns", int64_t{0});
    job.checkpoint_grace_ns = j.value("checkpoint_grace_ns", int64_t{0});
    job.submit_ns = j.value("submit_ns", int64_t{0});
    job.complete_by_ns = j.value("complete_by_ns", int64_t{0});
    job.complete_within_ns = j.value("complete_within_ns", int64_t{0});
    // The store is the server's own, but nothing read back may overflow the clock later
    // (start + walltime, submit + completeWithin).
    if (auto why = time_out_of_bounds(
            {{"submit_ns", job.submit_ns}, {"complete_by_ns", job.complete_by_ns}},
            {{"walltime_ns", job.walltime_ns},
             {"checkpoint_grace_ns", job.checkpoint_grace_ns},
             {"complete_within_ns", job.complete_within_ns}}))
      return Error{"job " + std::to_string(job.id) + ": " + *why};
    if (j.contains("submit_ns")) resolve_deadline(job);
    job.exec_mut().command = j.value("command", std::vector<std::string>{});
    decode_env(j, "env", job.exec_mut().env);
    const std::string gang_env = j.value("gang_env", "");
    job.exec_mut().gang_env = gang_env == "torch" ? GangEnv::kTorch
                              : gang_env == "mpi" ? GangEnv::kMpi
                                                  : GangEnv::kNone;
    job.exec_mut().completions.total = j.value("completions", 0);
    job.exec_mut().completions.indexed = j.value("indexed", false);
    // Records written before issue 14 have none: the agent's per-namespace uid.
    job.exec_mut().user = j.value("user", "");
    job.exec_mut().run_as_uid = j.value("run_as_uid", int64_t{-1});
    job.exec_mut().run_as_gid = j.value("run_as_gid", int64_t{-1});
    job.exec_mut().submitter_uid = j.value("submitter_uid", int64_t{-1});
    job.exec_mut().submitter_gid = j.value("submitter_gid", int64_t{-1});
    job.exec_mut().working_dir = j.value("working_dir", "");
    decode_control(j, job);
    return job;
  } catch (const json::exception& e) {
    return Error{std::string("malformed stored job: ") + e.what()};
  }
}

namespace {

// [{"node", "pod_set", "pod_index", "gpus": [[gpu, mig_slice, milli], ...]}, ...]
void encode_placement(std::string& out, const Placement& placement, const Config& config) {
  namespace jt = json_text;
  out += '[';
  for (size_t i = 0; i < placement.pods.size(); ++i) {
    const auto& pp = placement.pods[i];
    out += i ? "," : "";
    out += '{';
    jt::key(out, "node", true);
    jt::str(out, config.cluster.nodes[static_cast<size_t>(pp.node)].name);
    jt::key(out, "pod_set");
    jt::num(out, pp.pod_set);
    jt::key(out, "pod_index");
    jt::num(out, pp.pod_index);
    jt::key(out, "gpus");
    out += '[';
    for (size_t g = 0; g < pp.gpus.size(); ++g) {
      out += g ? ",[" : "[";
      jt::num(out, pp.gpus[g].gpu);
      out += ',';
      jt::num(out, pp.gpus[g].mig_slice);
      out += ',';
      jt::num(out, pp.gpus[g].milli);
      out += ']';
    }
    out += "]}";
  }
  out += ']';
}

}  // namespace

// Written by hand (json_text.h): every admitted job's record carries it.
std::string encode_admission(const Admission& a, const Config& config) {
  namespace jt = json_text;
  std::string out = "{";
  jt::key(out, "queue", true);
  jt::str(out, config.cluster_queues[static_cast<size_t>(a.queue)].name);
  // Flavors per resource group, null where unused.
  auto flavor_list = [&](const std::vector<FlavorId>& flavors) {
    out += '[';
    for (size_t i = 0; i < flavors.size(); ++i) {
      if (i) out += ',';
      if (flavors[i] < 0)
        out += "null";
      else
        jt::str(out, config.flavors[static_cast<size_t>(flavors[i])].name);
    }
    out += ']';
  };
  jt::key(out, "flavors");
  flavor_list(a.flavors);
  jt::key(out, "usage");
  out += '[';
  for (size_t i = 0; i < a.usage.size(); ++i) {
    const auto& u = a.usage[i];
    out += i ? "," : "";
    out += '{';
    jt::key(out, "flavor", true);
    jt::str(out, config.flavors[static_cast<size_t>(u.flavor)].name);
    jt::key(out, "resource");
    jt::str(out, config.resources.name(u.resource));
    jt::key(out, "amount");
    jt::num(out, u.amount);
    out += '}';
  }
  out += ']';
  jt::key(out, "pods");
  encode_placement(out, a.placement, config);
  jt::key(out, "borrowing");
  jt::boolean(out, a.borrowing);
  // Only where pod sets got different flavors (records written before have none).
  if (!a.pod_set_flavors.empty()) {
    jt::key(out, "pod_set_flavors");
    out += '[';
    for (size_t i = 0; i < a.pod_set_flavors.size(); ++i) {
      if (i) out += ',';
      flavor_list(a.pod_set_flavors[i]);
    }
    out += ']';
  }
  // How it runs where that differs from what it asked for (restored as such after a restart).
  if (a.shape >= 0) {
    jt::key(out, "shape");
    jt::num(out, a.shape);
  }
  if (a.best_effort) {
    jt::key(out, "best_effort");
    jt::boolean(out, true);
  }
  if (!a.pod_set_counts.empty()) {
    jt::key(out, "pod_set_counts");
    out += '[';
    for (size_t i = 0; i < a.pod_set_counts.size(); ++i) {
      if (i) out += ',';
      jt::num(out, a.pod_set_counts[i]);
    }
    out += ']';
  }
  out += '}';
  return out;
}

Result<Admission> decode_admission(const json& j, const Config& config) {
  try {
    Admission a;
    const std::string queue = j.at("queue").get<std::string>();
    auto q = config.find_cluster_queue(queue);
    if (!q) return Error{"ClusterQueue \"" + queue + "\" is not in the configuration"};
    a.queue = *q;
    auto flavor = [&](const std::string& name) -> Result<FlavorId> {
      auto f = config.find_flavor(name);
      if (!f) return Error{"ResourceFlavor \"" + name + "\" is not in the configuration"};
      return *f;
    };
    auto flavor_ids = [&](const json& list, std::vector<FlavorId>* out) -> Result<bool> {
      for (const auto& f : list) {
        if (f.is_null()) {
          out->push_back(-1);
          continue;
        }
        auto id = flavor(f.get<std::string>());
        if (!id) return Error{id.error()};
        out->push_back(*id);
      }
      return true;
    };
    if (auto ok = flavor_ids(j.at("flavors"), &a.flavors); !ok) return Error{ok.error()};
    if (j.contains("pod_set_flavors"))
      for (const auto& per : j.at("pod_set_flavors"))
        if (auto ok = flavor_ids(per, &a.pod_set_flavors.emplace_back()); !ok)
          return Error{ok.error()};
    for (const auto& u : j.at("usage")) {
      auto f = flavor(u.at("flavor").get<std::string>());
      if (!f) return Error{f.error()};
      const std::string rname = u.at("resource").get<std::string>();
      auto r = config.resources.find(rname);
      if (!r) return Error{"resource \"" + rname + "\" is not in the configuration"};
      a.usage.push_back({*f, *r, u.at("amount").get<int64_t>()});
    }
    for (const auto& p : j.at("pods")) {
      PodPlacement pp;
      const std::string node = p.at("node").get<std::string>();
      pp.node = -1;
      for (size_t n = 0; n < config.cluster.nodes.size(); ++n)
        if (config.cluster.nodes[n].name == node) pp.node = static_cast<NodeId>(n);
      if (pp.node < 0) return Error{"node \"" + node + "\" is not in the cluster"};
      pp.pod_set = p.at("pod_set").get<int32_t>();
      pp.pod_index = p.at("pod_index").get<int32_t>();
      for (const auto& g : p.at("gpus"))
        pp.gpus.push_back({g.at(0).get<int16_t>(), g.at(1).get<int16_t>(), g.at(2).get<int32_t>()});
      a.placement.pods.push_back(std::move(pp));
    }
    a.borrowing = j.value("borrowing", false);
    a.shape = j.value("shape", int32_t{-1});
    a.best_effort = j.value("best_effort", false);
    if (j.contains("pod_set_counts"))
      a.pod_set_counts = j.at("pod_set_counts").get<std::vector<int32_t>>();
    return a;
  } catch (const json::exception& e) {
    return Error{std::string("malformed stored admission: ") + e.what()};
  }
}

int64_t job_gpu_milli(const Job& job, const Config& config) {
  int64_t total = 0;
  for (const auto& ps : job.pod_sets) {
    int64_t milli = ps.requests[kGpu];
    for (int i = 0; i < config.resources.size(); ++i) {
      const auto r = static_cast<ResourceId>(i);
      if (ps.requests[r] <= 0 || !config.resources.is_mig(r)) continue;
      if (const auto shape = mig_shape(config.resources.name(r)))
        milli += ps.requests[r] * shape->compute_slices / 7;
    }
    total += milli * ps.count;
  }
  return total;
}

}  // namespace sluice::server
