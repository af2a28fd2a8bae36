#include "core/model/deadline.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "core/model/civil_date.h"

namespace sluice {

namespace {

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

// Reads exactly `n` digits at s[*i]; advances *i.
std::optional<int64_t> digits(std::string_view s, size_t* i, size_t n) {
  if (*i + n > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t k = 0; k < n; ++k) {
    const char c = s[*i + k];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  *i += n;
  return v;
}

bool expect(std::string_view s, size_t* i, char a, char b = 0) {
  if (*i >= s.size() || (s[*i] != a && (b == 0 || s[*i] != b))) return false;
  ++*i;
  return true;
}

}  // namespace

std::optional<TimeNs> parse_rfc3339_ns(std::string_view s) {
  // 1. Date and time: YYYY-MM-DDTHH:MM:SS.
  size_t i = 0;
  const auto y = digits(s, &i, 4);
  if (!y || !expect(s, &i, '-')) return std::nullopt;
  const auto mo = digits(s, &i, 2);
  if (!mo || !expect(s, &i, '-')) return std::nullopt;
  const auto d = digits(s, &i, 2);
  if (!d || !expect(s, &i, 'T', 't')) return std::nullopt;
  const auto h = digits(s, &i, 2);
  if (!h || !expect(s, &i, ':')) return std::nullopt;
  const auto mi = digits(s, &i, 2);
  if (!mi || !expect(s, &i, ':')) return std::nullopt;
  const auto sec = digits(s, &i, 2);
  if (!sec) return std::nullopt;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*y < 1970 || *y > 2199 || *mo < 1 || *mo > 12 || *d < 1 || *h > 23 || *mi > 59 || *sec > 60)
    return std::nullopt;
  if (*d > kDays[*mo - 1] + (*mo == 2 && leap(*y) ? 1 : 0)) return std::nullopt;
  // 2. Fraction of a second: up to nanoseconds.
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t n = 0;
    int64_t scale = 100'000'000;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (++n > 9) return std::nullopt;
      frac_ns += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (n == 0) return std::nullopt;
  }
  // 3. Offset: Z or +HH:MM / -HH:MM, then nothing.
  int64_t offset_s = 0;
  if (expect(s, &i, 'Z', 'z')) {
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const int64_t sign = s[i] == '+' ? 1 : -1;
    ++i;
    const auto oh = digits(s, &i, 2);
    if (!oh || !expect(s, &i, ':')) return std::nullopt;
    const auto om = digits(s, &i, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_s = sign * (*oh * 3600 + *om * 60);
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  const int64_t secs = days_from_civil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 +
                       std::min<int64_t>(*sec, 59) - offset_s;
  if (secs < 0) return std::nullopt;
  return secs * kNsPerSec + frac_ns;
}

std::string format_rfc3339(TimeNs unix_ns) {
  int64_t secs = unix_ns / kNsPerSec;
  if (unix_ns < 0 && unix_ns % kNsPerSec != 0) --secs;
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // civil_from_days (Howard Hinnant).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[128];  // room for any int64 in every field (-Wformat-truncation at -O0)
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld",
                static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                static_cast<long long>(rem % 60));
  std::string out = buf;
  // A fraction only where there is one (exact: the loader reads it back to the nanosecond).
  if (const int64_t frac = unix_ns - secs * kNsPerSec; frac > 0) {
    std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "Z";
}

void resolve_deadline(Job& job) {
  if (job.complete_within_ns <= 0) return;
  job.complete_by_ns = job.submit_ns + job.complete_within_ns;
  job.complete_within_ns = 0;
}

std::string deadline_error(const Job& job) {
  if (job.complete_within_ns < 0) return "spec.completeWithin must not be negative";
  if (job.complete_within_ns > kMaxDeadlineAheadNs)
    return "spec.completeWithin is further ahead than 10 years";
  if (job.complete_within_ns > 0 || job.complete_by_ns == 0) return {};
  if (job.complete_by_ns <= job.submit_ns)
    return "spec.completeBy (" + format_rfc3339(job.complete_by_ns) +
           ") is not after the job's submission (" + format_rfc3339(job.submit_ns) + ")";
  if (job.complete_by_ns - job.submit_ns > kMaxDeadlineAheadNs)
    return "spec.completeBy (" + format_rfc3339(job.complete_by_ns) +
           ") is more than 10 years after the job's submission";
  return {};
}

const char* deadline_outcome(const Job& job, bool succeeded, bool rejected, TimeNs end_ns) {
  if (job.complete_by_ns <= 0 || rejected) return nullptr;
  if (end_ns > job.complete_by_ns) return "missed";
  return succeeded ? "met" : nullptr;
}

}  // namespace sluice
