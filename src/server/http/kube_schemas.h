#pragma once
// OpenAPI v3 schemas of the kinds sluice serves (kube_schemas.cc), for `kubectl explain`.
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::server::kube {

using nlohmann::json;

// components.schemas of group-version G/V ("" for the core group): one schema per kind, keyed
// as the API server keys them (io.k8s.api.batch.v1.Job), each with its
// x-kubernetes-group-version-kind; {} for a group-version without any.
json openapi_schemas(const std::string& group, const std::string& version);

}  // namespace sluice::server::kube
