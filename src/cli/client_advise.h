#pragma once
// `sluice advise` (docs/cli.md): right-sizing from measured GPU use. The server computes the
// report (GET /v1/advise, server/advise_report.h); this prints it.
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::cli {

// The report as two tables: GPU-hours per namespace and user; the jobs that would fit smaller.
std::string advise_text(const nlohmann::json& report);

}  // namespace sluice::cli
