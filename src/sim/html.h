#pragma once
// The HTML report (`--html`): one self-contained page, inline CSS and SVG, no script, no
// network. Every text from the input (file names, queue and class names) is escaped. Same
// figures -> the same bytes: nothing from the host goes in, numbers are printed with fixed
// formats, everything is laid out in name or priority order.
#include <string>
#include <utility>
#include <vector>

#include "sim/report.h"

namespace sluice::sim {

// `sluice sim run --html`: the figures table, GPU utilisation and pending jobs per priority
// class over time (needs Figures::sim.series, i.e. SimOptions::record_series), the wait-time
// CDF per class, share against entitlement per queue, preemptions and GPU-hours lost,
// GPU-hours per queue (chargeback).
std::string to_html(const Figures& f, const std::string& title);

// `sluice sim compare --html`: a side-by-side table of the variants, then their utilisation,
// pending jobs and wait CDFs overlaid, then each variant's own sections.
std::string compare_html(const std::vector<std::pair<std::string, const Figures*>>& variants,
                         const std::string& title);

std::string html_escape(const std::string& s);

}  // namespace sluice::sim
