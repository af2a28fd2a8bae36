// Kueue's pod-set topology annotations on a pod template, as a job's TopologyRequest:
//   podset-required-topology: L        every pod in one domain of level L
//   podset-preferred-topology: L       one domain of L if it can, else of a coarser level, else
//                                      anywhere (the placer, placer_topology.cc)
//   podset-unconstrained-topology: "true"   no constraint
//   podset-slice-required-topology: S + podset-slice-size: N
//                                      consecutive groups of N pods, each in one domain of S
//   podset-slice-required-topology-constraints: [{topology, size}, ...]
//                                      up to 3 slice layers, coarsest first
// L and S are node labels of a Kueue Topology (kubernetes.io/hostname: the node), which
// topology_kind.cc mapped onto the Cluster's levels. Validation follows Kueue's: one of the
// first three; slice size and level together; a size divides the pod count (and an outer
// layer's size); a slice level at or below the pod set's level.
#include <algorithm>
#include <charconv>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

constexpr const char* kRequired = "kueue.x-k8s.io/podset-required-topology";
constexpr const char* kPreferred = "kueue.x-k8s.io/podset-preferred-topology";
constexpr const char* kUnconstrained = "kueue.x-k8s.io/podset-unconstrained-topology";
constexpr const char* kSliceLevel = "kueue.x-k8s.io/podset-slice-required-topology";
constexpr const char* kSliceSize = "kueue.x-k8s.io/podset-slice-size";
constexpr const char* kSliceLayers = "kueue.x-k8s.io/podset-slice-required-topology-constraints";
constexpr size_t kMaxSliceLayers = 3;
constexpr size_t kMaxLayersText = 4096;

std::optional<int64_t> positive(const std::string& text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1) return std::nullopt;
  return v;
}

std::string level_label(const Config& c, int32_t level) {
  return level < static_cast<int32_t>(c.cluster.levels.size())
             ? c.cluster.levels[static_cast<size_t>(level)]
             : kHostnameLabel;
}

class AnnotationReader {
 public:
  AnnotationReader(Reader& r, const Config& c, int32_t pods, std::string path)
      : r_(r), c_(c), pods_(pods), path_(std::move(path)) {}

  bool read(const YAML::Node& annotations, TopologyRequest* out, Loc* annotated) {
    // 1. The annotations this reader knows; the rest are free-form and not ours.
    for (auto it = annotations.begin(); it != annotations.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string& key = it->first.Scalar();
      for (const char* k :
           {kRequired, kPreferred, kUnconstrained, kSliceLevel, kSliceSize, kSliceLayers})
        if (key == k) found_.emplace_back(k, it->second);
    }
    if (found_.empty()) return true;
    *annotated = Loc{r_.where(found_.front().second), path(found_.front().first)};
    // 2. The pod set's own constraint: at most one of required, preferred, unconstrained.
    int modes = 0;
    for (const char* k : {kRequired, kPreferred, kUnconstrained}) modes += find(k) ? 1 : 0;
    if (modes > 1) {
      error(&found_.front().second, "",
            std::string("set at most one of ") + kRequired + ", " + kPreferred + ", " +
                kUnconstrained);
      return false;
    }
    TopologyRequest req;
    for (const char* k : {kRequired, kPreferred}) {
      const YAML::Node* n = find(k);
      if (!n) continue;
      req.level = level_of(*n, k, text(*n, k));
      req.required = k == kRequired;
      if (req.level < 0) return false;
    }
    if (const YAML::Node* n = find(kUnconstrained)) {
      const std::string v = text(*n, kUnconstrained);
      if (v != "true" && v != "false") {
        error(n, kUnconstrained, quote(v) + " must be \"true\" or \"false\"");
        return false;
      }
    }
    // 3. Slices.
    if (!slices(req)) return false;
    *out = std::move(req);
    return ok_;
  }

 private:
  const YAML::Node* find(const char* key) const {
    for (const auto& [k, v] : found_)
      if (k == key) return &v;
    return nullptr;
  }
  std::string path(const char* key) const { return child(child(path_, "annotations"), key); }
  void error(const YAML::Node* at, const char* key, const std::string& message) {
    r_.error(at ? *at : YAML::Node(), key[0] ? path(key) : child(path_, "annotations"), message);
    ok_ = false;
  }
  std::string text(const YAML::Node& n, const char* key) {
    auto s = r_.str(n, path(key));
    if (!s) ok_ = false;
    return s.value_or("");
  }

  // The Cluster level of a Topology node label; -1 after an error.
  int level_of(const YAML::Node& at, const char* key, const std::string& label) {
    if (label.empty()) return -1;
    const int levels = static_cast<int>(c_.cluster.levels.size());
    const int li = label == kHostnameLabel ? levels : c_.cluster.level_index(label);
    if (li >= 0) return li;
    std::vector<std::string> known = c_.cluster.levels;
    known.push_back(kHostnameLabel);
    error(&at, key,
          "unknown topology level " + quote(label) + " (levels: " + join_list(known) +
              "; a Kueue Topology or the Cluster's spec.topology.levels names them)");
    return -1;
  }

  bool slices(TopologyRequest& req) {
    const YAML::Node* level = find(kSliceLevel);
    const YAML::Node* size = find(kSliceSize);
    const YAML::Node* layers = find(kSliceLayers);
    if (layers && (level || size)) {
      error(layers, kSliceLayers,
            std::string("set either this or ") + kSliceLevel + " and " + kSliceSize + ", not both");
      return false;
    }
    if (level && !size) error(level, kSliceLevel, std::string("needs ") + kSliceSize);
    if (size && !level) error(size, kSliceSize, std::string("needs ") + kSliceLevel);
    if (!ok_) return false;
    if (level) {
      TopologySlice s;
      s.level = level_of(*level, kSliceLevel, text(*level, kSliceLevel));
      s.size = slice_size(*size, kSliceSize, text(*size, kSliceSize));
      if (s.level < 0 || s.size < 1) return false;
      req.slices.push_back(s);
    }
    if (layers && !read_layers(*layers, req)) return false;
    // Each slice in one domain at or below the pod set's level; each outer size a multiple of
    // the inner one.
    const YAML::Node* at = level ? level : layers;
    for (size_t i = 0; i < req.slices.size(); ++i) {
      const TopologySlice& s = req.slices[i];
      if (req.level >= 0 && s.level < req.level)
        error(at, level ? kSliceLevel : kSliceLayers,
              "slice level " + level_name(s.level) + " is above the pod set's level " +
                  level_name(req.level));
      if (i > 0 && (s.level <= req.slices[i - 1].level || req.slices[i - 1].size % s.size != 0))
        error(at, kSliceLayers,
              "layers go from the coarsest level to the finest, each size a multiple of the "
              "next one's");
    }
    return ok_;
  }

  int32_t slice_size(const YAML::Node& at, const char* key, const std::string& text) {
    auto v = positive(text);
    if (!v) {
      error(&at, key, quote(text) + " must be a whole number of pods, at least 1");
      return 0;
    }
    if (*v > pods_ || pods_ % *v != 0) {
      error(&at, key,
            std::to_string(*v) + " must divide the pod set's " + std::to_string(pods_) + " pods");
      return 0;
    }
    return static_cast<int32_t>(*v);
  }

  // The multi-layer form: a JSON list of {"topology": label, "size": n}, coarsest first.
  bool read_layers(const YAML::Node& node, TopologyRequest& req) {
    const std::string json = text(node, kSliceLayers);
    if (!ok_) return false;
    YAML::Node list;
    try {
      if (json.size() > kMaxLayersText) throw std::runtime_error("longer than 4096 characters");
      list = YAML::Load(json);
    } catch (const std::exception& e) {
      error(&node, kSliceLayers, std::string("malformed JSON: ") + e.what());
      return false;
    }
    if (!list.IsSequence() || list.size() == 0 || list.size() > kMaxSliceLayers) {
      error(&node, kSliceLayers,
            "must be a JSON list of 1 to 3 {\"topology\": <level>, \"size\": <pods>}");
      return false;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node& e = list[i];
      const YAML::Node topo = e.IsMap() ? e["topology"] : YAML::Node();
      const YAML::Node size = e.IsMap() ? e["size"] : YAML::Node();
      if (!topo.IsScalar() || !size.IsScalar() || e.size() != 2) {
        error(&node, kSliceLayers,
              "layer " + std::to_string(i) + ": needs exactly \"topology\" and \"size\"");
        return false;
      }
      TopologySlice s;
      s.level = level_of(node, kSliceLayers, topo.Scalar());
      s.size = slice_size(node, kSliceLayers, size.Scalar());
      if (s.level < 0 || s.size < 1) return false;
      req.slices.push_back(s);
    }
    return true;
  }

  std::string level_name(int32_t level) const { return level_label(c_, level); }

  Reader& r_;
  const Config& c_;
  int32_t pods_;
  std::string path_;
  bool ok_ = true;
  std::vector<std::pair<const char*, YAML::Node>> found_;
};

}  // namespace

bool read_topology_annotations(Reader& r, const YAML::Node* metadata, const std::string& path,
                               const Config& config, int32_t pod_count, TopologyRequest* out,
                               Loc* annotated, std::vector<std::string>* ignored) {
  if (!metadata || !metadata->IsMap()) return true;
  std::optional<YAML::Node> annotations;  // a copy: yaml-cpp's iterator yields temporaries
  for (auto it = metadata->begin(); it != metadata->end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == "annotations") annotations = it->second;
  if (!annotations || annotations->IsNull()) return true;
  if (!annotations->IsMap()) {
    r.error(*annotations, child(path, "annotations"), "must be a map");
    return false;
  }
  const bool ok = AnnotationReader(r, config, pod_count, path).read(*annotations, out, annotated);
  if (ok && !annotated->path.empty() && ignored)
    std::erase_if(*ignored, [&](const std::string& p) {
      return p == path || p == child(path, "annotations");
    });
  return ok;
}

void warn_topology_flavors(Sink& sink, const Config& config, const ClusterQueue& queue,
                           const TopologyRequest& request, const Loc& annotated) {
  if (annotated.path.empty() || config.topologies.empty()) return;
  // 1. The Topologies of the queue's flavors.
  std::vector<int32_t> topologies;
  for (const auto& g : queue.resource_groups)
    for (const auto& fq : g.flavors)
      if (auto t = config.flavors[static_cast<size_t>(fq.flavor)].topology)
        if (std::find(topologies.begin(), topologies.end(), *t) == topologies.end())
          topologies.push_back(*t);
  const std::string kueue =
      "Kueue would not admit this pod set; sluice places it on the "
      "Cluster's levels";
  if (topologies.empty()) {
    sink.warning(
        format(annotated.where, annotated.path,
               "no flavor of ClusterQueue " + quote(queue.name) + " has a topologyName: " + kueue));
    return;
  }
  // 2. Every level the request names is in one of them.
  std::vector<int32_t> levels;
  if (request.level >= 0) levels.push_back(request.level);
  for (const auto& s : request.slices) levels.push_back(s.level);
  for (int32_t level : levels) {
    const bool found = std::any_of(topologies.begin(), topologies.end(), [&](int32_t t) {
      const auto& l = config.topologies[static_cast<size_t>(t)].levels;
      return std::find(l.begin(), l.end(), level) != l.end();
    });
    if (!found)
      sink.warning(format(annotated.where, annotated.path,
                          "no Topology of ClusterQueue " + quote(queue.name) +
                              "'s flavors has level " + level_label(config, level) + ": " + kueue));
  }
}

}  // namespace sluice::config_detail
