#include "gateway/metrics.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace sluice::gateway {

void Histogram::observe_ns(std::int64_t ns) {
  if (ns < 0) ns = 0;
  const double s = static_cast<double>(ns) / 1e9;
  auto it = std::lower_bound(kBoundsSeconds.begin(), kBoundsSeconds.end(), s);
  ++buckets_[static_cast<std::size_t>(it - kBoundsSeconds.begin())];
  ++count_;
  sum_ns_ += ns;
}

double Histogram::quantile_upper_bound(double q) const {
  if (count_ == 0) return 0.0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBoundsSeconds.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return kBoundsSeconds[i];
  }
  return INFINITY;
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void PromWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PromWriter::labels_(const Labels& labels, const char* extra_key,
                         std::string_view extra_value) {
  if (labels.empty() && !extra_key) return;
  out_ += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += k;
    out_ += "=\"";
    out_ += escape_label_value(v);
    out_ += '"';
  }
  if (extra_key) {
    if (!first) out_ += ',';
    out_ += extra_key;
    out_ += "=\"";
    out_ += extra_value;
    out_ += '"';
  }
  out_ += '}';
}

void PromWriter::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  labels_(labels);
  char buf[64];
  if (std::isinf(value)) {
    std::snprintf(buf, sizeof buf, " %s\n", value > 0 ? "+Inf" : "-Inf");
  } else if (std::isnan(value)) {
    std::snprintf(buf, sizeof buf, " NaN\n");
  } else {
    std::snprintf(buf, sizeof buf, " %.9g\n", value);
  }
  out_ += buf;
}

void PromWriter::sample(std::string_view name, const Labels& labels, std::uint64_t value) {
  out_ += name;
  labels_(labels);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

void PromWriter::sample(std::string_view name, const Labels& labels, std::int64_t value) {
  out_ += name;
  labels_(labels);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

void PromWriter::histogram(std::string_view name, const Labels& labels, const Histogram& h) {
  std::string bucket_name = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  char le[32];
  for (std::size_t i = 0; i < Histogram::kBoundsSeconds.size(); ++i) {
    cumulative += h.bucket(i);
    std::snprintf(le, sizeof le, "%g", Histogram::kBoundsSeconds[i]);
    out_ += bucket_name;
    labels_(labels, "le", le);
    out_ += ' ';
    out_ += std::to_string(cumulative);
    out_ += '\n';
  }
  cumulative += h.bucket(Histogram::kBoundsSeconds.size());
  out_ += bucket_name;
  labels_(labels, "le", "+Inf");
  out_ += ' ';
  out_ += std::to_string(cumulative);
  out_ += '\n';
  sample(std::string(name) + "_sum", labels, static_cast<double>(h.sum_ns()) / 1e9);
  sample(std::string(name) + "_count", labels, h.count());
}

}  // namespace sluice::gateway
