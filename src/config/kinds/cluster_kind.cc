// sluice.dev/v1alpha1 Cluster: topology levels, nodes, node groups, GPUs (explicit or shorthand),
// MIG slices. Several Cluster documents describe one cluster (same name, same levels).
#include <algorithm>
#include <limits>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

constexpr int64_t kMaxGpusPerNode = 64;
constexpr int64_t kMaxNodes = 100'000;
constexpr int kMigComputeSlices = 7;  // A100 / H100 / H200: 7 compute slices per GPU

std::string padded(int64_t value, int64_t largest) {
  std::string s = std::to_string(value);
  size_t width = std::to_string(largest).size();
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// "1g.10gb" -> compute slices (1); nullopt when not a MIG profile name.
std::optional<int> mig_compute_slices(std::string_view profile) {
  size_t g = profile.find('g');
  if (g == 0 || g == std::string_view::npos || g + 1 >= profile.size() || profile[g + 1] != '.')
    return std::nullopt;
  int n = 0;
  for (size_t i = 0; i < g; ++i) {
    if (profile[i] < '0' || profile[i] > '9') return std::nullopt;
    n = n * 10 + (profile[i] - '0');
    if (n > kMigComputeSlices) return std::nullopt;
  }
  std::string_view rest = profile.substr(g + 2);  // "10gb" or "10gb+me"
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || rest.substr(digits, 2) != "gb") return std::nullopt;
  rest.remove_prefix(digits + 2);
  if (!rest.empty() && rest[0] != '+') return std::nullopt;
  return n;
}

// mig: [1g.10gb, 3g.40gb] (or full resource names nvidia.com/mig-1g.10gb).
std::optional<std::vector<MigSlice>> read_mig(Reader& r, const YAML::Node& node,
                                              const std::string& path, ResourceCatalog& catalog) {
  auto names = r.str_list(node, path);
  if (!names) return std::nullopt;
  std::vector<MigSlice> slices;
  int compute = 0;
  bool ok = true;
  for (size_t i = 0; i < names->size(); ++i) {
    std::string profile = (*names)[i];
    if (std::string_view(profile).starts_with(kMigPrefix)) profile.erase(0, kMigPrefix.size());
    auto n = mig_compute_slices(profile);
    if (!n) {
      r.error(node[i], index(path, i),
              quote((*names)[i]) + " is not a MIG profile (e.g. 1g.10gb, 3g.40gb, 7g.80gb)");
      ok = false;
      continue;
    }
    compute += *n;
    auto id =
        intern_resource(r, catalog, node[i], index(path, i), std::string(kMigPrefix) + profile);
    if (!id) {
      ok = false;
      continue;
    }
    slices.push_back(MigSlice{*id});
  }
  if (compute > kMigComputeSlices) {
    r.error(node, path,
            "slices use " + std::to_string(compute) + " compute slices; a GPU has " +
                std::to_string(kMigComputeSlices));
    ok = false;
  }
  if (!ok) return std::nullopt;
  return slices;
}

// gpus: [{model, memory, nvlinkDomain, numa, pcieSwitch, mig, count}, ...]
//   or  {count, model, memory, nvlinkDomains, numaNodes, pcieSwitches, mig}
std::optional<std::vector<Gpu>> read_gpus(Reader& r, const YAML::Node& node,
                                          const std::string& path, ResourceCatalog& catalog) {
  std::vector<Gpu> gpus;
  bool ok = true;
  auto common = [&](MapReader& m, Gpu& g) {
    if (const YAML::Node* n = m.required("model")) {
      auto s = r.str(*n, m.path("model"));
      ok = ok && s;
      if (s) g.model = *s;
    } else {
      ok = false;
    }
    if (const YAML::Node* n = m.find("memory")) {
      auto v = r.quantity(*n, m.path("memory"), kMemory);
      ok = ok && v;
      if (v) g.memory_mib = *v;
    }
    if (const YAML::Node* n = m.find("mig")) {
      auto v = read_mig(r, *n, m.path("mig"), catalog);
      ok = ok && v;
      if (v) g.mig = *v;
    }
  };
  if (node.IsNull()) return gpus;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      MapReader m(r, node[i], index(path, i),
                  {{"model", "memory", "nvlinkDomain", "numa", "pcieSwitch", "mig", "count"}});
      if (!m.is_map()) {
        ok = false;
        continue;
      }
      Gpu g;
      common(m, g);
      int64_t count = 1;
      auto small = [&](const char* key, int32_t* out) {
        if (const YAML::Node* n = m.find(key)) {
          auto v = r.integer(*n, m.path(key), 0, 1024);
          ok = ok && v;
          if (v) *out = static_cast<int32_t>(*v);
        }
      };
      small("nvlinkDomain", &g.nvlink_domain);
      small("numa", &g.numa_node);
      small("pcieSwitch", &g.pcie_switch);
      if (const YAML::Node* n = m.find("count")) {
        auto v = r.integer(*n, m.path("count"), 1, kMaxGpusPerNode);
        ok = ok && v;
        if (v) count = *v;
      }
      for (int64_t k = 0; k < count && gpus.size() <= kMaxGpusPerNode; ++k) gpus.push_back(g);
    }
  } else if (node.IsMap()) {
    MapReader m(
        r, node, path,
        {{"count", "model", "memory", "nvlinkDomains", "numaNodes", "pcieSwitches", "mig"}});
    Gpu g;
    common(m, g);
    int64_t count = 0;
    if (const YAML::Node* n = m.required("count")) {
      auto v = r.integer(*n, m.path("count"), 0, kMaxGpusPerNode);
      ok = ok && v;
      if (v) count = *v;
    } else {
      ok = false;
    }
    // Domains split the GPUs evenly in index order: 8 GPUs, 2 domains -> 0-3, 4-7.
    auto split = [&](const char* key) -> int64_t {
      const YAML::Node* n = m.find(key);
      if (!n) return 1;
      auto v = r.integer(*n, m.path(key), 1, kMaxGpusPerNode);
      if (!v) {
        ok = false;
        return 1;
      }
      if (count > 0 && count % *v != 0) {
        r.error(*n, m.path(key),
                quote(n->Scalar()) + " must divide count (" + std::to_string(count) + ")");
        ok = false;
        return 1;
      }
      return *v;
    };
    int64_t nvlink = split("nvlinkDomains"), numa = split("numaNodes"),
            pcie = split("pcieSwitches");
    for (int64_t i = 0; ok && i < count; ++i) {
      Gpu x = g;
      x.nvlink_domain = static_cast<int32_t>(i / (count / nvlink));
      x.numa_node = static_cast<int32_t>(i / (count / numa));
      x.pcie_switch = static_cast<int32_t>(i / (count / pcie));
      gpus.push_back(std::move(x));
    }
  } else {
    r.error(node, path, "must be a list of GPUs or a map {count, model, ...}");
    return std::nullopt;
  }
  if (static_cast<int64_t>(gpus.size()) > kMaxGpusPerNode) {
    r.error(node, path, "more than " + std::to_string(kMaxGpusPerNode) + " GPUs on one node");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return gpus;
}

// The fields a node and a node group share.
bool read_node_common(Reader& r, MapReader& m, Node& node, ResourceCatalog& catalog) {
  bool ok = true;
  if (const YAML::Node* n = m.find("labels")) {
    auto l = r.labels(*n, m.path("labels"));
    ok = ok && l;
    if (l) node.labels = *l;
  }
  if (const YAML::Node* n = m.required("cpu")) {
    auto v = r.quantity(*n, m.path("cpu"), kCpu);
    ok = ok && v;
    if (v) node.cpu_milli = *v;
  } else {
    ok = false;
  }
  if (const YAML::Node* n = m.required("memory")) {
    auto v = r.quantity(*n, m.path("memory"), kMemory);
    ok = ok && v;
    if (v) node.memory_mib = *v;
  } else {
    ok = false;
  }
  if (const YAML::Node* n = m.find("gpus")) {
    auto g = read_gpus(r, *n, m.path("gpus"), catalog);
    ok = ok && g;
    if (g) node.gpus = std::move(*g);
  }
  if (const YAML::Node* n = m.find("ready")) {
    auto v = r.boolean(*n, m.path("ready"));
    ok = ok && v;
    if (v) node.ready = *v;
  }
  return ok;
}

class ClusterReader {
 public:
  ClusterReader(Reader& r, Builder& b) : r_(r), b_(b), cluster_(b.config.cluster) {}

  void read(const YAML::Node& doc) {
    MapReader top(r_, doc, "", {{"apiVersion", "kind", "metadata", "spec", "status"}});
    Metadata meta = read_metadata(r_, doc, top.find("metadata"));
    if (!meta.ok) return;
    const YAML::Node* spec_node = top.required("spec");
    if (!spec_node) return;
    MapReader spec(r_, *spec_node, "spec", {{"topology", "nodes", "nodeGroups"}});
    if (!spec.is_map()) return;
    // 1. Name and levels: one cluster, however many documents describe it.
    std::optional<std::vector<std::string>> levels;
    if (const YAML::Node* t = spec.find("topology")) {
      MapReader topo(r_, *t, "spec.topology", {{"levels"}});
      if (const YAML::Node* l = topo.find("levels")) {
        levels = r_.str_list(*l, "spec.topology.levels");
        if (!levels) return;
        for (size_t i = 0; i < levels->size(); ++i) {
          const std::string& name = (*levels)[i];
          if (name == "node" ||
              std::count(levels->begin(), levels->begin() + static_cast<long>(i), name))
            r_.error((*l)[i], index("spec.topology.levels", i),
                     quote(name) + (name == "node" ? " is reserved (the node itself is a level)"
                                                   : " is listed twice"));
        }
      }
    }
    if (b_.cluster_where) {
      if (meta.name != cluster_.name) {
        r_.error(doc, "metadata.name",
                 "Cluster " + quote(meta.name) + " conflicts with Cluster " + quote(cluster_.name) +
                     " (" + b_.cluster_where->str() +
                     "): several Cluster documents describe one cluster and share its name");
        return;
      }
      if (levels && *levels != cluster_.levels) {
        r_.error(*spec.find("topology"), "spec.topology.levels",
                 "[" + join_list(*levels) + "] differs from [" + join_list(cluster_.levels) +
                     "] (" + b_.cluster_where->str() + ")");
        return;
      }
    } else {
      b_.cluster_where = r_.where(doc);
      cluster_.name = meta.name;
      if (levels) cluster_.levels = *levels;
      b_.domain_ids.resize(cluster_.levels.size());
      b_.domain_parent.resize(cluster_.levels.size());
      cluster_.domain_names.resize(cluster_.levels.size());
    }
    // 2. Nodes, then node groups.
    if (const YAML::Node* n = spec.find("nodes")) {
      if (r_.expect_seq(*n, "spec.nodes"))
        for (size_t i = 0; i < n->size(); ++i) read_node((*n)[i], index("spec.nodes", i));
    }
    if (const YAML::Node* n = spec.find("nodeGroups")) {
      if (r_.expect_seq(*n, "spec.nodeGroups"))
        for (size_t i = 0; i < n->size(); ++i) read_group((*n)[i], index("spec.nodeGroups", i));
    }
  }

 private:
  void read_node(const YAML::Node& node, const std::string& path) {
    MapReader m(r_, node, path, {{"name", "labels", "cpu", "memory", "topology", "gpus", "ready"}});
    if (!m.is_map()) return;
    Node out;
    bool ok = true;
    if (const YAML::Node* n = m.required("name")) {
      auto s = r_.str(*n, m.path("name"));
      ok = ok && s;
      if (s) out.name = *s;
    } else {
      ok = false;
    }
    ok = read_node_common(r_, m, out, b_.config.resources) && ok;
    std::vector<std::string> domains(cluster_.levels.size());
    const YAML::Node* topo = m.find("topology");
    if (topo) {
      MapReader t(r_, *topo, m.path("topology"), {}, &unused_);
      for (const auto& [level, value] : t.entries()) {
        int li = level_of(value, t.path(level), level);
        if (li < 0) {
          ok = false;
          continue;
        }
        auto s = r_.str(value, t.path(level));
        ok = ok && s;
        if (s) domains[static_cast<size_t>(li)] = *s;
      }
    }
    if (!ok) return;
    add_node(std::move(out), domains, topo ? *topo : node, m.path("topology"), node,
             m.path("name"));
  }

  void read_group(const YAML::Node& node, const std::string& path) {
    MapReader m(r_, node, path,
                {{"namePrefix", "count", "firstIndex", "labels", "cpu", "memory", "topology",
                  "gpus", "ready"}});
    if (!m.is_map()) return;
    Node proto;
    bool ok = true;
    std::string prefix;
    int64_t count = 0, first = 0;
    if (const YAML::Node* n = m.required("namePrefix")) {
      auto s = r_.str(*n, m.path("namePrefix"));
      ok = ok && s;
      if (s) prefix = *s;
    } else {
      ok = false;
    }
    if (const YAML::Node* n = m.required("count")) {
      auto v = r_.integer(*n, m.path("count"), 1, kMaxNodes);
      ok = ok && v;
      if (v) count = *v;
    } else {
      ok = false;
    }
    if (const YAML::Node* n = m.find("firstIndex")) {
      auto v = r_.integer(*n, m.path("firstIndex"), 0, kMaxNodes);
      ok = ok && v;
      if (v) first = *v;
    }
    ok = read_node_common(r_, m, proto, b_.config.resources) && ok;
    // topology: {level: "fixed-name"} or {level: {every: N, prefix: P, start: S}}; a generated
    // domain holds N consecutive nodes of the group and is named P + (S + i / N).
    struct LevelRule {
      std::string fixed;
      int64_t every = 0;
      std::string prefix;
      int64_t start = 0;
    };
    std::vector<std::optional<LevelRule>> rules(cluster_.levels.size());
    const YAML::Node* topo = m.find("topology");
    if (topo) {
      MapReader t(r_, *topo, m.path("topology"), {}, &unused_);
      for (const auto& [level, value] : t.entries()) {
        int li = level_of(value, t.path(level), level);
        if (li < 0) {
          ok = false;
          continue;
        }
        LevelRule rule;
        if (value.IsMap()) {
          MapReader g(r_, value, t.path(level), {{"every", "prefix", "start"}});
          const YAML::Node* every = g.required("every");
          auto e = every ? r_.integer(*every, g.path("every"), 1, kMaxNodes) : std::nullopt;
          ok = ok && e;
          if (e) rule.every = *e;
          if (const YAML::Node* p = g.find("prefix")) {
            auto s = r_.str(*p, g.path("prefix"), /*allow_empty=*/true);
            ok = ok && s;
            if (s) rule.prefix = *s;
          } else {
            rule.prefix = level + "-";
          }
          if (const YAML::Node* st = g.find("start")) {
            auto v = r_.integer(*st, g.path("start"), 0, kMaxNodes);
            ok = ok && v;
            if (v) rule.start = *v;
          }
        } else {
          auto s = r_.str(value, t.path(level));
          ok = ok && s;
          if (s) rule.fixed = *s;
        }
        rules[static_cast<size_t>(li)] = rule;
      }
    }
    if (!ok) return;
    if (static_cast<int64_t>(cluster_.nodes.size()) + count > kMaxNodes) {
      r_.error(node, m.path("count"),
               "the cluster would have more than " + std::to_string(kMaxNodes) + " nodes");
      return;
    }
    const int64_t last = first + count - 1;
    for (int64_t i = 0; i < count; ++i) {
      Node n = proto;
      n.name = prefix + padded(first + i, last);
      std::vector<std::string> domains(cluster_.levels.size());
      for (size_t li = 0; li < rules.size(); ++li) {
        if (!rules[li]) continue;
        const LevelRule& rule = *rules[li];
        domains[li] = rule.every == 0 ? rule.fixed
                                      : rule.prefix + padded(rule.start + i / rule.every,
                                                             rule.start + (count - 1) / rule.every);
      }
      if (!add_node(std::move(n), domains, topo ? *topo : node, m.path("topology"), node,
                    m.path("namePrefix")))
        return;
    }
  }

  // Index of topology level `name`, or -1 after reporting.
  int level_of(const YAML::Node& at, const std::string& path, const std::string& name) {
    int li = cluster_.level_index(name);
    if (li < 0 || li == static_cast<int>(cluster_.levels.size())) {
      r_.error(at, path,
               "unknown topology level " + quote(name) +
                   (cluster_.levels.empty() ? " (spec.topology.levels declares none)"
                                            : " (levels: " + join_list(cluster_.levels) + ")"));
      return -1;
    }
    return li;
  }

  // Adds a node with its domain names per level; false after reporting an error.
  bool add_node(Node node, const std::vector<std::string>& domains, const YAML::Node& topo_at,
                const std::string& topo_path, const YAML::Node& node_at,
                const std::string& name_path) {
    if (auto it = b_.node_where.find(node.name); it != b_.node_where.end()) {
      r_.error(
          node_at, name_path,
          "duplicate node " + quote(node.name) + " (first defined at " + it->second.str() + ")");
      return false;
    }
    for (size_t li = 0; li < domains.size(); ++li) {
      if (domains[li].empty()) {
        r_.error(topo_at, topo_path,
                 "node " + quote(node.name) + " has no " + cluster_.levels[li] +
                     " (every node needs a domain at each level: " + join_list(cluster_.levels) +
                     ")");
        return false;
      }
      auto& ids = b_.domain_ids[li];
      auto [it, inserted] = ids.emplace(domains[li], static_cast<int32_t>(ids.size()));
      int32_t id = it->second;
      if (inserted) {
        cluster_.domain_names[li].push_back(domains[li]);
        b_.domain_parent[li].emplace_back(li > 0 ? node.domains[li - 1] : -1, node.name);
      } else if (li > 0 &&
                 b_.domain_parent[li][static_cast<size_t>(id)].first != node.domains[li - 1]) {
        // Levels nest: a rack sits in exactly one block.
        const auto& [parent, first_node] = b_.domain_parent[li][static_cast<size_t>(id)];
        r_.error(topo_at, topo_path,
                 cluster_.levels[li] + " " + quote(domains[li]) + " of node " + quote(node.name) +
                     " is in " + cluster_.levels[li - 1] + " " + quote(domains[li - 1]) +
                     ", but node " + quote(first_node) + " puts it in " + cluster_.levels[li - 1] +
                     " " + quote(cluster_.domain_names[li - 1][static_cast<size_t>(parent)]));
        return false;
      }
      node.domains.push_back(id);
    }
    b_.node_where.emplace(node.name, r_.where(node_at));
    cluster_.nodes.push_back(std::move(node));
    return true;
  }

  Reader& r_;
  Builder& b_;
  Cluster& cluster_;
  std::vector<std::string> unused_;  // topology maps: keys are level names, checked here
};

}  // namespace

void read_cluster(Reader& r, const YAML::Node& doc, Builder& b) {
  ClusterReader(r, b).read(doc);
}

}  // namespace sluice::config_detail
