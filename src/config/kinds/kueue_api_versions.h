#pragma once
// Internal to the loader: the fields of Kueue's ClusterQueue that differ between
// kueue.x-k8s.io/v1beta1 and v1beta2, and the readers of the ones sluice validates but does not
// act on. kueue_api_versions.cc says what differs.
#include <string>

#include "config/internal.h"

namespace sluice::config_detail {

// The spec field naming a ClusterQueue's cohort: cohort (v1beta1) or cohortName (v1beta2).
const char* cohort_field(KueueApi api);
// A ClusterQueue's spec fields in `api`.
MapReader::Fields cluster_queue_fields(KueueApi api);
// Errors for the other version's field names (cohort / cohortName, v1beta1's admissionChecks).
void check_renamed_fields(Reader& r, const MapReader& spec, KueueApi api);

// spec.flavorFungibility: values checked for the version and kept in *out (the flavor assigner
// acts on whenCanBorrow and whenCanPreempt; preference PreemptionOverBorrowing is warned about).
// Kueue's defaults in both versions: whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor.
void read_flavor_fungibility(Reader& r, const YAML::Node& node, const std::string& path,
                             KueueApi api, FlavorFungibility* out);
// spec.concurrentAdmissionPolicy: checked; TryPreferredFlavors is warned about (sluice never
// migrates an admitted workload), RetainFirstAdmission is what sluice does.
void read_concurrent_admission(Reader& r, const YAML::Node& node, const std::string& path);
// spec.admissionScope: checked; UsageBasedAdmissionFairSharing is warned about.
void read_admission_scope(Reader& r, const YAML::Node& node, const std::string& path);

}  // namespace sluice::config_detail
