#include "sim/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace sluice::sim {

namespace {

constexpr int kBins = 600;  // points per curve over time
// Colour-blind-safe palette (Okabe-Ito), in a fixed order.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#F0E442", "#000000"};
const char* colour(size_t i) {
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

std::string num(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string dur(double s) {
  if (s < 120) return num("%.0f s", s);
  if (s < 7200) return num("%.1f min", s / 60);
  if (s < 2 * 86400) return num("%.1f h", s / 3600);
  return num("%.1f d", s / 86400);
}

// A "nice" tick step for a range: 1, 2 or 5 x 10^k, about `n` ticks.
double nice_step(double range, int n) {
  if (!(range > 0)) return 1;
  const double raw = range / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string tick_label(double v) {
  if (std::fabs(v) >= 1e6) return num("%.3g", v);
  if (std::fabs(v - std::round(v)) < 1e-9) return num("%.0f", v);
  return num("%.3g", v);
}

struct Line {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
};

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;  // log10(1 + v): waits, where 0 is common
  std::string label;
};

double tx(const Axis& a, double v) {
  return a.log ? std::log10(1 + std::max(0.0, v)) : v;
}

constexpr int kW = 660, kH = 280, kL = 64, kR = 16, kT = 34, kB = 46;

std::string legend(const std::vector<std::string>& names, const std::vector<bool>& dashed) {
  std::ostringstream o;
  double x = kL;
  int row = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 26 + 7.0 * static_cast<double>(std::min<size_t>(names[i].size(), 28));
    if (x + w > kW - kR && x > kL) {
      x = kL;
      ++row;
    }
    const double y = 14 + 13.0 * row;
    o << "<line x1=\"" << num("%.1f", x) << "\" y1=\"" << num("%.1f", y - 4) << "\" x2=\""
      << num("%.1f", x + 16) << "\" y2=\"" << num("%.1f", y - 4) << "\" stroke=\"" << colour(i)
      << "\" stroke-width=\"3\""
      << (dashed.size() > i && dashed[i] ? " stroke-dasharray=\"5,3\"" : "") << "/><text x=\""
      << num("%.1f", x + 20) << "\" y=\"" << num("%.1f", y) << "\">"
      << html_escape(names[i].size() > 28 ? names[i].substr(0, 27) + "~" : names[i]) << "</text>";
    x += w;
  }
  return o.str();
}

std::string line_chart(const std::string& title, const Axis& ax, const Axis& ay,
                       const std::vector<Line>& lines, bool step) {
  std::ostringstream o;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  const double x0 = tx(ax, ax.lo), x1 = std::max(tx(ax, ax.hi), x0 + 1e-9);
  const double y0 = ay.lo, y1 = std::max(ay.hi, ay.lo + 1e-9);
  auto X = [&](double v) { return kL + (tx(ax, v) - x0) / (x1 - x0) * pw; };
  auto Y = [&](double v) { return kT + ph - (std::clamp(v, y0, y1) - y0) / (y1 - y0) * ph; };
  o << "<figure><figcaption>" << html_escape(title) << "</figcaption><svg viewBox=\"0 0 " << kW
    << " " << kH << "\" width=\"" << kW << "\" height=\"" << kH
    << "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\"><title>" << html_escape(title)
    << "</title>";
  // Grid and ticks.
  const double ys = nice_step(y1 - y0, 5);
  for (double v = std::ceil(y0 / ys) * ys; v <= y1 + ys * 1e-6; v += ys)
    o << "<line class=\"g\" x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << num("%.1f", Y(v))
      << "\" y2=\"" << num("%.1f", Y(v)) << "\"/><text class=\"yt\" x=\"" << kL - 4 << "\" y=\""
      << num("%.1f", Y(v) + 4) << "\">" << tick_label(v) << "</text>";
  std::vector<std::pair<double, std::string>> xt;
  if (ax.log) {
    const std::pair<double, const char*> kLogTicks[] = {
        {0, "0"},       {10, "10s"},   {60, "1m"},      {600, "10m"},     {3600, "1h"},
        {36000, "10h"}, {86400, "1d"}, {864000, "10d"}, {8640000, "100d"}};
    for (const auto& [v, l] : kLogTicks)
      if (v >= ax.lo && v <= ax.hi) xt.emplace_back(v, l);
  } else {
    const double xs = nice_step(ax.hi - ax.lo, 6);
    for (double v = std::ceil(ax.lo / xs) * xs; v <= ax.hi + xs * 1e-6; v += xs)
      xt.emplace_back(v, tick_label(v));
  }
  for (const auto& [v, l] : xt)
    o << "<line class=\"g\" y1=\"" << kT << "\" y2=\"" << kT + ph << "\" x1=\"" << num("%.1f", X(v))
      << "\" x2=\"" << num("%.1f", X(v)) << "\"/><text class=\"xt\" x=\"" << num("%.1f", X(v))
      << "\" y=\"" << num("%.1f", kT + ph + 14) << "\">" << html_escape(l) << "</text>";
  o << "<rect class=\"frame\" x=\"" << kL << "\" y=\"" << kT << "\" width=\"" << pw
    << "\" height=\"" << ph << "\"/>";
  o << "<text class=\"xl\" x=\"" << num("%.1f", kL + pw / 2) << "\" y=\"" << kH - 8 << "\">"
    << html_escape(ax.label) << "</text><text class=\"yl\" transform=\"translate(14,"
    << num("%.1f", kT + ph / 2) << ") rotate(-90)\">" << html_escape(ay.label) << "</text>";
  // Curves.
  std::vector<std::string> names;
  std::vector<bool> dashed;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    names.push_back(l.name);
    dashed.push_back(l.dashed);
    if (l.x.empty()) continue;
    o << "<polyline fill=\"none\" stroke=\"" << colour(i) << "\" stroke-width=\"1.6\""
      << (l.dashed ? " stroke-dasharray=\"5,3\"" : "") << " points=\"";
    for (size_t k = 0; k < l.x.size(); ++k) {
      if (step && k > 0) o << num("%.1f", X(l.x[k])) << "," << num("%.1f", Y(l.y[k - 1])) << " ";
      o << num("%.1f", X(l.x[k])) << "," << num("%.1f", Y(l.y[k])) << " ";
    }
    o << "\"/>";
  }
  if (lines.size() > 1 || (lines.size() == 1 && !lines[0].name.empty())) o << legend(names, dashed);
  o << "</svg></figure>\n";
  return o.str();
}

struct Bars {
  std::string name;
  std::vector<double> v;  // one per category
};

std::string bar_chart(const std::string& title, const std::vector<std::string>& cats,
                      const std::vector<Bars>& bars, const std::string& ylabel) {
  std::ostringstream o;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  double hi = 0;
  for (const auto& b : bars)
    for (double v : b.v) hi = std::max(hi, v);
  if (!(hi > 0)) hi = 1;
  const double ys = nice_step(hi, 5);
  hi = std::ceil(hi / ys) * ys;
  auto Y = [&](double v) { return kT + ph - v / hi * ph; };
  o << "<figure><figcaption>" << html_escape(title) << "</figcaption><svg viewBox=\"0 0 " << kW
    << " " << kH << "\" width=\"" << kW << "\" height=\"" << kH
    << "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\"><title>" << html_escape(title)
    << "</title>";
  for (double v = 0; v <= hi + ys * 1e-6; v += ys)
    o << "<line class=\"g\" x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << num("%.1f", Y(v))
      << "\" y2=\"" << num("%.1f", Y(v)) << "\"/><text class=\"yt\" x=\"" << kL - 4 << "\" y=\""
      << num("%.1f", Y(v) + 4) << "\">" << tick_label(v) << "</text>";
  const double cw = cats.empty() ? pw : pw / static_cast<double>(cats.size());
  const double bw = cw * 0.8 / static_cast<double>(std::max<size_t>(1, bars.size()));
  for (size_t c = 0; c < cats.size(); ++c) {
    for (size_t b = 0; b < bars.size(); ++b) {
      const double v = c < bars[b].v.size() ? bars[b].v[c] : 0;
      const double x = kL + cw * static_cast<double>(c) + cw * 0.1 + bw * static_cast<double>(b);
      o << "<rect x=\"" << num("%.1f", x) << "\" y=\"" << num("%.1f", Y(v)) << "\" width=\""
        << num("%.1f", bw) << "\" height=\"" << num("%.1f", kT + ph - Y(v)) << "\" fill=\""
        << colour(b) << "\"><title>" << html_escape(cats[c] + " / " + bars[b].name) << ": "
        << num("%.4g", v) << "</title></rect>";
    }
    // Labels fit their column (about 6.5 px a character at 11 px); the full name is in the
    // bars' tooltips.
    const size_t fit = std::max<size_t>(3, static_cast<size_t>(cw / 6.5));
    const std::string l = cats[c].size() > fit ? cats[c].substr(0, fit - 1) + "~" : cats[c];
    o << "<text class=\"xt\" x=\"" << num("%.1f", kL + cw * (static_cast<double>(c) + 0.5))
      << "\" y=\"" << num("%.1f", kT + ph + 14) << "\">" << html_escape(l) << "</text>";
  }
  o << "<rect class=\"frame\" x=\"" << kL << "\" y=\"" << kT << "\" width=\"" << pw
    << "\" height=\"" << ph << "\"/><text class=\"yl\" transform=\"translate(14,"
    << num("%.1f", kT + ph / 2) << ") rotate(-90)\">" << html_escape(ylabel) << "</text>";
  std::vector<std::string> names;
  for (const auto& b : bars) names.push_back(b.name);
  if (bars.size() > 1) o << legend(names, {});
  o << "</svg></figure>\n";
  return o.str();
}

// The series as time-weighted means over kBins equal bins of [first, last] (hours from first).
struct Binned {
  std::vector<double> hours;
  std::vector<double> util_pct;              // allocated / capacity
  std::vector<std::vector<double>> pending;  // [class][bin]
};

Binned bin(const Figures& f) {
  Binned b;
  const Series& s = f.sim.series;
  const TimeNs t0 = f.sim.first_ns, t1 = std::max(f.sim.last_ns, t0 + 1);
  const size_t k = s.classes.size();
  b.pending.assign(k, {});
  if (s.t_ns.empty()) return b;
  const double w = static_cast<double>(t1 - t0) / kBins;
  const double cap = static_cast<double>(f.sim.capacity_gpu_milli);
  size_t i = 0;  // the point in force at the bin's start
  for (int n = 0; n < kBins; ++n) {
    const double lo = static_cast<double>(t0) + w * n, hi = lo + w;
    double used = 0;
    std::vector<double> pend(k, 0);
    while (i + 1 < s.t_ns.size() && static_cast<double>(s.t_ns[i + 1]) <= lo) ++i;
    for (size_t j = i; j < s.t_ns.size(); ++j) {
      const double a = std::max(lo, static_cast<double>(s.t_ns[j]));
      const double e =
          j + 1 < s.t_ns.size() ? std::min(hi, static_cast<double>(s.t_ns[j + 1])) : hi;
      if (a >= hi) break;
      if (e <= a) continue;
      const double frac = (e - a) / w;
      used += frac * static_cast<double>(s.used_gpu_milli[j]);
      for (size_t c = 0; c < k; ++c) pend[c] += frac * s.pending[j * k + c];
    }
    b.hours.push_back((lo + w / 2 - static_cast<double>(t0)) / kNs / 3600);
    b.util_pct.push_back(cap > 0 ? 100 * used / cap : 0);
    for (size_t c = 0; c < k; ++c) b.pending[c].push_back(pend[c]);
  }
  return b;
}

// Classes highest priority first, then by name.
std::vector<std::string> classes_by_priority(const Figures& f) {
  std::vector<std::pair<int32_t, std::string>> v;
  for (const auto& [name, s] : f.by_priority_class) v.emplace_back(-f.class_value.at(name), name);
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (const auto& [p, n] : v) out.push_back(n);
  return out;
}

Line cdf_line(const std::string& name, const JobStats& s) {
  Line l;
  l.name = name;
  for (size_t i = 0; i < s.wait_q.size(); ++i) {
    l.x.push_back(s.wait_q[i]);
    l.y.push_back(static_cast<double>(i));
  }
  return l;
}

double max_wait_q(const JobStats& s) {
  return s.wait_q.empty() ? 0 : s.wait_q.back();
}

constexpr const char* kStyle = R"(<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.sub{color:#666;margin-bottom:12px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.grid{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0}figcaption{font-weight:600;margin:4px 0}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .yt{text-anchor:end}svg .xt,svg .xl,svg .yl{text-anchor:middle}
svg .g{stroke:#e6e6e6}svg .frame{fill:none;stroke:#999}
.note{color:#666;font-size:12px}
</style>
)";

std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         html_escape(title) + "</title>\n" + kStyle + "</head><body>\n<h1>" + html_escape(title) +
         "</h1>\n";
}

std::string inputs_line(const Figures& f) {
  std::ostringstream o;
  o << "<div class=\"sub\">trace " << html_escape(f.inputs.trace) << " ("
    << html_escape(f.inputs.trace_format) << "), seed " << f.inputs.seed << ", " << f.inputs.rows
    << " rows (" << f.inputs.bad_rows << " bad, skipped), " << f.capacity_gpus << " GPUs</div>\n";
  for (const auto& e : f.inputs.bad_row_examples)
    o << "<div class=\"note\">bad row skipped: " << html_escape(e) << "</div>\n";
  return o.str();
}

std::string figures_table(const Figures& f) {
  std::ostringstream o;
  auto row = [&](const std::string& k, const std::string& v) {
    o << "<tr><td>" << html_escape(k) << "</td><td>" << html_escape(v) << "</td></tr>";
  };
  o << "<table><tr><th>figure</th><th>value</th></tr>";
  row("utilisation (allocated GPU-time / capacity x busy span)",
      num("%.1f%%", 100 * f.utilisation));
  row("busy span", dur(f.busy_span_s));
  row("jobs (rejected / never started / finished)",
      std::to_string(f.jobs) + " (" + std::to_string(f.rejected) + " / " +
          std::to_string(f.never_started) + " / " + std::to_string(f.overall.finished) + ")");
  row("GPU-hours allocated", num("%.1f", f.gpu_hours));
  row("wait mean / p50 / p99 / max", dur(f.overall.wait_mean_s) + " / " +
                                         dur(f.overall.wait_p50_s) + " / " +
                                         dur(f.overall.wait_p99_s) + " / " + dur(f.max_wait_s));
  row("JCT mean / p50 / p99", dur(f.overall.jct_mean_s) + " / " + dur(f.overall.jct_p50_s) + " / " +
                                  dur(f.overall.jct_p99_s));
  row("preemptions", std::to_string(f.sim.preemptions));
  row("GPU-hours lost to preemption", num("%.1f", f.overall.lost_gpu_hours));
  row("requeued by node failure", std::to_string(f.sim.requeued));
  row("Jain fairness of share/entitlement (whole run)", num("%.3f", f.jain_fairness));
  row("Jain fairness among waiting queues (time average)",
      num("%.3f", f.jain_fairness_contended) + " over " + dur(f.contended_s));
  for (const auto& c : classes_by_priority(f))
    if (const std::string d = deadline_summary(f.by_priority_class.at(c)); !d.empty())
      row("deadlines of class " + c, d);
  row("events / cycles (incremental)", std::to_string(f.sim.events) + " / " +
                                           std::to_string(f.sim.cycles) + " (" +
                                           std::to_string(f.sim.incremental_cycles) + ")");
  o << "</table>\n";
  // Per class and per queue.
  auto stats_head = [&](const char* first, bool queue) {
    o << "<table><tr><th>" << first
      << "</th><th>jobs</th><th>started</th><th>finished</th><th>wait mean</th><th>p50</th>"
         "<th>p99</th><th>max</th><th>JCT mean</th><th>p50</th><th>p99</th><th>GPU-hours</th>"
         "<th>preemptions</th><th>GPU-h lost</th>";
    if (queue) o << "<th>nominal GPUs</th><th>share / entitlement</th>";
    o << "</tr>";
  };
  auto stats_row = [&](const std::string& name, const JobStats& s) {
    o << "<tr><td>" << html_escape(name) << "</td><td>" << s.jobs << "</td><td>" << s.started
      << "</td><td>" << s.finished << "</td><td>" << dur(s.wait_mean_s) << "</td><td>"
      << dur(s.wait_p50_s) << "</td><td>" << dur(s.wait_p99_s) << "</td><td>" << dur(s.wait_max_s)
      << "</td><td>" << dur(s.jct_mean_s) << "</td><td>" << dur(s.jct_p50_s) << "</td><td>"
      << dur(s.jct_p99_s) << "</td><td>" << num("%.1f", s.gpu_hours) << "</td><td>" << s.preemptions
      << "</td><td>" << num("%.1f", s.lost_gpu_hours) << "</td>";
  };
  stats_head("priority class", false);
  for (const auto& c : classes_by_priority(f)) {
    stats_row(c + " (" + std::to_string(f.class_value.at(c)) + ")", f.by_priority_class.at(c));
    o << "</tr>";
  }
  stats_row("all", f.overall);
  o << "</tr></table>\n";
  stats_head("ClusterQueue (team)", true);
  for (const auto& [name, q] : f.by_queue) {
    stats_row(name, q.stats);
    o << "<td>" << num("%.0f", q.nominal_gpus) << "</td><td>"
      << num("%.2f", q.share_over_entitlement) << "</td></tr>";
  }
  o << "</table>\n";
  return o.str();
}

std::string sections(const Figures& f) {
  std::ostringstream o;
  const Binned b = bin(f);
  const auto classes = classes_by_priority(f);
  o << "<h2>Over time</h2>\n<div class=\"grid\">";
  if (b.hours.empty()) {
    o << "<p class=\"note\">No time series recorded.</p>";
  } else {
    const double span_h = f.busy_span_s / 3600;
    Line u{"", b.hours, b.util_pct};
    o << line_chart("GPU utilisation (allocated / capacity, %)",
                    {0, span_h, false, "hours since the first arrival"},
                    {0, 100, false, "% of GPUs allocated"}, {u}, false);
    std::vector<Line> pl;
    double hi = 1;
    for (const auto& c : classes) {
      const auto it = std::find(f.sim.series.classes.begin(), f.sim.series.classes.end(), c);
      if (it == f.sim.series.classes.end()) continue;
      const auto& v = b.pending[static_cast<size_t>(it - f.sim.series.classes.begin())];
      for (double x : v) hi = std::max(hi, x);
      pl.push_back({c, b.hours, v});
    }
    o << line_chart("Pending jobs per priority class (time average per bin)",
                    {0, span_h, false, "hours since the first arrival"},
                    {0, hi * 1.05, false, "pending jobs"}, pl, false);
  }
  o << "</div>\n<h2>Waiting</h2>\n<div class=\"grid\">";
  std::vector<Line> cdf;
  double wmax = 60;
  for (const auto& c : classes) {
    const JobStats& s = f.by_priority_class.at(c);
    if (s.wait_q.empty()) continue;
    cdf.push_back(cdf_line(c, s));
    wmax = std::max(wmax, max_wait_q(s));
  }
  o << line_chart("Wait-time CDF per priority class", {0, wmax, true, "wait (log scale)"},
                  {0, 100, false, "% of started jobs"}, cdf, false);
  o << "</div>\n<h2>Teams</h2>\n<div class=\"grid\">";
  std::vector<std::string> qs;
  Bars share{"share of GPU-hours", {}}, ent{"entitlement (nominal share)", {}};
  Bars hours{"GPU-hours", {}}, lost{"lost to preemption", {}};
  double total_nominal = 0;
  for (const auto& [n, q] : f.by_queue) total_nominal += q.nominal_gpus;
  for (const auto& [n, q] : f.by_queue) {
    qs.push_back(n);
    share.v.push_back(f.gpu_hours > 0 ? 100 * q.stats.gpu_hours / f.gpu_hours : 0);
    ent.v.push_back(total_nominal > 0 ? 100 * q.nominal_gpus / total_nominal : 0);
    hours.v.push_back(q.stats.gpu_hours);
    lost.v.push_back(q.stats.lost_gpu_hours);
  }
  o << bar_chart("Share of GPU-hours vs entitlement per ClusterQueue (%)", qs, {share, ent},
                 "% of the cluster");
  o << bar_chart("GPU-hours per ClusterQueue (chargeback)", qs, {hours, lost}, "GPU-hours");
  std::vector<std::string> cs;
  Bars pre{"preemptions", {}}, plost{"GPU-hours lost", {}};
  for (const auto& c : classes) {
    cs.push_back(c);
    pre.v.push_back(static_cast<double>(f.by_priority_class.at(c).preemptions));
    plost.v.push_back(f.by_priority_class.at(c).lost_gpu_hours);
  }
  o << bar_chart("Preemptions per priority class (victims)", cs, {pre}, "preemptions");
  o << bar_chart("GPU-hours lost to preemption per priority class", cs, {plost}, "GPU-hours");
  o << "</div>\n";
  return o.str();
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_html(const Figures& f, const std::string& title) {
  std::ostringstream o;
  o << page_head(title) << inputs_line(f) << "<h2>Figures</h2>\n"
    << figures_table(f) << sections(f)
    << "<p class=\"note\">Generated by sluice sim run. Times are virtual; percentiles are "
       "nearest-rank.</p>\n</body></html>\n";
  return o.str();
}

std::string compare_html(const std::vector<std::pair<std::string, const Figures*>>& variants,
                         const std::string& title) {
  std::ostringstream o;
  o << page_head(title);
  if (!variants.empty()) o << inputs_line(*variants.front().second);
  // Side-by-side table: one column per variant.
  o << "<h2>Side by side</h2>\n<table><tr><th>figure</th>";
  for (const auto& [name, f] : variants) o << "<th>" << html_escape(name) << "</th>";
  o << "</tr>";
  auto row = [&](const std::string& k, auto fn) {
    o << "<tr><td>" << html_escape(k) << "</td>";
    for (const auto& [name, f] : variants) o << "<td>" << html_escape(fn(*f)) << "</td>";
    o << "</tr>";
  };
  row("utilisation", [](const Figures& f) { return num("%.1f%%", 100 * f.utilisation); });
  row("busy span", [](const Figures& f) { return dur(f.busy_span_s); });
  row("finished / never started / rejected", [](const Figures& f) {
    return std::to_string(f.overall.finished) + " / " + std::to_string(f.never_started) + " / " +
           std::to_string(f.rejected);
  });
  std::vector<std::string> classes;
  if (!variants.empty()) classes = classes_by_priority(*variants.front().second);
  for (const auto& c : classes)
    row("wait " + c + " p50 / p99", [&](const Figures& f) {
      const auto it = f.by_priority_class.find(c);
      return it == f.by_priority_class.end()
                 ? std::string("-")
                 : dur(it->second.wait_p50_s) + " / " + dur(it->second.wait_p99_s);
    });
  row("max wait", [](const Figures& f) { return dur(f.max_wait_s); });
  row("JCT p50 / p99",
      [](const Figures& f) { return dur(f.overall.jct_p50_s) + " / " + dur(f.overall.jct_p99_s); });
  row("Jain (contended)", [](const Figures& f) { return num("%.3f", f.jain_fairness_contended); });
  row("preemptions", [](const Figures& f) { return std::to_string(f.sim.preemptions); });
  row("GPU-hours lost", [](const Figures& f) { return num("%.1f", f.overall.lost_gpu_hours); });
  row("GPU-hours", [](const Figures& f) { return num("%.1f", f.gpu_hours); });
  o << "</table>\n";
  // Overlaid curves.
  o << "<h2>Overlaid</h2>\n<div class=\"grid\">";
  std::vector<Line> util, pend, cdf;
  double span_h = 0, pmax = 1, wmax = 60;
  for (const auto& [name, f] : variants) {
    const Binned b = bin(*f);
    span_h = std::max(span_h, (static_cast<double>(f->sim.last_ns - f->sim.first_ns)) / kNs / 3600);
    util.push_back({name, b.hours, b.util_pct});
    Line p{name, b.hours, std::vector<double>(b.hours.size(), 0)};
    for (const auto& v : b.pending)
      for (size_t i = 0; i < v.size(); ++i) p.y[i] += v[i];
    for (double x : p.y) pmax = std::max(pmax, x);
    pend.push_back(std::move(p));
    cdf.push_back(cdf_line(name, f->overall));
    wmax = std::max(wmax, max_wait_q(f->overall));
  }
  o << line_chart("GPU utilisation (%)", {0, span_h, false, "hours since the first arrival"},
                  {0, 100, false, "% of GPUs allocated"}, util, false);
  o << line_chart("Pending jobs, all classes", {0, span_h, false, "hours since the first arrival"},
                  {0, pmax * 1.05, false, "pending jobs"}, pend, false);
  o << line_chart("Wait-time CDF, all jobs", {0, wmax, true, "wait (log scale)"},
                  {0, 100, false, "% of started jobs"}, cdf, false);
  o << "</div>\n";
  for (const auto& [name, f] : variants)
    o << "<h2>" << html_escape(name) << "</h2>\n" << figures_table(*f) << sections(*f);
  o << "<p class=\"note\">Generated by sluice sim compare. Times are virtual; percentiles are "
       "nearest-rank.</p>\n</body></html>\n";
  return o.str();
}

}  // namespace sluice::sim
