// Kubernetes' nodeSelector, required node affinity and tolerations of a pod spec, and a
// ResourceFlavor's nodeTaints (core/model/node_affinity.h says what sluice does with them).
#include <memory>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

std::optional<std::vector<NodeRequirement>> read_term(Reader& r, const YAML::Node& node,
                                                      const std::string& path,
                                                      std::vector<std::string>* ignored) {
  MapReader term(r, node, path, {"matchExpressions"}, ignored);  // matchFields: listed as ignored
  if (!term.is_map()) return std::nullopt;
  std::vector<NodeRequirement> out;
  const YAML::Node* exprs = term.find("matchExpressions");
  if (!exprs) return out;
  if (!r.expect_seq(*exprs, term.path("matchExpressions"))) return std::nullopt;
  for (size_t i = 0; i < exprs->size(); ++i) {
    const std::string p = index(term.path("matchExpressions"), i);
    MapReader e(r, (*exprs)[i], p, {{"key", "operator", "values"}});
    if (!e.is_map()) return std::nullopt;
    NodeRequirement req;
    const YAML::Node* key = e.required("key");
    const YAML::Node* op = e.required("operator");
    if (!key || !op) return std::nullopt;
    auto k = r.str(*key, e.path("key"));
    auto o = r.choice<NodeOp>(*op, e.path("operator"),
                              {{"In", NodeOp::kIn},
                               {"NotIn", NodeOp::kNotIn},
                               {"Exists", NodeOp::kExists},
                               {"DoesNotExist", NodeOp::kDoesNotExist},
                               {"Gt", NodeOp::kGt},
                               {"Lt", NodeOp::kLt}});
    if (!k || !o) return std::nullopt;
    req.key = *k;
    req.op = *o;
    if (const YAML::Node* v = e.find("values")) {
      auto values = r.str_list(*v, e.path("values"));
      if (!values) return std::nullopt;
      req.values = std::move(*values);
    }
    const bool set_op = req.op == NodeOp::kIn || req.op == NodeOp::kNotIn;
    const bool one = req.op == NodeOp::kGt || req.op == NodeOp::kLt;
    if ((set_op && req.values.empty()) || (one && req.values.size() != 1) ||
        (!set_op && !one && !req.values.empty())) {
      r.error(*op, e.path("operator"),
              set_op ? "In and NotIn need values"
              : one  ? "Gt and Lt need exactly one value"
                     : "Exists and DoesNotExist take no values");
      return std::nullopt;
    }
    out.push_back(std::move(req));
  }
  return out;
}

bool read_affinity(Reader& r, const YAML::Node& node, const std::string& path, NodeAffinity& a,
                   std::vector<std::string>* ignored) {
  MapReader aff(r, node, path, {"nodeAffinity"}, ignored);  // pod (anti-)affinity: ignored
  if (!aff.is_map()) return false;
  const YAML::Node* na = aff.find("nodeAffinity");
  if (!na) return true;
  MapReader n(r, *na, aff.path("nodeAffinity"), {"requiredDuringSchedulingIgnoredDuringExecution"},
              ignored);  // preferred terms: ignored (a hint to kube-scheduler)
  if (!n.is_map()) return false;
  const YAML::Node* req = n.find("requiredDuringSchedulingIgnoredDuringExecution");
  if (!req) return true;
  const std::string rpath = n.path("requiredDuringSchedulingIgnoredDuringExecution");
  MapReader rm(r, *req, rpath, {{"nodeSelectorTerms"}});
  if (!rm.is_map()) return false;
  const YAML::Node* terms = rm.required("nodeSelectorTerms");
  if (!terms || !r.expect_seq(*terms, rm.path("nodeSelectorTerms"))) return false;
  for (size_t i = 0; i < terms->size(); ++i) {
    auto t = read_term(r, (*terms)[i], index(rm.path("nodeSelectorTerms"), i), ignored);
    if (!t) return false;
    a.terms.push_back(std::move(*t));
  }
  return true;
}

bool read_tolerations(Reader& r, const YAML::Node& node, const std::string& path,
                      std::vector<Toleration>& out) {
  if (!r.expect_seq(node, path)) return false;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string p = index(path, i);
    MapReader m(r, node[i], p, {{"key", "operator", "value", "effect", "tolerationSeconds"}});
    if (!m.is_map()) return false;
    Toleration t;
    if (const YAML::Node* n = m.find("key")) {
      auto s = r.str(*n, m.path("key"), /*allow_empty=*/true);
      if (!s) return false;
      t.key = *s;
    }
    if (const YAML::Node* n = m.find("operator")) {
      auto e = r.choice<bool>(*n, m.path("operator"), {{"Equal", false}, {"Exists", true}});
      if (!e) return false;
      t.exists = *e;
    }
    if (const YAML::Node* n = m.find("value")) {
      auto s = r.str(*n, m.path("value"), /*allow_empty=*/true);
      if (!s) return false;
      t.value = *s;
    }
    if (const YAML::Node* n = m.find("effect")) {
      auto e = r.choice<std::string>(*n, m.path("effect"),
                                     {{"", ""},
                                      {"NoSchedule", "NoSchedule"},
                                      {"PreferNoSchedule", "PreferNoSchedule"},
                                      {"NoExecute", "NoExecute"}});
      if (!e) return false;
      t.effect = *e;
    }
    if (t.key.empty() && !t.exists) {
      r.error(node[i], p, "a toleration without a key must have operator Exists");
      return false;
    }
    out.push_back(std::move(t));
  }
  return true;
}

}  // namespace

bool read_node_constraints(Reader& r, const MapReader& spec, PodSet& set,
                           std::vector<std::string>* ignored) {
  NodeAffinity a;
  bool ok = true;
  if (const YAML::Node* n = spec.find("nodeSelector")) {
    if (auto l = r.labels(*n, spec.path("nodeSelector")))
      a.selector = std::move(*l);
    else
      ok = false;
  }
  if (const YAML::Node* n = spec.find("affinity"))
    ok = read_affinity(r, *n, spec.path("affinity"), a, ignored) && ok;
  if (const YAML::Node* n = spec.find("tolerations"))
    ok = read_tolerations(r, *n, spec.path("tolerations"), a.tolerations) && ok;
  if (!ok) return false;
  if (a.constrains_nodes() || !a.tolerations.empty())
    set.node = std::make_shared<const NodeAffinity>(std::move(a));
  return true;
}

bool read_node_taints(Reader& r, const YAML::Node& node, const std::string& path,
                      std::vector<Taint>& out) {
  if (!r.expect_seq(node, path)) return false;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string p = index(path, i);
    MapReader m(r, node[i], p, {{"key", "value", "effect"}, {"timeAdded"}});
    if (!m.is_map()) return false;
    const YAML::Node* key = m.required("key");
    const YAML::Node* effect = m.required("effect");
    if (!key || !effect) return false;
    Taint t;
    auto k = r.str(*key, m.path("key"));
    auto e = r.choice<std::string>(*effect, m.path("effect"),
                                   {{"NoSchedule", "NoSchedule"},
                                    {"PreferNoSchedule", "PreferNoSchedule"},
                                    {"NoExecute", "NoExecute"}});
    if (!k || !e) return false;
    t.key = *k;
    t.effect = *e;
    if (const YAML::Node* v = m.find("value")) {
      auto s = r.str(*v, m.path("value"), /*allow_empty=*/true);
      if (!s) return false;
      t.value = *s;
    }
    out.push_back(std::move(t));
  }
  return true;
}

}  // namespace sluice::config_detail
