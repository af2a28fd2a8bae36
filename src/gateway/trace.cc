#include "gateway/trace.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>

namespace sluice::gateway {
namespace {

template <class Int>
bool parse_int(std::string_view s, Int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "2023-11-16 18:17:03.9799600" -> microseconds since the epoch (UTC; only differences matter).
bool parse_timestamp_us(std::string_view s, std::int64_t* out) {
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return false;
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!parse_int(s.substr(0, 4), &y) || !parse_int(s.substr(5, 2), &mo) ||
      !parse_int(s.substr(8, 2), &d) || !parse_int(s.substr(11, 2), &h) ||
      !parse_int(s.substr(14, 2), &mi) || !parse_int(s.substr(17, 2), &sec)) {
    return false;
  }
  std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(mo),
                                  std::chrono::day(d)};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return false;
  std::int64_t frac_us = 0;
  if (s.size() > 19) {
    if (s[19] != '.') return false;
    auto frac = s.substr(20);
    std::int64_t scale = 100000;
    for (char c : frac) {
      if (c < '0' || c > '9') return false;
      frac_us += (c - '0') * scale;
      scale /= 10;
    }
  }
  auto days = std::chrono::sys_days(ymd).time_since_epoch().count();
  *out = ((static_cast<std::int64_t>(days) * 24 + h) * 60 + mi) * 60 + sec;
  *out = *out * 1000000 + frac_us;
  return true;
}

}  // namespace

TraceResult load_inference_trace(const std::string& path) {
  TraceResult r;
  std::ifstream in(path);
  if (!in) {
    r.error = path + ": cannot open trace";
    return r;
  }
  std::string line;
  std::int64_t lineno = 0;
  std::int64_t first_us = 0;
  constexpr std::int64_t kMaxRows = 50'000'000;  // bound on the read loop
  while (std::getline(in, line) && lineno < kMaxRows) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (lineno == 1 && line.rfind("TIMESTAMP", 0) == 0) continue;
    auto c1 = line.find(',');
    auto c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
    std::int64_t ts = 0;
    TraceRequest tr;
    std::string_view v(line);
    if (c2 == std::string::npos || !parse_timestamp_us(v.substr(0, c1), &ts) ||
        !parse_int(v.substr(c1 + 1, c2 - c1 - 1), &tr.context_tokens) ||
        !parse_int(v.substr(c2 + 1), &tr.generated_tokens) || tr.context_tokens < 0 ||
        tr.generated_tokens < 0) {
      r.error = path + ":" + std::to_string(lineno) +
                ": expected TIMESTAMP,ContextTokens,GeneratedTokens";
      r.requests.clear();
      return r;
    }
    if (r.requests.empty()) first_us = ts;
    tr.arrival_us = ts - first_us;
    r.requests.push_back(tr);
  }
  // Rows are in time order in the published files; sort anyway (stable: ties keep file order).
  std::stable_sort(r.requests.begin(), r.requests.end(),
                   [](const auto& a, const auto& b) { return a.arrival_us < b.arrival_us; });
  if (!r.requests.empty()) {
    auto t0 = r.requests.front().arrival_us;
    for (auto& q : r.requests) q.arrival_us -= t0;
  }
  if (r.requests.empty()) r.error = path + ": no requests";
  return r;
}

std::string traces_dir(const std::string& repo_root) {
  if (const char* env = std::getenv("SLUICE_TRACES"); env && *env) return env;
  return repo_root + "/../shared/traces";
}

}  // namespace sluice::gateway
