#pragma once
// Tolerant readers of a JSON reply's fields: a missing field or one of another type reads as
// empty (0, "", []), never throws. For reports built from views (GET /v1/advise) and the
// clients that print them.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::proto {

// reply[key] where it is an array (or reply itself, an array); else an empty array.
inline const nlohmann::json& items_of(const nlohmann::json& reply, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (reply.is_array()) return reply;
  if (reply.is_object() && reply.contains(key) && reply[key].is_array()) return reply[key];
  return kEmpty;
}

inline int64_t int_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

inline std::string str_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace sluice::proto
