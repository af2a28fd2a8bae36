// sluice.dev/v1alpha1 SchedulerPolicy: GPU scoring, ordering weights, aging, fairness debt,
// interactive timeout, global pending cap. At most one per configuration.
#include <limits>

#include "core/config/internal.h"

namespace sluice::config_detail {

void read_policy(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {{"apiVersion", "kind", "metadata", "spec", "status"}});
  if (const YAML::Node* m = top.find("metadata")) {
    read_metadata(r, doc, m);  // name optional here: reported only if malformed
  }
  if (b.policy_where) {
    r.error(doc, "kind",
            "a second SchedulerPolicy (the first is at " + b.policy_where->str() +
                "); at most one is allowed");
    return;
  }
  b.policy_where = r.where(doc);
  const YAML::Node* spec_node = top.find("spec");
  if (!spec_node) return;  // all defaults
  SchedulerPolicy& p = b.config.policy;
  MapReader spec(r, *spec_node, "spec",
                 {{"scoring", "ordering", "fairness", "interactive", "maxPendingTotal",
                   "preemption", "backfill", "flavorSnapshot"}});
  if (const YAML::Node* n = spec.find("scoring")) {
    if (auto v = r.choice<ScoringPolicy>(*n, "spec.scoring",
                                         {{"binpack", ScoringPolicy::kBinPack},
                                          {"spread", ScoringPolicy::kSpread},
                                          {"bestfit", ScoringPolicy::kBestFit},
                                          {"fgd", ScoringPolicy::kFgd},
                                          {"fgdpack", ScoringPolicy::kFgdPack}}))
      p.gpu_scoring = *v;
  }
  if (const YAML::Node* n = spec.find("ordering")) {
    MapReader o(r, *n, "spec.ordering", {{"weights", "agingHorizon"}});
    if (const YAML::Node* w = o.find("weights")) {
      MapReader wm(r, *w, "spec.ordering.weights", {{"priority", "age", "drf", "debt"}});
      auto weight = [&](const char* key, double* out) {
        if (const YAML::Node* x = wm.find(key)) {
          if (auto v = r.number(*x, wm.path(key), 0, 1e6)) *out = *v;
        }
      };
      weight("priority", &p.weights.priority);
      weight("age", &p.weights.age);
      weight("drf", &p.weights.drf);
      weight("debt", &p.weights.debt);
    }
    if (const YAML::Node* h = o.find("agingHorizon")) {
      if (auto v = r.duration(*h, "spec.ordering.agingHorizon")) {
        if (*v == 0) {
          r.error(*h, "spec.ordering.agingHorizon", quote(h->Scalar()) + " must be positive");
        } else {
          p.aging_horizon_ns = *v;
        }
      }
    }
  }
  if (const YAML::Node* n = spec.find("fairness")) {
    MapReader f(r, *n, "spec.fairness", {{"debtHalfLife"}});
    if (const YAML::Node* h = f.find("debtHalfLife")) {
      if (auto v = r.duration(*h, "spec.fairness.debtHalfLife")) {
        if (*v == 0) {
          r.error(*h, "spec.fairness.debtHalfLife", quote(h->Scalar()) + " must be positive");
        } else {
          p.debt_half_life_ns = *v;
        }
      }
    }
  }
  if (const YAML::Node* n = spec.find("interactive")) {
    MapReader i(r, *n, "spec.interactive", {{"timeout"}});
    if (const YAML::Node* t = i.find("timeout")) {
      if (auto v = r.duration(*t, "spec.interactive.timeout")) p.interactive_timeout_ns = *v;
    }
  }
  if (const YAML::Node* n = spec.find("backfill")) {
    if (auto v = r.boolean(*n, "spec.backfill")) p.backfill = *v;
  }
  if (const YAML::Node* n = spec.find("flavorSnapshot")) {
    if (auto v = r.choice<bool>(*n, "spec.flavorSnapshot", {{"live", false}, {"cycleStart", true}}))
      p.cycle_start_flavors = *v;
  }
  if (const YAML::Node* n = spec.find("preemption")) {
    MapReader pm(r, *n, "spec.preemption", {{"maxPerJob"}});
    if (const YAML::Node* m = pm.find("maxPerJob")) {
      if (auto v = r.integer(*m, "spec.preemption.maxPerJob", 0, 1'000'000))
        p.max_preemptions_per_job = static_cast<int32_t>(*v);
    }
  }
  if (const YAML::Node* n = spec.find("maxPendingTotal")) {
    if (auto v = r.integer(*n, "spec.maxPendingTotal", 0, std::numeric_limits<int32_t>::max()))
      p.max_pending_total = static_cast<int32_t>(*v);
  }
}

}  // namespace sluice::config_detail
