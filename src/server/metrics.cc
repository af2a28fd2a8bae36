#include "server/metrics.h"

#include <cmath>
#include <cstdio>

namespace sluice::server {

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (v <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;  // values above the last bound land only in +Inf
  sum_ += v;
}

std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_double(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

namespace {
std::string labels_text(const LabelSet& labels, const std::string& extra_k = {},
                        const std::string& extra_v = {}) {
  if (labels.empty() && extra_k.empty()) return {};
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ',';
    first = false;
    s += k + "=\"" + escape_label(v) + "\"";
  }
  if (!extra_k.empty()) {
    if (!first) s += ',';
    s += extra_k + "=\"" + extra_v + "\"";
  }
  return s + "}";
}
}  // namespace

void PromWriter::family(const std::string& name, const std::string& type, const std::string& help) {
  out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PromWriter::sample(const std::string& name, const LabelSet& labels, double value) {
  out_ += name + labels_text(labels) + " " + format_double(value) + "\n";
}

void PromWriter::histogram(const std::string& name, const LabelSet& labels, const Histogram& h) {
  uint64_t cum = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cum += h.counts()[i];
    out_ += name + "_bucket" + labels_text(labels, "le", format_double(h.bounds()[i])) + " " +
            std::to_string(cum) + "\n";
  }
  out_ +=
      name + "_bucket" + labels_text(labels, "le", "+Inf") + " " + std::to_string(h.count()) + "\n";
  out_ += name + "_sum" + labels_text(labels) + " " + format_double(h.sum()) + "\n";
  out_ += name + "_count" + labels_text(labels) + " " + std::to_string(h.count()) + "\n";
}

Histogram Metrics::wait_histogram() {
  return Histogram(
      {0.1, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 172800});
}

Histogram Metrics::cycle_histogram() {
  return Histogram(
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
}

}  // namespace sluice::server
