#pragma once
// The web dashboard's files (src/server/dashboard/, and Chart.js where the build found it),
// embedded at build time by cmake/embed_dashboard.cmake: `sluice serve` serves them at / and
// /ui/NAME with no file and no CDN at run time (docs/dashboard.md).
#include <string>
#include <vector>

namespace sluice::server {

struct DashboardAsset {
  std::string name;  // "index.html", "app.js", "chart.js", ...
  std::string content_type;
  std::string body;
};

const std::vector<DashboardAsset>& dashboard_assets();
// Whether Chart.js was embedded (the build found it: docs/dashboard.md, "Building").
bool dashboard_has_charts();

}  // namespace sluice::server
