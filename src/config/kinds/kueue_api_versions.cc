// What differs between kueue.x-k8s.io/v1beta1 and v1beta2, and the ClusterQueue fields sluice
// validates but does not (fully) act on (flavorFungibility's preference,
// concurrentAdmissionPolicy, admissionScope).
//
// v1beta2 (Kueue's current API) against v1beta1, as Kueue's conversion has it:
//   ClusterQueue  spec.cohort -> spec.cohortName; spec.admissionChecks removed (the checks live
//                 in admissionChecksStrategy); flavorFungibility loses Borrow / Preempt (old
//                 names of MayStopSearch) and gains `preference`; concurrentAdmissionPolicy new
//   LocalQueue    spec.wallTimePolicy new
//   ResourceFlavor, Cohort, WorkloadPriorityClass, Topology: the same fields
#include "config/kinds/kueue_api_versions.h"

namespace sluice::config_detail {

namespace {

const char* kNotImplemented = "sluice does not implement this Kueue feature";

}  // namespace

KueueApi kueue_api(const YAML::Node& doc) {
  if (doc.IsMap())
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == "apiVersion" && it->second.IsScalar())
        return it->second.Scalar() == "kueue.x-k8s.io/v1beta2" ? KueueApi::kV1beta2
                                                               : KueueApi::kV1beta1;
  return KueueApi::kV1beta1;
}

const char* cohort_field(KueueApi api) {
  return api == KueueApi::kV1beta2 ? "cohortName" : "cohort";
}

MapReader::Fields cluster_queue_fields(KueueApi api) {
  // The other version's names come last among the "known" ones so that check_renamed_fields
  // can say what they are called in this version.
  const bool v2 = api == KueueApi::kV1beta2;
  MapReader::Fields f;
  f.known = {v2 ? "cohortName" : "cohort",
             "namespaceSelector",
             "queueingStrategy",
             "resourceGroups",
             "preemption",
             "fairSharing",
             "flavorFungibility",
             "concurrentAdmissionPolicy",
             "admissionScope",
             "sluice",
             v2 ? "cohort" : "cohortName"};
  f.ignored = {"admissionChecksStrategy", "stopPolicy"};
  if (v2) {
    f.known.push_back("admissionChecks");
  } else {
    f.ignored.push_back("admissionChecks");
  }
  f.ignored_reason = kNotImplemented;
  return f;
}

void check_renamed_fields(Reader& r, const MapReader& spec, KueueApi api) {
  const bool v2 = api == KueueApi::kV1beta2;
  if (const YAML::Node* n = spec.find(v2 ? "cohort" : "cohortName"))
    r.error(*n, spec.path(v2 ? "cohort" : "cohortName"),
            v2 ? "kueue.x-k8s.io/v1beta2 calls this field cohortName"
               : "cohortName is kueue.x-k8s.io/v1beta2's name; v1beta1 calls it cohort");
  if (const YAML::Node* n = v2 ? spec.find("admissionChecks") : nullptr)
    r.error(*n, spec.path("admissionChecks"),
            "not in kueue.x-k8s.io/v1beta2: list the checks in "
            "admissionChecksStrategy.admissionChecks");
}

void read_flavor_fungibility(Reader& r, const YAML::Node& node, const std::string& path,
                             KueueApi api, FlavorFungibility* out) {
  MapReader m(r, node, path, {{"whenCanBorrow", "whenCanPreempt", "preference"}});
  if (!m.is_map()) return;
  using P = FungibilityPolicy;
  const bool v1 = api == KueueApi::kV1beta1;
  // v1beta1 also spells MayStopSearch "Borrow" (whenCanBorrow) or "Preempt" (whenCanPreempt).
  auto policy = [&](const char* key, const char* old_name, P* value) {
    const YAML::Node* n = m.find(key);
    if (!n) return;
    std::optional<P> v;
    if (v1)
      v = r.choice<P>(*n, m.path(key),
                      {{"MayStopSearch", P::kMayStopSearch},
                       {"TryNextFlavor", P::kTryNextFlavor},
                       {old_name, P::kMayStopSearch}});
    else if (n->IsScalar() && n->Scalar() == old_name)
      r.error(*n, m.path(key),
              quote(old_name) + " is v1beta1's name; kueue.x-k8s.io/v1beta2 says MayStopSearch");
    else
      v = r.choice<P>(*n, m.path(key),
                      {{"MayStopSearch", P::kMayStopSearch}, {"TryNextFlavor", P::kTryNextFlavor}});
    if (v) *value = *v;
  };
  policy("whenCanBorrow", "Borrow", &out->when_can_borrow);
  policy("whenCanPreempt", "Preempt", &out->when_can_preempt);
  if (const YAML::Node* n = m.find("preference")) {
    using F = FungibilityPreference;
    if (auto v = r.choice<F>(*n, m.path("preference"),
                             {{"BorrowingOverPreemption", F::kBorrowingOverPreemption},
                              {"PreemptionOverBorrowing", F::kPreemptionOverBorrowing}}))
      out->preference = *v;
    if (out->when_can_borrow != P::kTryNextFlavor || out->when_can_preempt != P::kTryNextFlavor)
      r.error(*n, m.path("preference"),
              "only allowed when whenCanBorrow and whenCanPreempt are both TryNextFlavor");
    else if (out->preference == F::kPreemptionOverBorrowing)
      r.warning(*n, m.path("preference"),
                "ignored in sluice's own order, which prefers a flavor that fits by borrowing "
                "to one that needs preemption (BorrowingOverPreemption); acted on with "
                "SchedulerPolicy ordering: kueue");
  }
}

void read_concurrent_admission(Reader& r, const YAML::Node& node, const std::string& path) {
  MapReader m(r, node, path, {{"migration"}});
  const YAML::Node* mig = m.is_map() ? m.required("migration") : nullptr;
  if (!mig) return;
  MapReader g(r, *mig, m.path("migration"), {{"mode", "constraints"}});
  if (!g.is_map()) return;
  enum class Mode { kTryPreferred, kRetainFirst };
  std::optional<Mode> mode;
  if (const YAML::Node* n = g.required("mode"))
    mode = r.choice<Mode>(*n, g.path("mode"),
                          {{"TryPreferredFlavors", Mode::kTryPreferred},
                           {"RetainFirstAdmission", Mode::kRetainFirst}});
  if (const YAML::Node* c = g.find("constraints")) {
    MapReader k(r, *c, g.path("constraints"), {{"lastAcceptableFlavorName"}});
    if (const YAML::Node* n = k.find("lastAcceptableFlavorName")) {
      r.str(*n, k.path("lastAcceptableFlavorName"));
      if (mode == Mode::kRetainFirst)
        r.error(*n, k.path("lastAcceptableFlavorName"),
                "only allowed with mode TryPreferredFlavors");
    }
  }
  // sluice tries the flavors in order and admits on the first that fits, which is where
  // RetainFirstAdmission leaves a workload; it never moves a running one to a better flavor.
  if (mode == Mode::kTryPreferred)
    r.warning(node, path,
              "mode TryPreferredFlavors: sluice admits a workload on the first flavor that fits, "
              "in order, and never migrates it to a preferred flavor later (it behaves as "
              "RetainFirstAdmission)");
}

void read_admission_scope(Reader& r, const YAML::Node& node, const std::string& path) {
  MapReader m(r, node, path, {{"admissionMode"}});
  const YAML::Node* n = m.is_map() ? m.required("admissionMode") : nullptr;
  if (!n) return;
  enum class Mode { kUsageBased, kNone };
  auto mode = r.choice<Mode>(*n, m.path("admissionMode"),
                             {{"UsageBasedAdmissionFairSharing", Mode::kUsageBased},
                              {"NoAdmissionFairSharing", Mode::kNone}});
  if (mode == Mode::kUsageBased)
    r.warning(*n, m.path("admissionMode"),
              "ignored: sluice has no admission fair sharing between LocalQueues (its own "
              "fairness is the composite order: docs/scheduling.md)");
}

}  // namespace sluice::config_detail
