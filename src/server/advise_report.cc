// GET /v1/advise (`sluice advise`, the dashboard): GPU-hours requested against used per namespace
// and user, and the jobs whose measured peak would fit a smaller GPU or a MIG slice of this
// cluster (advise_report.h).
#include "server/advise_report.h"

#include <map>
#include <utility>
#include <vector>

#include "core/model/right_size.h"
#include "proto/json_fields.h"

namespace sluice::server {

using nlohmann::json;
using proto::int_of;
using proto::items_of;
using proto::str_of;

namespace {

// The cluster's GPU shapes: each model with its memory, and each configured MIG profile.
std::vector<GpuShape> cluster_shapes(const json& nodes) {
  std::vector<GpuShape> shapes;
  for (const auto& n : items_of(nodes, "nodes")) {
    if (!n.is_object() || !n.contains("gpus") || !n["gpus"].is_array()) continue;
    for (const auto& g : n["gpus"]) {
      shapes.push_back({str_of(g, "model"), int_of(g, "memory_mib")});
      if (g.contains("mig") && g["mig"].is_array())
        for (const auto& p : g["mig"])
          if (p.is_string())
            if (auto s = mig_shape(p.get<std::string>())) shapes.push_back(*s);
    }
  }
  return distinct_shapes(std::move(shapes));
}

// The GPU a job's first pod ran on (model, memory) from the node listing; {"", 0}: unknown.
std::pair<std::string, int64_t> job_gpu(const json& job, const json& nodes) {
  if (!job.contains("placement") || !job["placement"].is_array() || job["placement"].empty())
    return {"", 0};
  const json& pod = job["placement"][0];
  const std::string node = str_of(pod, "node");
  int64_t index = 0;
  if (pod.contains("gpus") && pod["gpus"].is_array() && !pod["gpus"].empty() &&
      pod["gpus"][0].is_number_integer())
    index = pod["gpus"][0].get<int64_t>();
  for (const auto& n : items_of(nodes, "nodes")) {
    if (str_of(n, "name") != node || !n.contains("gpus") || !n["gpus"].is_array()) continue;
    for (const auto& g : n["gpus"])
      if (int_of(g, "index") == index) return {str_of(g, "model"), int_of(g, "memory_mib")};
  }
  return {"", 0};
}

// A time of a JobView: Unix seconds, or null (0).
double seconds_of(const json& job, const char* key) {
  return job.is_object() && job.contains(key) && job[key].is_number() ? job[key].get<double>() : 0;
}

// Seconds the job held its GPUs: from its start to its end (or now).
int64_t run_seconds(const json& job, double now) {
  const double start = seconds_of(job, "start_time");
  if (start <= 0) return 0;
  double end = seconds_of(job, "end_time");
  if (end <= 0) end = now;
  return end > start ? static_cast<int64_t>(end - start) : 0;
}

}  // namespace

json advise_report(const json& jobs, const json& nodes, const AdviseOptions& options) {
  const auto shapes = cluster_shapes(nodes);
  json report = {{"headroom", options.headroom},
                 {"shapes", json::array()},
                 {"totals", json::array()},
                 {"jobs", json::array()}};
  for (const auto& s : shapes)
    report["shapes"].push_back({{"name", s.name}, {"memory_mib", s.memory_mib}, {"mig", s.mig}});
  struct Totals {
    int64_t jobs = 0, measured = 0;
    double requested = 0, measured_hours = 0, used = 0;
  };
  std::map<std::pair<std::string, std::string>, Totals> totals;
  for (const auto& j : items_of(jobs, "jobs")) {
    const double gpus = static_cast<double>(int_of(j, "gpu_milli")) / 1000.0;
    const int64_t secs = run_seconds(j, options.now_unix_s);
    if (gpus <= 0 || secs <= 0) continue;  // never held a GPU
    auto& t = totals[{str_of(j, "namespace"), str_of(j, "user")}];
    ++t.jobs;
    const json use = j.value("gpu_use", json(nullptr));
    const int32_t util = static_cast<int32_t>(int_of(use, "mean_util_pct"));
    const GpuHours hours = gpu_hours(gpus, secs, util);
    t.requested += hours.requested;
    if (!use.is_object()) continue;
    ++t.measured;
    t.measured_hours += hours.requested;
    t.used += hours.used;
    const auto [model, memory] = job_gpu(j, nodes);
    const int64_t peak = int_of(use, "peak_mib");
    const auto fit = smallest_fit(shapes, peak, memory, options.headroom);
    const int64_t per_pod = j.contains("placement") && j["placement"].is_array() &&
                                    !j["placement"].empty() && j["placement"][0].contains("gpus")
                                ? static_cast<int64_t>(j["placement"][0]["gpus"].size())
                                : 0;
    std::string advice;
    if (fit)
      advice = "requested " + std::to_string(per_pod) + " " + model + " " +
               std::to_string(memory / 1024) + "GB, peak " + mib_text(peak) + ": fits " + fit->name;
    report["jobs"].push_back({{"id", j.value("id", json(nullptr))},
                              {"name", str_of(j, "name")},
                              {"namespace", str_of(j, "namespace")},
                              {"user", str_of(j, "user")},
                              {"gpus", gpus},
                              {"model", model},
                              {"gpu_memory_mib", memory},
                              {"peak_mib", peak},
                              {"mean_mib", int_of(use, "mean_mib")},
                              {"mean_util_pct", util},
                              {"fits", fit ? json(fit->name) : json(nullptr)},
                              {"advice", advice}});
  }
  for (const auto& [key, t] : totals)
    report["totals"].push_back({{"namespace", key.first},
                                {"user", key.second},
                                {"jobs", t.jobs},
                                {"measured_jobs", t.measured},
                                {"gpu_hours_requested", t.requested},
                                {"gpu_hours_measured", t.measured_hours},
                                {"gpu_hours_used", t.used}});
  return report;
}

}  // namespace sluice::server
