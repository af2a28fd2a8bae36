// Right-sizing arithmetic (right_size.h).
#include "core/model/right_size.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace sluice {
namespace {

// Digits at the front of `s` as a number; 0 digits or more than 6: nullopt.
std::optional<int64_t> leading_number(std::string_view& s) {
  size_t n = 0;
  int64_t v = 0;
  while (n < s.size() && n < 7 && s[n] >= '0' && s[n] <= '9') v = v * 10 + (s[n++] - '0');
  if (n == 0 || n > 6) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

}  // namespace

std::optional<GpuShape> mig_shape(std::string_view profile) {
  GpuShape out;
  out.name = std::string(profile);
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  if (profile.substr(0, kPrefix.size()) == kPrefix) {
    profile.remove_prefix(kPrefix.size());
    out.name = std::string(profile);
  }
  auto g = leading_number(profile);
  if (!g || *g < 1 || *g > 7 || profile.substr(0, 2) != "g.") return std::nullopt;
  profile.remove_prefix(2);
  auto gb = leading_number(profile);
  if (!gb || *gb < 1 || profile.substr(0, 2) != "gb") return std::nullopt;
  profile.remove_prefix(2);
  if (!profile.empty() && profile != "+me") return std::nullopt;
  out.memory_mib = *gb * 1024;
  out.compute_slices = static_cast<int32_t>(*g);
  out.mig = true;
  return out;
}

std::vector<GpuShape> distinct_shapes(std::vector<GpuShape> shapes) {
  std::map<std::string, GpuShape> by_name;
  for (auto& s : shapes) {
    if (s.name.empty() || s.memory_mib <= 0) continue;
    auto [it, fresh] = by_name.try_emplace(s.name, s);
    if (!fresh && s.memory_mib > it->second.memory_mib) it->second = s;
  }
  std::vector<GpuShape> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const GpuShape& a, const GpuShape& b) {
    return std::tie(a.memory_mib, a.compute_slices, a.name) <
           std::tie(b.memory_mib, b.compute_slices, b.name);
  });
  return out;
}

std::optional<GpuShape> smallest_fit(const std::vector<GpuShape>& shapes, int64_t peak_mib,
                                     int64_t requested_mib, double headroom) {
  if (peak_mib <= 0 || requested_mib <= 0) return std::nullopt;
  const double need = static_cast<double>(peak_mib) * (1.0 + std::max(0.0, headroom));
  const GpuShape* best = nullptr;
  for (const auto& s : shapes) {
    if (static_cast<double>(s.memory_mib) < need || s.memory_mib >= requested_mib) continue;
    if (!best ||
        std::make_tuple(s.memory_mib, s.compute_slices, !s.mig, s.name) <
            std::make_tuple(best->memory_mib, best->compute_slices, !best->mig, best->name))
      best = &s;
  }
  if (!best) return std::nullopt;
  return *best;
}

std::vector<GpuShape> cluster_shapes(const Config& config) {
  std::vector<GpuShape> shapes;
  std::vector<bool> seen(kMaxResources, false);
  for (const Node& n : config.cluster.nodes)
    for (const Gpu& g : n.gpus) {
      shapes.push_back({g.model, g.memory_mib});
      for (const MigSlice& m : g.mig) {
        if (seen[m.profile]) continue;
        seen[m.profile] = true;
        if (auto s = mig_shape(config.resources.name(m.profile))) shapes.push_back(*s);
      }
    }
  return distinct_shapes(std::move(shapes));
}

std::optional<GpuShape> right_size_shape(const Job& job, const std::vector<GpuShape>& shapes,
                                         int64_t peak_mib, double headroom,
                                         const std::vector<std::string>& mig_ok) {
  if (job.pod_sets.empty()) return std::nullopt;
  bool one_gpu = true;
  for (const PodSet& ps : job.pod_sets) {
    if (ps.gpus < 1 || ps.gpu_milli != kMilliPerGpu) return std::nullopt;
    one_gpu = one_gpu && ps.gpus == 1;
  }
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  int64_t requested = 0;
  std::vector<GpuShape> allowed;
  for (const GpuShape& s : shapes) {
    if (!s.mig && (job.allowed_models.empty() || has(job.allowed_models, s.name)))
      requested = std::max(requested, s.memory_mib);
    if (!s.mig || (one_gpu && has(mig_ok, std::string(kMigPrefix) + s.name))) allowed.push_back(s);
  }
  return smallest_fit(allowed, peak_mib, requested, headroom);
}

Job right_sized(const Job& job, const GpuShape& shape, ResourceId mig_resource) {
  Job out = job;
  if (!shape.mig) {
    out.allowed_models = {shape.name};
    return out;
  }
  out.allowed_models.clear();
  for (PodSet& ps : out.pod_sets) {
    ps.requests[kGpu] = 0;
    ps.gpus = 0;
    ps.gpu_milli = kMilliPerGpu;
    ps.requests[mig_resource] = kMilliPerGpu;  // one slice
  }
  return out;
}

std::vector<std::string> covered_mig_profiles(const Config& config, QueueId queue) {
  std::vector<std::string> out;
  if (queue < 0 || static_cast<size_t>(queue) >= config.cluster_queues.size()) return out;
  for (const ResourceGroup& g : config.cluster_queues[static_cast<size_t>(queue)].resource_groups)
    for (ResourceId r : g.covered)
      if (config.resources.is_mig(r)) out.push_back(config.resources.name(r));
  return out;
}

GpuHours gpu_hours(double gpus, int64_t run_seconds, int32_t mean_util_pct) {
  GpuHours h;
  if (gpus <= 0 || run_seconds <= 0) return h;
  h.requested = gpus * static_cast<double>(run_seconds) / 3600.0;
  h.used = h.requested * std::clamp(mean_util_pct, 0, 100) / 100.0;
  return h;
}

std::string mib_text(int64_t mib) {
  if (mib < 1024) return std::to_string(std::max<int64_t>(mib, 0)) + " MiB";
  if (mib % 1024 == 0) return std::to_string(mib / 1024) + " GiB";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(mib) / 1024.0);
  return buf;
}

}  // namespace sluice
