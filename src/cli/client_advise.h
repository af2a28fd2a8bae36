#pragma once
// `sluice advise` (docs/cli.md): right-sizing from measured GPU use. Pure: the server's job and
// node listings (and the caller's clock) in, a report out, so the tests pin it.
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::cli {

struct AdviseOptions {
  double headroom = 0.2;  // a job fits a shape when its peak plus this share fits its memory
  double now_unix_s = 0;  // running jobs' GPU-hours are counted until now
};

// {"jobs":[JobView...]} and {"nodes":[NodeView...]} -> {"headroom", "shapes": [{name,
// memory_mib, mig}], "totals": [{namespace, user, jobs, measured_jobs, gpu_hours_requested,
// gpu_hours_measured, gpu_hours_used}], "jobs": [{id, name, namespace, user, gpus, model,
// gpu_memory_mib, peak_mib, mean_mib, mean_util_pct, fits, advice}]}: every job with a measured
// use, the over-requesting ones with the smallest shape that fits (fits: null otherwise).
nlohmann::json advise_report(const nlohmann::json& jobs, const nlohmann::json& nodes,
                             const AdviseOptions& options);

// The report as two tables: GPU-hours per namespace and user; the jobs that would fit smaller.
std::string advise_text(const nlohmann::json& report);

}  // namespace sluice::cli
