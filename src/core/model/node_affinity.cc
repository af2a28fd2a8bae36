#include "core/model/node_affinity.h"

#include <algorithm>
#include <charconv>

namespace sluice {

namespace {

bool integer(const std::string& s, int64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool requirement_holds(const NodeRequirement& r, const Labels& labels) {
  const std::string* v = find_label(labels, r.key);
  const auto in = [&] {
    return v && std::find(r.values.begin(), r.values.end(), *v) != r.values.end();
  };
  switch (r.op) {
    case NodeOp::kIn:
      return in();
    case NodeOp::kNotIn:
      return !in();
    case NodeOp::kExists:
      return v != nullptr;
    case NodeOp::kDoesNotExist:
      return v == nullptr;
    case NodeOp::kGt:
    case NodeOp::kLt: {
      int64_t have = 0, want = 0;
      if (!v || r.values.size() != 1 || !integer(*v, &have) || !integer(r.values[0], &want))
        return false;
      return r.op == NodeOp::kGt ? have > want : have < want;
    }
  }
  return false;
}

}  // namespace

bool node_matches(const NodeAffinity& a, const Labels& labels, const std::set<std::string>* keys) {
  const auto counts = [&](const std::string& key) { return !keys || keys->count(key) > 0; };
  for (const auto& [key, value] : a.selector) {
    if (!counts(key)) continue;
    const std::string* v = find_label(labels, key);
    if (!v || *v != value) return false;
  }
  bool any_term = false, some_term_holds = false;
  for (const auto& term : a.terms) {
    bool counted = false, holds = true;
    for (const auto& r : term) {
      if (!counts(r.key)) continue;
      counted = true;
      holds = holds && requirement_holds(r, labels);
    }
    if (!counted) continue;  // nothing left of this term: it does not constrain
    any_term = true;
    some_term_holds = some_term_holds || holds;
  }
  return !any_term || some_term_holds;
}

const Taint* untolerated_taint(const std::vector<Taint>& taints,
                               const std::vector<Toleration>& tolerations) {
  for (const auto& t : taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    const bool tolerated = std::any_of(tolerations.begin(), tolerations.end(), [&](const auto& o) {
      if (!o.effect.empty() && o.effect != t.effect) return false;
      if (o.key.empty()) return o.exists;  // an empty key with Exists tolerates everything
      return o.key == t.key && (o.exists || o.value == t.value);
    });
    if (!tolerated) return &t;
  }
  return nullptr;
}

}  // namespace sluice
