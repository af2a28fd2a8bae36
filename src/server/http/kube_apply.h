#pragma once
// Server-side apply of a Kueue configuration object (`kubectl apply --server-side`: a PATCH
// of Content-Type application/apply-patch+yaml with ?fieldManager=NAME[&force=true]), as
// docs/kubernetes.md "Server-side apply" says: the applied configuration is the manager's
// whole intent; its fields are set, the fields it applied before and applies no more are
// removed unless another manager owns them, and its ownership is recorded in
// metadata.managedFields (manager, operation Apply, apiVersion, time, fieldsV1). Lists are
// atomic (owned whole), as a custom resource's. A field another Apply manager owns with
// another value is a conflict (409) unless force, which takes it over. Ownership by updates
// (create, update, merge patches) is not tracked: they never conflict. Pure (nlohmann).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::server::kube {

struct ApplyConflict {
  std::string manager;
  std::string field;  // ".spec.resourceGroups", as Kubernetes writes a field path
};

struct ApplyResult {
  nlohmann::json object;                 // the new stored form, with its managedFields
  std::vector<ApplyConflict> conflicts;  // non-empty: refused, object unset
};

// `live`: the object's stored form (null: it does not exist yet, the apply creates it);
// `applied`: the manager's configuration (apiVersion, kind, metadata.name checked by the
// caller); `time`: RFC 3339, for managedFields.
ApplyResult server_side_apply(const nlohmann::json& live, const nlohmann::json& applied,
                              const std::string& manager, bool force, const std::string& time);

}  // namespace sluice::server::kube
