#pragma once
// JSON forms of scheduling decisions, shared by `sluice plan --json` and the scenario tests.
#include <nlohmann/json.hpp>

#include "core/cycle/scheduler.h"
#include "core/decision/decisions.h"

namespace sluice::cli {

nlohmann::json placement_json(const Placement& p, const Config& config);
nlohmann::json admission_json(const Admission& a, const Scheduler& s, const std::string& job_name);
nlohmann::json cycle_json(const CycleResult& r, const Scheduler& s,
                          const std::function<std::string(JobId)>& job_name);
// "node-1[0,1,2,3] node-2[0:500m]" for tables.
std::string placement_text(const Placement& p, const Config& config);

}  // namespace sluice::cli
