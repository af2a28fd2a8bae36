#pragma once
// Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), read for the few bodies
// kubectl sends that way: its typed clients encode built-in kinds so (kubectl drain's
// Eviction, kubectl auth can-i's reviews), where its create, patch and delete send JSON. The
// body is the magic "k8s\0", then a runtime.Unknown {typeMeta {apiVersion, kind}, raw}; raw
// is the object, read by a schema of the fields sluice reads into the JSON object the API
// would have been sent, every other field skipped. Pure and bounded: nesting goes no deeper
// than the schema, a field is at most the body's length. kube_bodies.cc holds the schemas.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::server::kube {

inline constexpr const char* kProtobufType = "application/vnd.kubernetes.protobuf";

struct ProtoField;
using ProtoSchema = std::vector<ProtoField>;
struct ProtoField {
  enum class Type : uint8_t { kString, kInt64, kBool, kStrings, kMessage };
  uint32_t number = 0;
  std::string name;  // the JSON field it becomes
  Type type = Type::kString;
  const ProtoSchema* message = nullptr;  // kMessage: its fields
};

// The object in `body` as JSON (with apiVersion and kind from the envelope); nullopt with
// *why when the body is not this encoding, is cut short or malformed, or has a string that is
// not UTF-8.
std::optional<nlohmann::json> protobuf_object(std::string_view body, const ProtoSchema& schema,
                                              std::string* why);

}  // namespace sluice::server::kube
