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
  auto common = [&](FieldReader& f, Gpu& g) {
    f.str("model", &g.model, FieldReader::kRequired);
    f.quantity("memory", &g.memory_mib, kMemory);
    f.read("mig", &g.mig, FieldReader::kOptional,
           [&](const YAML::Node& n, const std::string& p) { return read_mig(r, n, p, catalog); });
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
      int64_t count = 1;
      FieldReader f(r, m);
      common(f, g);
      f.integer("nvlinkDomain", &g.nvlink_domain, 0, 1024);
      f.integer("numa", &g.numa_node, 0, 1024);
      f.integer("pcieSwitch", &g.pcie_switch, 0, 1024);
      f.integer("count", &count, 1, kMaxGpusPerNode);
      ok = ok && f.ok();
      for (int64_t k = 0; k < count && gpus.size() <= kMaxGpusPerNode; ++k) gpus.push_back(g);
    }
  } else if (node.IsMap()) {
    MapReader m(
        r, node, path,
        {{"count", "model", "memory", "nvlinkDomains", "numaNodes", "pcieSwitches", "mig"}});
    Gpu g;
    int64_t count = 0;
    FieldReader f(r, m);
    common(f, g);
    f.integer("count", &count, 0, kMaxGpusPerNode, FieldReader::kRequired);
    ok = ok && f.ok();
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

}  // namespace

// The fields a node and a node group share.
bool read_node_common(Reader& r, MapReader& m, Node& node, ResourceCatalog& catalog) {
  FieldReader f(r, m);
  f.labels("labels", &node.labels);
  f.quantity("cpu", &node.cpu_milli, kCpu, FieldReader::kRequired);
  f.quantity("memory", &node.memory_mib, kMemory, FieldReader::kRequired);
  f.read("gpus", &node.gpus, FieldReader::kOptional,
         [&](const YAML::Node& n, const std::string& p) { return read_gpus(r, n, p, catalog); });
  f.boolean("ready", &node.ready);
  return f.ok();
}

namespace {

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
    FieldReader f(r_, m);
    f.str("name", &out.name, FieldReader::kRequired);
    f.add(read_node_common(r_, m, out, b_.config.resources));
    std::vector<std::string> domains(cluster_.levels.size());
    const YAML::Node* topo = m.find("topology");
    if (topo)
      for_each_level(
          *topo, m.path("topology"), f,
          [&](size_t li, const std::string&, const YAML::Node& value, const std::string& at) {
            auto s = r_.str(value, at);
            f.add(s.has_value());
            if (s) domains[li] = *s;
          });
    if (!f.ok()) return;
    add_node(std::move(out), domains, topo ? *topo : node, m.path("topology"), node,
             m.path("name"));
  }

  void read_group(const YAML::Node& node, const std::string& path) {
    MapReader m(r_, node, path,
                {{"namePrefix", "count", "firstIndex", "labels", "cpu", "memory", "topology",
                  "gpus", "ready"}});
    if (!m.is_map()) return;
    Node proto;
    std::string prefix;
    int64_t count = 0, first = 0;
    FieldReader f(r_, m);
    f.str("namePrefix", &prefix, FieldReader::kRequired);
    f.integer("count", &count, 1, kMaxNodes, FieldReader::kRequired);
    f.integer("firstIndex", &first, 0, kMaxNodes);
    f.add(read_node_common(r_, m, proto, b_.config.resources));
    std::vector<std::optional<LevelRule>> rules(cluster_.levels.size());
    const YAML::Node* topo = m.find("topology");
    if (topo)
      for_each_level(
          *topo, m.path("topology"), f,
          [&](size_t li, const std::string& level, const YAML::Node& value, const std::string& at) {
            rules[li] = read_level_rule(level, value, at, f);
          });
    if (!f.ok()) return;
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

  // topology: {level: "fixed-name"} or {level: {every: N, prefix: P, start: S}}; a generated
  // domain holds N consecutive nodes of the group and is named P + (S + i / N).
  struct LevelRule {
    std::string fixed;
    int64_t every = 0;
    std::string prefix;
    int64_t start = 0;
  };

  LevelRule read_level_rule(const std::string& level, const YAML::Node& value,
                            const std::string& path, FieldReader& f) {
    LevelRule rule;
    if (value.IsMap()) {
      MapReader g(r_, value, path, {{"every", "prefix", "start"}});
      FieldReader gf(r_, g);
      rule.prefix = level + "-";
      gf.integer("every", &rule.every, 1, kMaxNodes, FieldReader::kRequired);
      gf.str("prefix", &rule.prefix, FieldReader::kOptional, /*allow_empty=*/true);
      gf.integer("start", &rule.start, 0, kMaxNodes);
      f.add(gf.ok());
    } else {
      auto s = r_.str(value, path);
      f.add(s.has_value());
      if (s) rule.fixed = *s;
    }
    return rule;
  }

  // Calls each(level index, level name, value, path) for the entries of a node's or group's
  // `topology:` map, whose keys are level names; an unknown level is reported and fails `f`.
  template <class Each>
  void for_each_level(const YAML::Node& topo, const std::string& path, FieldReader& f,
                      Each&& each) {
    MapReader t(r_, topo, path, {}, &unused_);
    for (const auto& [level, value] : t.entries()) {
      const int li = level_of(value, t.path(level), level);
      if (li < 0)
        f.fail();
      else
        each(static_cast<size_t>(li), level, value, t.path(level));
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
