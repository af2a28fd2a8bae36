#include "cli/client_time.h"

#include <cctype>
#include <vector>

#include "config/loader.h"

namespace sluice::cli {

namespace {

constexpr int64_t kMaxSeconds = 365LL * 24 * 3600;

// Decimal digits only (no sign, no spaces), at most 9 of them.
std::optional<int64_t> digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Slurm's colon forms. Without a day part: M, M:S, H:M:S. With one ("D-..."): D-H, D-H:M,
// D-H:M:S.
std::optional<int64_t> slurm_seconds(const std::string& text) {
  int64_t days = 0;
  std::string clock = text;
  const bool has_days = text.find('-') != std::string::npos;
  if (has_days) {
    const auto dash = text.find('-');
    auto d = digits(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    clock = text.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  for (const auto& p : split(clock, ':')) {
    auto v = digits(p);
    if (!v) return std::nullopt;
    parts.push_back(*v);
  }
  int64_t h = 0, m = 0, s = 0;
  if (has_days) {
    if (parts.size() > 3) return std::nullopt;
    h = parts[0];
    if (parts.size() > 1) m = parts[1];
    if (parts.size() > 2) s = parts[2];
  } else if (parts.size() == 1) {
    m = parts[0];
  } else if (parts.size() == 2) {
    m = parts[0];
    s = parts[1];
  } else if (parts.size() == 3) {
    h = parts[0];
    m = parts[1];
    s = parts[2];
  } else {
    return std::nullopt;
  }
  return ((days * 24 + h) * 60 + m) * 60 + s;
}

}  // namespace

std::optional<TimeLimit> parse_time_limit(const std::string& text) {
  const std::string t = lower(text);
  if (t == "unlimited" || t == "infinite") return TimeLimit{0};
  std::optional<int64_t> seconds;
  const bool units = !t.empty() && std::isalpha(static_cast<unsigned char>(t.back()));
  if (units) {
    // "90s", "2h", "1h30m": the duration syntax of the job documents.
    if (auto ns = parse_duration_ns(t)) seconds = (*ns + kNsPerSec - 1) / kNsPerSec;
  } else {
    seconds = slurm_seconds(t);
  }
  if (!seconds || *seconds <= 0 || *seconds > kMaxSeconds) return std::nullopt;
  return TimeLimit{*seconds};
}

std::string time_limit_duration(const TimeLimit& limit) {
  return limit.seconds > 0 ? std::to_string(limit.seconds) + "s" : std::string();
}

}  // namespace sluice::cli
