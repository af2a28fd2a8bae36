#pragma once
// Request routing and identity: which pool serves a request, which tenant sent it and at which
// class. Pure functions over the config, so they are tested without sockets.
#include <optional>
#include <string>
#include <string_view>

#include "gateway/config.h"

namespace sluice::gateway {

// The first route (in config order) whose pathPrefix and model both match wins; then the
// default pool; -1 when nothing matches (404). `model` is empty when the request names none.
int route_pool(const GatewayConfig& cfg, std::string_view path, std::string_view model);

// Whether any route matches on the model, i.e. whether the model must be extracted at all.
bool routes_need_model(const GatewayConfig& cfg);

// The top-level "model" string of a JSON object body, or empty when the body is not JSON, has
// no such field, or it is not a string.
std::string model_from_json_body(std::string_view body);

// Tenant lookup result: index into cfg.tenants, or -1 for the anonymous tenant.
struct Identity {
  int tenant = -1;
  RequestClass request_class = RequestClass::kStandard;
  std::string error;  // non-empty: answer 401 (unknown key, or a key is required) or 400
  int error_status = 0;
};

// `api_key` is the key header value or the token of `Authorization: Bearer`, empty when absent;
// `class_header` is the class header value, empty when absent. Without a header the tenant's
// `class` applies; a header may ask for any class down from the tenant's `maxClass` (default:
// its `class`), and a more important one is clamped to `maxClass`.
Identity identify(const GatewayConfig& cfg, std::string_view api_key,
                  std::string_view class_header);

// Extracts the token from an `Authorization: Bearer TOKEN` value, or empty.
std::string_view bearer_token(std::string_view authorization);

}  // namespace sluice::gateway
