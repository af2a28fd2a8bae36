#pragma once
// Right-sizing from measured GPU use (GET /v1/advise: `sluice advise`, the dashboard; docs/cli.md).
// Pure: job and node views (and a clock) in, a report out, so the tests pin it.
#include <nlohmann/json.hpp>

namespace sluice::server {

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

}  // namespace sluice::server
