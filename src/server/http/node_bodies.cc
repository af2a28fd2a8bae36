#include "server/http/node_bodies.h"

#include <nlohmann/json.hpp>

#include "config/loader.h"

namespace sluice::server {

using nlohmann::json;

std::string read_hold_reason(const std::string& body, std::string* reason) {
  if (body.empty()) return {};
  const auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || (j.contains("reason") && !j["reason"].is_string()))
    return "expected {\"reason\": \"...\"}";
  *reason = j.value("reason", "");
  if (reason->size() > kMaxHoldReason) return "reason: at most 1024 bytes";
  return {};
}

std::string read_reclaim_notice(const std::string& body, TimeNs* notice) {
  const char* expected = "expected {\"notice\": \"30s\"}: how long the node's pods have";
  if (body.empty()) return expected;
  const auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("notice")) return expected;
  const json& n = j["notice"];
  constexpr int64_t kMaxSeconds = kMaxReclaimNotice / 1'000'000'000LL;
  std::optional<TimeNs> v;
  if (n.is_number_integer()) {
    const int64_t s = n.get<int64_t>();
    if (s >= 0 && s <= kMaxSeconds) v = s * 1'000'000'000LL;
  } else if (n.is_string()) {
    v = parse_duration_ns(n.get<std::string>());
  }
  if (!v || *v < 0 || *v > kMaxReclaimNotice)
    return "notice: expected a duration from 0s to 24h (e.g. \"30s\", \"2m\")";
  *notice = *v;
  return {};
}

}  // namespace sluice::server
