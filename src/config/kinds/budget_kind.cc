// sluice.dev/v1alpha1 Budget: a namespace's GPU-hour budget per period, with per-GPU-model
// weights (Slurm's billing weights). One per namespace.
//
//   kind: Budget
//   metadata: {name: nlp}
//   spec:
//     namespace: nlp          # default: metadata.name
//     gpuHours: 1000          # weighted GPU-hours per period (decimals allowed)
//     period: 720h            # fixed length (default 720h = 30 days); no calendar months
//     anchor: 0               # a period boundary on the scheduler's clock, in seconds
//     weights: {H100: 2, A100: 1}
//     defaultWeight: 1        # models not listed
#include <limits>

#include "config/internal.h"

namespace sluice::config_detail {

void read_budget(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {{"apiVersion", "kind", "metadata", "spec", "status"}});
  Metadata meta = read_metadata(r, doc, top.find("metadata"));
  Budget budget;
  budget.name = meta.name;
  budget.namespace_ = meta.name;
  bool ok = meta.ok;
  const YAML::Node* spec_node = top.required("spec");
  if (!spec_node) return;
  MapReader spec(r, *spec_node, "spec",
                 {{"namespace", "gpuHours", "period", "anchor", "weights", "defaultWeight"}});
  if (!spec.is_map()) return;
  if (const YAML::Node* n = spec.find("namespace")) {
    auto s = r.str(*n, "spec.namespace");
    ok = ok && s;
    if (s) budget.namespace_ = *s;
  }
  // Quantities in milli (the CPU canonical unit): "1000" -> 1,000,000 milli GPU-hours.
  if (const YAML::Node* n = spec.required("gpuHours")) {
    auto v = r.quantity(*n, "spec.gpuHours", kCpu);
    ok = ok && v;
    if (v) budget.gpu_hours_milli = *v;
  } else {
    ok = false;
  }
  if (const YAML::Node* n = spec.find("period")) {
    auto v = r.duration(*n, "spec.period");
    if (v && *v == 0) {
      r.error(*n, "spec.period", quote(n->Scalar()) + " must be positive");
      v.reset();
    }
    ok = ok && v;
    if (v) budget.period_ns = *v;
  }
  if (const YAML::Node* n = spec.find("anchor")) {
    auto v = r.time_point(*n, "spec.anchor");
    ok = ok && v;
    if (v) budget.anchor_ns = *v;
  }
  if (const YAML::Node* n = spec.find("weights")) {
    std::vector<std::string> unused;  // every key is a GPU model
    MapReader w(r, *n, "spec.weights", {}, &unused);
    for (const auto& [model, value] : w.entries()) {
      auto v = r.quantity(value, w.path(model), kCpu);
      ok = ok && v;
      if (v) budget.weights_milli.emplace_back(model, *v);
    }
  }
  if (const YAML::Node* n = spec.find("defaultWeight")) {
    auto v = r.quantity(*n, "spec.defaultWeight", kCpu);
    ok = ok && v;
    if (v) budget.default_weight_milli = *v;
  }
  if (!ok) return;
  if (b.config.find_budget(budget.namespace_)) {
    r.error(doc, "spec.namespace",
            "a second Budget for namespace " + quote(budget.namespace_) +
                " (at most one per namespace)");
    return;
  }
  b.config.budgets.push_back(std::move(budget));
}

}  // namespace sluice::config_detail
