#pragma once
// Proleptic Gregorian dates as days since 1970-01-01 and back (Howard Hinnant's algorithms):
// the one conversion the deadlines (RFC 3339 times) and the job history (calendar periods)
// share.
#include <cstdint>

namespace sluice {

// Days since 1970-01-01 of year y, month m (1-12), day d (1-31).
inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The year and month (1-12) of day z since 1970-01-01.
inline void civil_from_days(int64_t z, int64_t* y, int64_t* m) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *m = mp + (mp < 10 ? 3 : -9);
  *y = yoe + era * 400 + (*m <= 2);
}

}  // namespace sluice
