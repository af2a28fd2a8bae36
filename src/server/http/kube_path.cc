// The Kubernetes API's paths (docs/kubernetes.md), read into their parts, and the names sluice
// gives the objects it derives from a job: its pods and its Workload.
#include <string_view>

#include "server/http/kube.h"

namespace sluice::server::kube {

namespace {

// "a/b/c" -> {"a", "b", "c"}; an empty segment (a double or trailing slash) fails.
std::optional<std::vector<std::string>> segments(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t slash = s.find('/');
    const std::string_view part = s.substr(0, slash);
    if (part.empty() || out.size() == 8) return std::nullopt;
    out.emplace_back(part);
    if (slash == std::string_view::npos) break;
    s.remove_prefix(slash + 1);
    if (s.empty()) return std::nullopt;
  }
  return out;
}

}  // namespace

// 1. the group-version (/api/v1, /apis/G/V); 2. an optional namespaces/NS (or the namespace
// objects themselves); 3. resource, name and subresource.
std::optional<Path> parse_path(const std::string& path) {
  Path p;
  std::string_view rest = path;
  size_t i = 0;
  std::optional<std::vector<std::string>> seg;
  if (rest.starts_with("/api/")) {
    seg = segments(rest.substr(5));
    if (!seg || seg->empty()) return std::nullopt;
  } else if (rest.starts_with("/apis/")) {
    seg = segments(rest.substr(6));
    if (!seg || seg->size() < 2) return std::nullopt;
    p.group = (*seg)[i++];
  } else {
    return std::nullopt;
  }
  const auto& s = *seg;
  p.version = s[i++];
  if (i == s.size()) return p;
  if (s[i] == "namespaces") {
    ++i;
    // /api/v1/namespaces[/NS]: the Namespace objects themselves.
    if (p.group.empty() && s.size() - i <= 1) {
      p.namespaces = true;
      p.resource = "namespaces";
      if (i < s.size()) p.name = s[i];
      return p;
    }
    if (s.size() - i < 2) return std::nullopt;
    p.ns = s[i++];
  }
  p.resource = s[i++];
  if (i < s.size()) p.name = s[i++];
  if (i < s.size()) p.sub = s[i++];
  if (i < s.size()) return std::nullopt;
  return p;
}

std::string pod_name(const std::string& job, size_t index) {
  return job + "-" + std::to_string(index);
}

std::optional<std::pair<std::string, size_t>> split_pod_name(const std::string& pod) {
  const size_t dash = pod.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == pod.size() || pod.size() - dash > 8)
    return std::nullopt;
  size_t index = 0;
  for (size_t i = dash + 1; i < pod.size(); ++i) {
    if (pod[i] < '0' || pod[i] > '9') return std::nullopt;
    index = index * 10 + static_cast<size_t>(pod[i] - '0');
  }
  return std::pair{pod.substr(0, dash), index};
}

std::string workload_name(const JobRecord& r) {
  return "job-" + r.job.name + "-" + std::to_string(r.job.id);
}

std::optional<JobId> workload_job_id(const std::string& name) {
  const size_t dash = name.rfind('-');
  if (!name.starts_with("job-") || dash == std::string::npos || dash < 4 || dash + 1 == name.size())
    return std::nullopt;
  JobId id = 0;
  for (size_t i = dash + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || i - dash > 19) return std::nullopt;
    id = id * 10 + static_cast<JobId>(name[i] - '0');
  }
  return id;
}

}  // namespace sluice::server::kube
