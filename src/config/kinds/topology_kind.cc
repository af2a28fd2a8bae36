// Kueue's Topology kind (topology-aware scheduling): levels named by node labels, outermost
// first, and a ResourceFlavor's spec.topologyName. Mapped onto the Cluster's levels:
//   - kubernetes.io/hostname is sluice's `node` level (Kueue allows it only as the last level);
//   - a label that names a Cluster level (`levels: [cloud.provider.com/topology-rack]`) is it;
//   - when the Cluster declares no levels of its own, its levels are derived from the
//     Topologies' labels and each node's domain from its labels, as Kueue reads nodes.
// Any other label is an error: the Cluster's topology and the Topology would disagree.
#include <algorithm>
#include <map>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

constexpr size_t kMaxTopologyLevels = 16;  // as Kueue's API

// The Cluster's levels from the Topologies' labels (first appearance order) and every node's
// domain from its labels. A domain is its path of label values from the outermost level, as in
// Kueue (rack r1 of block b1 is not rack r1 of block b2); it is named by its own value, or by
// the path ("b1/r1") where that value occurs under more than one parent.
void derive_levels(Config& c, const std::vector<std::string>& labels, Sink& sink,
                   const Where& first) {
  Cluster& cl = c.cluster;
  cl.levels = labels;
  cl.domain_names.assign(labels.size(), {});
  std::vector<std::map<std::vector<std::string>, int32_t>> ids(labels.size());
  std::vector<int64_t> unlabelled(labels.size(), 0);
  for (Node& n : cl.nodes) {
    n.domains.assign(labels.size(), -1);
    std::vector<std::string> path;
    for (size_t l = 0; l < labels.size(); ++l) {
      const std::string* v = find_label(n.labels, labels[l]);
      path.push_back(v ? *v : "");
      if (!v) {
        ++unlabelled[l];
        continue;
      }
      auto [it, added] = ids[l].emplace(path, static_cast<int32_t>(ids[l].size()));
      n.domains[l] = it->second;
    }
  }
  for (size_t l = 0; l < labels.size(); ++l) {
    std::map<std::string, int> uses;  // value -> paths that end in it
    for (const auto& [path, id] : ids[l]) ++uses[path.back()];
    cl.domain_names[l].resize(ids[l].size());
    for (const auto& [path, id] : ids[l]) {
      std::string name = path.back();
      if (uses[name] > 1) {
        name.clear();
        for (const auto& v : path) name += (name.empty() ? "" : "/") + v;
      }
      cl.domain_names[l][static_cast<size_t>(id)] = name;
    }
    if (unlabelled[l] > 0)
      sink.warning(format(first, "spec.levels",
                          std::to_string(unlabelled[l]) + " of " + std::to_string(cl.nodes.size()) +
                              " nodes carry no label " + labels[l] +
                              ": they are in no domain of that level"));
  }
}

}  // namespace

void read_topology(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/true);
  RawTopology raw;
  raw.topology.name = t.meta.name;
  raw.name_loc = t.name_loc;
  if (!t.spec) return;
  MapReader spec(r, *t.spec, "spec", {{"levels"}});
  const YAML::Node* levels = spec.is_map() ? spec.required("levels") : nullptr;
  if (!levels || !r.expect_seq(*levels, "spec.levels")) return;
  if (levels->size() == 0 || levels->size() > kMaxTopologyLevels)
    r.error(*levels, "spec.levels",
            "must list 1 to " + std::to_string(kMaxTopologyLevels) + " levels");
  for (size_t i = 0; i < levels->size() && i < kMaxTopologyLevels; ++i) {
    const std::string path = index("spec.levels", i);
    MapReader level(r, (*levels)[i], path, {{"nodeLabel"}});
    const YAML::Node* label = level.is_map() ? level.required("nodeLabel") : nullptr;
    auto s = label ? r.str(*label, level.path("nodeLabel")) : std::nullopt;
    if (!s) continue;
    const auto& seen = raw.topology.node_labels;
    if (std::find(seen.begin(), seen.end(), *s) != seen.end()) {
      r.error(*label, level.path("nodeLabel"), quote(*s) + " is listed twice");
      continue;
    }
    if (*s == kHostnameLabel && i + 1 != levels->size()) {
      r.error(*label, level.path("nodeLabel"),
              std::string(kHostnameLabel) + " can only be the last (lowest) level");
      continue;
    }
    raw.topology.node_labels.push_back(*s);
    raw.label_locs.push_back(Loc{r.where(*label), level.path("nodeLabel")});
  }
  if (t.meta.ok) b.topologies.push_back(std::move(raw));
}

void resolve_topologies(Builder& b, Sink& sink) {
  Config& c = b.config;
  // 1. Unique names.
  std::vector<const RawTopology*> kept;
  for (const RawTopology& raw : b.topologies) {
    auto same = std::find_if(kept.begin(), kept.end(), [&](const RawTopology* k) {
      return k->topology.name == raw.topology.name;
    });
    if (same != kept.end()) {
      sink.error(format(raw.name_loc.where, raw.name_loc.path,
                        "duplicate Topology " + quote(raw.topology.name) + " (first defined at " +
                            (*same)->name_loc.where.str() + ")"));
      continue;
    }
    kept.push_back(&raw);
  }
  // 2. A Cluster without levels of its own takes the Topologies' labels as its levels.
  if (c.cluster.levels.empty() && !kept.empty()) {
    std::vector<std::string> labels;
    for (const RawTopology* raw : kept)
      for (const std::string& l : raw->topology.node_labels)
        if (l != kHostnameLabel && std::find(labels.begin(), labels.end(), l) == labels.end())
          labels.push_back(l);
    if (labels.size() > kMaxTopologyLevels) {
      sink.error(format(kept.front()->name_loc.where, "spec.levels",
                        "the Topologies name " + std::to_string(labels.size()) +
                            " distinct node labels; at most " + std::to_string(kMaxTopologyLevels) +
                            " levels"));
      return;
    }
    derive_levels(c, labels, sink, kept.front()->name_loc.where);
  }
  // 3. Every level of every Topology onto a Cluster level.
  std::vector<std::string> known = c.cluster.levels;
  known.push_back(kHostnameLabel);
  for (const RawTopology* raw : kept) {
    KueueTopology topo = raw->topology;
    for (size_t i = 0; i < topo.node_labels.size(); ++i) {
      const std::string& label = topo.node_labels[i];
      const int level = label == kHostnameLabel ? static_cast<int>(c.cluster.levels.size())
                                                : c.cluster.level_index(label);
      if (level < 0 ||
          (level == static_cast<int>(c.cluster.levels.size()) && label != kHostnameLabel)) {
        const Loc& at = raw->label_locs[i];
        sink.error(format(at.where, at.path,
                          "node label " + quote(label) + " is not a level of the Cluster (" +
                              join_list(known) +
                              "): name a Cluster level after the label, or declare no levels "
                              "so that they are read from the nodes' labels"));
        continue;
      }
      topo.levels.push_back(level);
    }
    if (topo.levels.size() == topo.node_labels.size()) c.topologies.push_back(std::move(topo));
  }
  // 4. Flavors' topologyName; Kueue requires a TAS flavor to select its nodes by label.
  for (size_t i = 0; i < b.flavor_topology.size() && i < c.flavors.size(); ++i) {
    const auto& [name, loc] = b.flavor_topology[i];
    if (name.empty()) continue;
    auto it = std::find_if(c.topologies.begin(), c.topologies.end(),
                           [&](const KueueTopology& t) { return t.name == name; });
    const bool defined = std::any_of(kept.begin(), kept.end(), [&](const RawTopology* raw) {
      return raw->topology.name == name;
    });
    if (it == c.topologies.end() && defined) continue;  // its own error was reported
    if (it == c.topologies.end()) {
      std::vector<std::string> names;
      for (const RawTopology* raw : kept) names.push_back(raw->topology.name);
      sink.error(format(loc.where, loc.path,
                        "Topology " + quote(name) + " not found (defined: " +
                            (names.empty() ? "none" : join_list(names)) + ")"));
      continue;
    }
    c.flavors[i].topology = static_cast<int32_t>(it - c.topologies.begin());
    if (c.flavors[i].node_labels.empty())
      sink.error(format(loc.where, loc.path,
                        "a flavor with a topologyName needs at least one nodeLabel (as in "
                        "Kueue)"));
  }
}

}  // namespace sluice::config_detail
