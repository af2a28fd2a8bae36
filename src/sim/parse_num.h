#pragma once
// Strict number parsing for trace fields: the whole text must be the number.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/model/job.h"

namespace sluice::sim {

inline std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The largest time or duration a trace field may give, in seconds (~126 years; Unix times run
// to 2096): a time plus a duration stays inside int64 nanoseconds. Derived values (a variant's
// walltime error, a load scaling) are clamped to kMaxTraceNs.
inline constexpr TimeNs kMaxTraceNs = 4'000'000'000LL * kNsPerSec;
inline constexpr double kMaxTraceSeconds = static_cast<double>(kMaxTraceNs / kNsPerSec);

// Seconds (decimals allowed) to nanoseconds; nullopt when not a finite number or out of range.
inline std::optional<TimeNs> parse_seconds_ns(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || !std::isfinite(v))
    return std::nullopt;
  if (std::fabs(v) > kMaxTraceSeconds) return std::nullopt;
  return static_cast<TimeNs>(std::llround(v * 1e9));
}

}  // namespace sluice::sim
