// sluice.dev/v1alpha1 SchedulerPolicy: GPU scoring, ordering weights, aging, fairness debt,
// interactive timeout, global pending cap. At most one per configuration.
#include <limits>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

OrderingMode read_mode(Reader& r, const YAML::Node& n, const std::string& path) {
  return r
      .choice<OrderingMode>(
          n, path, {{"composite", OrderingMode::kComposite}, {"kueue", OrderingMode::kKueue}})
      .value_or(OrderingMode::kComposite);
}

// A duration above 0 (0 is an error that names the field); nullopt when it is not one.
std::optional<TimeNs> positive_duration(Reader& r, const YAML::Node& n, const std::string& path) {
  auto v = r.duration(n, path);
  if (v && *v == 0) {
    r.error(n, path, quote(n.Scalar()) + " must be positive");
    return std::nullopt;
  }
  return v;
}

// spec.ordering: `kueue` / `composite`, or a map {mode, weights, agingHorizon,
// fairnessYieldPercentile, fairnessWithinNominal}.
void read_ordering(Reader& r, const YAML::Node& n, SchedulerPolicy& p) {
  if (n.IsScalar()) {
    p.ordering = read_mode(r, n, "spec.ordering");
    return;
  }
  MapReader o(
      r, n, "spec.ordering",
      {{"mode", "weights", "agingHorizon", "fairnessYieldPercentile", "fairnessWithinNominal"}});
  if (const YAML::Node* m = o.find("mode")) p.ordering = read_mode(r, *m, o.path("mode"));
  if (const YAML::Node* w = o.find("weights")) {
    MapReader wm(r, *w, "spec.ordering.weights", {{"priority", "age", "drf", "debt", "deadline"}});
    auto weight = [&](const char* key, double* out) {
      if (const YAML::Node* x = wm.find(key)) {
        if (auto v = r.number(*x, wm.path(key), 0, 1e6)) *out = *v;
      }
    };
    weight("priority", &p.weights.priority);
    weight("age", &p.weights.age);
    weight("drf", &p.weights.drf);
    weight("debt", &p.weights.debt);
    weight("deadline", &p.weights.deadline);
  }
  // Fairness yield (core/order/fairness_yield.h): 0 off, else the class wait percentile.
  if (const YAML::Node* y = o.find("fairnessYieldPercentile")) {
    if (auto v = r.integer(*y, o.path("fairnessYieldPercentile"), 0, 99))
      p.fairness_yield_percentile = static_cast<int32_t>(*v);
  }
  // Fairness within nominal quota (core/order/nominal_fairness.h): 1 off, else the scale.
  if (const YAML::Node* s = o.find("fairnessWithinNominal")) {
    if (auto v = r.number(*s, o.path("fairnessWithinNominal"), 0, 1))
      p.fairness_within_nominal = *v;
  }
  if (const YAML::Node* h = o.find("agingHorizon")) {
    if (auto v = positive_duration(r, *h, "spec.ordering.agingHorizon")) p.aging_horizon_ns = *v;
  }
}

// spec.fairSharing: Kueue's Configuration fairSharing {enable, preemptionStrategies}. Kueue
// accepts [LessThanOrEqualToFinalShare], [LessThanInitialShare] or both in that order.
void read_fair_sharing(Reader& r, const YAML::Node& n, FairSharing& fs) {
  MapReader f(r, n, "spec.fairSharing", {{"enable", "preemptionStrategies"}});
  if (!f.is_map()) return;
  if (const YAML::Node* e = f.find("enable")) {
    if (auto v = r.boolean(*e, f.path("enable"))) fs.enable = *v;
  }
  const YAML::Node* s = f.find("preemptionStrategies");
  if (!s) return;
  const std::string path = f.path("preemptionStrategies");
  if (!s->IsSequence() || s->size() == 0 || s->size() > 2) {
    r.error(*s, path, "a list of one or two strategies");
    return;
  }
  std::vector<FairStrategy> out;
  for (size_t i = 0; i < s->size(); ++i) {
    const YAML::Node item = (*s)[i];
    auto v = r.choice<FairStrategy>(
        item, path + "[" + std::to_string(i) + "]",
        {{"LessThanOrEqualToFinalShare", FairStrategy::kLessThanOrEqualToFinalShare},
         {"LessThanInitialShare", FairStrategy::kLessThanInitialShare}});
    if (!v) return;
    out.push_back(*v);
  }
  if (out.size() == 2 && (out[0] != FairStrategy::kLessThanOrEqualToFinalShare ||
                          out[1] != FairStrategy::kLessThanInitialShare)) {
    r.error(*s, path,
            "with two strategies Kueue accepts only [LessThanOrEqualToFinalShare, "
            "LessThanInitialShare]");
    return;
  }
  fs.strategies = std::move(out);
}

// spec.fairness: the fairness debt's half-life.
void read_fairness(Reader& r, const YAML::Node& n, SchedulerPolicy& p) {
  MapReader f(r, n, "spec.fairness", {{"debtHalfLife"}});
  if (const YAML::Node* h = f.find("debtHalfLife")) {
    if (auto v = positive_duration(r, *h, "spec.fairness.debtHalfLife")) p.debt_half_life_ns = *v;
  }
}

// A setting that refines end alignment, given without it.
void warn_unaligned(Reader& r, const YAML::Node& n, const std::string& path) {
  r.warning(n, path, "has no effect without spec.alignEnds: true");
}

// spec.alignEnds (true, false or bins) and the two settings that limit it (warned about without
// it).
void read_alignment(Reader& r, const MapReader& spec, SchedulerPolicy& p) {
  if (const YAML::Node* n = spec.find("alignEnds")) {
    const bool scalar = n->IsScalar();
    const auto v = scalar ? Reader::bool_word(n->Scalar()) : std::nullopt;
    if (scalar && n->Scalar() == "bins") {
      p.align_ends = p.align_ends_bins = true;
    } else if (v) {
      p.align_ends = *v;
    } else {
      r.error(*n, "spec.alignEnds",
              (scalar ? quote(n->Scalar()) + " " : std::string()) + "must be true, false or bins");
    }
  }
  if (const YAML::Node* n = spec.find("alignEndsAfter")) {
    if (auto v = r.duration(*n, "spec.alignEndsAfter")) {
      p.align_ends_after_ns = *v;
      if (!p.align_ends && *v > 0) warn_unaligned(r, *n, "spec.alignEndsAfter");
    }
  }
  if (const YAML::Node* n = spec.find("alignEndsYieldToSmall")) {
    if (auto v = r.boolean(*n, "spec.alignEndsYieldToSmall")) {
      p.align_ends_yield_small = *v;
      if (!p.align_ends && *v) warn_unaligned(r, *n, "spec.alignEndsYieldToSmall");
    }
  }
}

// spec.withoutVictims {ordering: arrival|policy, alignEnds: true|false, alignEndsAfter: D}: the
// policy while no job may be preempted (read after ordering and alignEnds, which it refines).
void read_without_victims(Reader& r, const YAML::Node& n, SchedulerPolicy& p) {
  MapReader w(r, n, "spec.withoutVictims", {{"ordering", "alignEnds", "alignEndsAfter"}});
  if (const YAML::Node* o = w.find("ordering")) {
    if (auto v = r.choice<bool>(*o, w.path("ordering"), {{"arrival", true}, {"policy", false}})) {
      p.arrival_without_victims = *v;
      if (*v && p.ordering == OrderingMode::kKueue)
        r.warning(*o, w.path("ordering"), "has no effect with ordering: kueue (no fairness terms)");
    }
  }
  if (const YAML::Node* a = w.find("alignEndsAfter")) {
    if (auto v = r.duration(*a, w.path("alignEndsAfter"))) {
      p.align_without_victims_after_ns = *v;
      if (*v > 0 && !p.align_ends) warn_unaligned(r, *a, w.path("alignEndsAfter"));
    }
  }
  if (const YAML::Node* a = w.find("alignEnds")) {
    if (auto v = r.boolean(*a, w.path("alignEnds"))) {
      p.align_without_victims = *v;
      if (!*v && !p.align_ends) warn_unaligned(r, *a, w.path("alignEnds"));
    }
  }
}

}  // namespace

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
                 {{"scoring", "ordering", "fairness", "fairSharing", "interactive",
                   "maxPendingTotal", "preemption", "backfill", "backfillDepth", "alignEnds",
                   "alignEndsAfter", "alignEndsYieldToSmall", "withoutVictims", "flavorSnapshot"}});
  if (const YAML::Node* n = spec.find("scoring")) {
    if (auto v = r.choice<ScoringPolicy>(*n, "spec.scoring",
                                         {{"binpack", ScoringPolicy::kBinPack},
                                          {"spread", ScoringPolicy::kSpread},
                                          {"bestfit", ScoringPolicy::kBestFit},
                                          {"fgd", ScoringPolicy::kFgd},
                                          {"fgdpack", ScoringPolicy::kFgdPack},
                                          {"fgdmix", ScoringPolicy::kFgdMix}}))
      p.gpu_scoring = *v;
  }
  if (const YAML::Node* n = spec.find("ordering")) read_ordering(r, *n, p);
  if (const YAML::Node* n = spec.find("fairness")) read_fairness(r, *n, p);
  if (const YAML::Node* n = spec.find("fairSharing")) read_fair_sharing(r, *n, p.fair_sharing);
  if (const YAML::Node* n = spec.find("interactive")) {
    MapReader i(r, *n, "spec.interactive", {{"timeout"}});
    if (const YAML::Node* t = i.find("timeout")) {
      if (auto v = r.duration(*t, "spec.interactive.timeout")) p.interactive_timeout_ns = *v;
    }
  }
  if (const YAML::Node* n = spec.find("backfill")) {
    if (auto v = r.boolean(*n, "spec.backfill")) p.backfill = *v;
  }
  if (const YAML::Node* n = spec.find("backfillDepth")) {
    if (auto v = r.integer(*n, "spec.backfillDepth", 1, 64))
      p.backfill_depth = static_cast<int32_t>(*v);
  }
  read_alignment(r, spec, p);
  if (const YAML::Node* n = spec.find("withoutVictims")) read_without_victims(r, *n, p);
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
