// Shared by every kind: apiVersion/kind classification, metadata, resource names.
#include <algorithm>
#include <cstdio>
#include <string>

#include "config/input_limits.h"
#include "config/internal.h"

namespace sluice::config_detail {

namespace {

// The first control character of `s` (invisible_control), named ("U+202E at byte 3"); ""
// when none. Bytes that are not UTF-8 are left to the UTF-8 check.
std::string control_character(const std::string& s) {
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {
      ++i;
      continue;
    }
    if (invisible_control(cp)) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "U+%04X at byte %zu", static_cast<unsigned>(cp), i);
      return buf;
    }
    i += len;
  }
  return "";
}

struct KindEntry {
  const char* api_version;
  const char* kind;
  DocKind doc_kind;
};

constexpr KindEntry kKinds[] = {
    {"kueue.x-k8s.io/v1beta1", "ResourceFlavor", DocKind::kResourceFlavor},
    {"kueue.x-k8s.io/v1beta1", "ClusterQueue", DocKind::kClusterQueue},
    {"kueue.x-k8s.io/v1beta1", "LocalQueue", DocKind::kLocalQueue},
    {"kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass", DocKind::kWorkloadPriorityClass},
    {"kueue.x-k8s.io/v1alpha1", "Cohort", DocKind::kCohort},
    {"kueue.x-k8s.io/v1beta1", "Cohort", DocKind::kCohort},
    {"kueue.x-k8s.io/v1beta1", "Topology", DocKind::kTopology},
    {"kueue.x-k8s.io/v1alpha1", "Topology", DocKind::kTopology},
    // Kueue's current API (kueue_api_versions.cc: what differs from v1beta1).
    {"kueue.x-k8s.io/v1beta2", "ResourceFlavor", DocKind::kResourceFlavor},
    {"kueue.x-k8s.io/v1beta2", "ClusterQueue", DocKind::kClusterQueue},
    {"kueue.x-k8s.io/v1beta2", "LocalQueue", DocKind::kLocalQueue},
    {"kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", DocKind::kWorkloadPriorityClass},
    {"kueue.x-k8s.io/v1beta2", "Cohort", DocKind::kCohort},
    {"kueue.x-k8s.io/v1beta2", "Topology", DocKind::kTopology},
    {"scheduling.x-k8s.io/v1alpha1", "Queue", DocKind::kBatchQueue},
    {"scheduling.k8s.io/v1", "PriorityClass", DocKind::kWorkloadPriorityClass},
    {"sluice.dev/v1alpha1", "Cluster", DocKind::kCluster},
    {"sluice.dev/v1alpha1", "SchedulerPolicy", DocKind::kSchedulerPolicy},
    {"sluice.dev/v1alpha1", "Budget", DocKind::kBudget},
    {"sluice.dev/v1alpha1", "NodePool", DocKind::kNodePool},
    {"sluice.dev/v1alpha1", "Job", DocKind::kSluiceJob},
    {"sluice.dev/v1alpha1", "Snapshot", DocKind::kSnapshot},
    {"v1", "Pod", DocKind::kPod},
    {"batch/v1", "Job", DocKind::kBatchJob},
    {"jobset.x-k8s.io/v1alpha2", "JobSet", DocKind::kJobSet},
    {"kubeflow.org/v1", "PyTorchJob", DocKind::kPyTorchJob},
    {"kubeflow.org/v2beta1", "MPIJob", DocKind::kMpiJob},
    // Kueue's admission checks and what configures them: sluice admits on quota and capacity
    // alone, so a file of Kueue's setup is read, and these are warned about and ignored.
    {"kueue.x-k8s.io/v1beta1", "AdmissionCheck", DocKind::kIgnored},
    {"kueue.x-k8s.io/v1beta2", "AdmissionCheck", DocKind::kIgnored},
    {"kueue.x-k8s.io/v1beta1", "ProvisioningRequestConfig", DocKind::kIgnored},
    {"kueue.x-k8s.io/v1beta2", "ProvisioningRequestConfig", DocKind::kIgnored},
    {"kueue.x-k8s.io/v1beta1", "MultiKueueConfig", DocKind::kIgnored},
    {"kueue.x-k8s.io/v1beta1", "MultiKueueCluster", DocKind::kIgnored},
};

}  // namespace

DocKind classify(const std::string& api_version, const std::string& kind, std::string* field,
                 std::string* why) {
  bool version_known = false;
  std::string kinds_of_version, versions_of_kind, versions;
  for (const auto& e : kKinds) {
    if (api_version == e.api_version && kind == e.kind) return e.doc_kind;
    if (api_version == e.api_version) {
      version_known = true;
      if (e.doc_kind != DocKind::kIgnored)  // named as kinds sluice reads, not the ignored ones
        kinds_of_version += (kinds_of_version.empty() ? "" : ", ") + std::string(e.kind);
    }
    if (kind == e.kind)
      versions_of_kind += (versions_of_kind.empty() ? "" : " or ") + std::string(e.api_version);
    if (versions.find(e.api_version) == std::string::npos)
      versions += (versions.empty() ? "" : ", ") + std::string(e.api_version);
  }
  if (!versions_of_kind.empty()) {
    *field = "apiVersion";
    *why = "kind " + kind + " needs apiVersion " + versions_of_kind + ", not " + quote(api_version);
  } else if (version_known) {
    *field = "kind";
    *why = "unknown kind " + quote(kind) + " for apiVersion " + api_version +
           " (known: " + kinds_of_version + ")";
  } else {
    *field = "apiVersion";
    *why = "unknown apiVersion " + quote(api_version) + " (known: " + versions + ")";
  }
  return DocKind::kUnknown;
}

std::string join_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool is_job_kind(DocKind k) {
  return k == DocKind::kSluiceJob || k == DocKind::kPod || k == DocKind::kBatchJob ||
         k == DocKind::kJobSet || k == DocKind::kPyTorchJob || k == DocKind::kMpiJob;
}

std::optional<ResourceId> intern_resource(Reader& r, ResourceCatalog& catalog, const YAML::Node& at,
                                          const std::string& path, const std::string& name) {
  if (auto id = catalog.intern(name)) return id;
  std::string names;
  for (int i = 0; i < catalog.size(); ++i)
    names += (i ? ", " : "") + catalog.name(static_cast<ResourceId>(i));
  r.error(at, path,
          "too many distinct resource names: " + quote(name) + " would be number " +
              std::to_string(kMaxResources + 1) + " (at most " + std::to_string(kMaxResources) +
              ": " + names + ")");
  return std::nullopt;
}

Metadata read_metadata(Reader& r, const YAML::Node& doc, const YAML::Node* metadata,
                       std::vector<std::string>* ignored) {
  Metadata m;
  if (!metadata) {
    r.error(doc, "metadata", "required field missing");
    return m;
  }
  // Kubernetes bookkeeping that `kubectl get -o yaml` prints is accepted silently.
  static const std::vector<const char*> kKnown = {"name",
                                                  "namespace",
                                                  "labels",
                                                  "annotations",
                                                  "generateName",
                                                  "uid",
                                                  "generation",
                                                  "resourceVersion",
                                                  "creationTimestamp",
                                                  "managedFields",
                                                  "finalizers",
                                                  "selfLink",
                                                  "ownerReferences",
                                                  "deletionTimestamp",
                                                  "deletionGracePeriodSeconds"};
  static const std::vector<const char*> kUsedByJobs = {"name", "namespace", "labels", "annotations",
                                                       "generateName"};
  std::optional<MapReader> mr;
  if (ignored) {
    mr.emplace(r, *metadata, "metadata", kUsedByJobs, ignored);
  } else {
    mr.emplace(r, *metadata, "metadata", MapReader::Fields{kKnown});
  }
  if (!mr->is_map()) return m;
  bool ok = true;
  const YAML::Node* name = mr->find("name");
  const YAML::Node* generate = mr->find("generateName");
  // Names are printed in tables and logs: no control characters (escape sequences would
  // reach an operator's terminal), and no longer than Kubernetes allows.
  auto printable = [&](const YAML::Node& n, const char* path, const std::string& s) {
    const std::string bad = control_character(s);
    const bool control = !bad.empty();
    if (control)
      r.error(n, path, "must not contain control characters (C0, C1 or bidirectional): " + bad);
    if (s.size() > 253) r.error(n, path, "longer than 253 characters");
    return !control && s.size() <= 253;
  };
  if (name) {
    auto s = r.str(*name, "metadata.name");
    ok = ok && s && printable(*name, "metadata.name", *s);
    if (s) m.name = *s;
  } else if (generate && ignored) {  // jobs may use generateName (jobs.cc adds the suffix)
    auto s = r.str(*generate, "metadata.generateName");
    ok = ok && s && printable(*generate, "metadata.generateName", *s);
    if (s) m.generate_name = *s;
  } else {
    r.error(*metadata, "metadata.name", "required field missing");
    ok = false;
  }
  if (const YAML::Node* ns = mr->find("namespace")) {
    auto s = r.str(*ns, "metadata.namespace");
    ok = ok && s && printable(*ns, "metadata.namespace", *s);
    if (s) m.namespace_ = *s;
  }
  if (const YAML::Node* labels = mr->find("labels")) {
    auto l = r.labels(*labels, "metadata.labels");
    ok = ok && l;
    if (l) m.labels = *l;
  }
  if (const YAML::Node* annotations = ignored ? mr->find("annotations") : nullptr) {
    auto a = r.labels(*annotations, "metadata.annotations");
    ok = ok && a;
    if (a) m.annotations = *a;
  }
  m.ok = ok;
  return m;
}

std::optional<int32_t> builtin_priority(const std::string& name) {
  if (name == "low") return 100;
  if (name == "normal" || name == "medium") return 500;
  if (name == "high") return 1000;
  if (name == "critical") return 10000;
  return std::nullopt;
}

}  // namespace sluice::config_detail
