// `sluice advise`: the report of GET /v1/advise as text (client_advise.h).
#include "cli/client_advise.h"

#include "cli/client_table.h"
#include "cli/client_views.h"
#include "proto/json_fields.h"

namespace sluice::cli {

using nlohmann::json;
using proto::int_of;
using proto::items_of;
using proto::str_of;

std::string advise_text(const json& report) {
  Table totals({{"NAMESPACE"},
                {"USER"},
                {"JOBS", 0, true},
                {"MEASURED", 0, true},
                {"GPU-H REQUESTED", 0, true},
                {"GPU-H MEASURED", 0, true},
                {"GPU-H USED", 0, true}});
  for (const auto& t : items_of(report, "totals"))
    totals.add_row({str_of(t, "namespace"), str_of(t, "user"), std::to_string(int_of(t, "jobs")),
                    std::to_string(int_of(t, "measured_jobs")),
                    format_decimal(t.value("gpu_hours_requested", 0.0), 3),
                    format_decimal(t.value("gpu_hours_measured", 0.0), 3),
                    format_decimal(t.value("gpu_hours_used", 0.0), 3)});
  std::string out = totals.render();
  std::string over;
  for (const auto& j : items_of(report, "jobs"))
    if (!str_of(j, "advice").empty())
      over += "  " + std::to_string(int_of(j, "id")) + " " + str_of(j, "namespace") + "/" +
              str_of(j, "name") + " (" + str_of(j, "user") + "): " + str_of(j, "advice") + "\n";
  const int pct = static_cast<int>(report.value("headroom", 0.2) * 100 + 0.5);
  out += over.empty() ? "\nno job with a measured use would fit a smaller GPU or MIG slice (" +
                            std::to_string(pct) + "% headroom)\n"
                      : "\nover-requesting (peak + " + std::to_string(pct) +
                            "% headroom fits a smaller GPU or MIG slice):\n" + over;
  return out;
}

}  // namespace sluice::cli
