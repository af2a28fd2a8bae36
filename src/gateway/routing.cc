#include "gateway/routing.h"

#include <nlohmann/json.hpp>

namespace sluice::gateway {

int route_pool(const GatewayConfig& cfg, std::string_view path, std::string_view model) {
  for (const auto& r : cfg.routes) {
    if (!r.path_prefix.empty() && path.substr(0, r.path_prefix.size()) != r.path_prefix) continue;
    if (!r.model.empty() && model != r.model) continue;
    return r.pool_index;
  }
  return cfg.default_pool_index;
}

bool routes_need_model(const GatewayConfig& cfg) {
  for (const auto& r : cfg.routes) {
    if (!r.model.empty()) return true;
  }
  return false;
}

std::string model_from_json_body(std::string_view body) {
  // Cheap pre-checks avoid parsing bodies that cannot hold the field.
  if (body.empty() || body.find("\"model\"") == std::string_view::npos) return {};
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  auto it = j.find("model");
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size()) return {};
  for (std::size_t i = 0; i < kBearer.size(); ++i) {
    char a = authorization[i], b = kBearer[i];
    if ((a | 0x20) != (b | 0x20)) return {};
  }
  auto tok = authorization.substr(kBearer.size());
  while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
  while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
  return tok;
}

Identity identify(const GatewayConfig& cfg, std::string_view api_key,
                  std::string_view class_header) {
  Identity id;
  const TenantConfig* tenant = &cfg.anonymous;
  if (!api_key.empty()) {
    tenant = nullptr;
    for (std::size_t i = 0; i < cfg.tenants.size() && !tenant; ++i) {
      for (const auto& k : cfg.tenants[i].api_keys) {
        if (k == api_key) {
          tenant = &cfg.tenants[i];
          id.tenant = static_cast<int>(i);
          break;
        }
      }
    }
    if (!tenant) {
      id.error = "unknown API key";
      id.error_status = 401;
      return id;
    }
  } else if (cfg.require_api_key) {
    id.error = "an API key is required";
    id.error_status = 401;
    return id;
  }
  id.request_class = tenant->request_class;
  if (!class_header.empty()) {
    auto c = parse_class(class_header);
    if (!c) {
      id.error = "bad request class '" + std::string(class_header) +
                 "' (expected critical, standard or sheddable)";
      id.error_status = 400;
      return id;
    }
    // Lower numeric value = more important; clamp to the tenant's maxClass.
    id.request_class =
        static_cast<int>(*c) < static_cast<int>(tenant->max_class) ? tenant->max_class : *c;
  }
  return id;
}

}  // namespace sluice::gateway
