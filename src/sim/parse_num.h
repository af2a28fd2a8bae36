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

// Seconds (decimals allowed) to nanoseconds; nullopt when not a finite number or out of range.
inline std::optional<TimeNs> parse_seconds_ns(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || !std::isfinite(v))
    return std::nullopt;
  if (std::fabs(v) > 9.0e9) return std::nullopt;  // ~285 years: keeps ns inside int64
  return static_cast<TimeNs>(std::llround(v * 1e9));
}

}  // namespace sluice::sim
