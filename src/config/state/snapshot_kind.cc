// sluice.dev/v1alpha1 Snapshot: the time a saved state describes (the server's export writes
// one; `sluice plan` runs its cycle at this time unless --now says otherwise). At most one.
//
//   kind: Snapshot
//   metadata: {name: prod}
//   spec:
//     time: 1712345678.25     # seconds, on the clock of the jobs' submitTime / admissionTime
//     server: http://...      # where it was exported from (informational)
#include "config/internal.h"

namespace sluice::config_detail {

void read_snapshot(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {{"apiVersion", "kind", "metadata", "spec"}});
  if (const YAML::Node* m = top.find("metadata")) {
    if (!read_metadata(r, doc, m).ok) return;
  }
  const YAML::Node* spec_node = top.required("spec");
  if (!spec_node) return;
  MapReader spec(r, *spec_node, "spec", {{"time", "server"}});
  if (!spec.is_map()) return;
  if (const YAML::Node* s = spec.find("server")) (void)r.str(*s, "spec.server", true);
  const YAML::Node* t = spec.required("time");
  if (!t) return;
  auto v = t->IsScalar() ? parse_scaled_decimal(t->Scalar(), kNsPerSec) : std::nullopt;
  if (!v || *v < 0) {
    r.error(*t, "spec.time", "must be a number of seconds (not negative)");
    return;
  }
  if (b.snapshot_ns) {
    r.error(doc, "kind", "a second Snapshot document (one state has one time)");
    return;
  }
  b.snapshot_ns = *v;
}

}  // namespace sluice::config_detail
