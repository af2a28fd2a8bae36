#include "core/model/duration_text.h"

#include <cstdio>

namespace sluice {

namespace {

std::string two_units(long long s) {
  char buf[48];
  if (s >= 86400)
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  else if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

std::string largest_unit(long long s) {
  if (s < 120) return std::to_string(s) + "s";
  if (s < 120 * 60) return std::to_string(s / 60) + "m";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

}  // namespace

std::string duration_text(int64_t seconds, DurationStyle style) {
  const long long s = seconds < 0 ? 0 : seconds;
  return style == DurationStyle::kTwoUnits ? two_units(s) : largest_unit(s);
}

}  // namespace sluice
