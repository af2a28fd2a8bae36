// Kueue's plain-pod groups (docs/workloads.md, "Pod groups"): Pods labelled
// kueue.x-k8s.io/pod-group-name with the annotation kueue.x-k8s.io/pod-group-total-count are one
// workload, admitted once all of its pods have arrived. sluice reads a submission at a time, so
// a group's pods must all be in one (a file, or a request body); they become one job, a gang,
// named after the group, with a pod set per distinct pod shape.
#include <algorithm>
#include <map>

#include "config/jobs/job_reader.h"

namespace sluice::config_detail {

namespace {

// A pod's own pod set, with its command and env (a member's are at job level).
PodSet member_set(Job& pod) {
  PodSet set = std::move(pod.pod_sets.front());
  set.name = pod.name;
  set.exec_mut().command = std::move(pod.exec_mut().command);
  set.exec_mut().env = std::move(pod.exec_mut().env);
  return set;
}

bool same_shape(const PodSet& a, const PodSet& b) {
  return a.requests == b.requests && a.gpus == b.gpus && a.gpu_milli == b.gpu_milli &&
         a.exec().command == b.exec().command && a.exec().env == b.exec().env;
}

// Merges group `members` (indices into jobs, document order) into one job; false after
// reporting what does not match.
bool merge_group(std::vector<ReadJob>& jobs, const std::vector<size_t>& members, Sink& sink,
                 ReadJob& out) {
  const ReadJob& first = jobs[members.front()];
  const PodGroupMember& g = first.group;
  bool ok = true;
  for (size_t i : members) {
    const ReadJob& m = jobs[i];
    auto differs = [&](const char* what, const std::string& mine, const std::string& theirs) {
      if (mine == theirs) return;
      sink.error(format(m.group.loc.where, m.group.loc.path,
                        "pod " + quote(m.job.name) + " of group " + quote(g.name) + " has " + what +
                            " " + quote(mine) + ", its first pod " + quote(theirs)));
      ok = false;
    };
    differs("queue", m.job.queue, first.job.queue);
    differs("priority class", m.job.exec().priority_class, first.job.exec().priority_class);
    differs("total count", std::to_string(m.group.total), std::to_string(g.total));
  }
  if (!ok) return false;
  if (members.size() != static_cast<size_t>(g.total)) {
    sink.error(format(g.loc.where, g.loc.path,
                      "pod group " + quote(g.name) + " has " + std::to_string(members.size()) +
                          " of its " + std::to_string(g.total) +
                          " pods in this submission; sluice admits a group when all its pods "
                          "are submitted together (one file or request)"));
    return false;
  }
  out.where = first.where;
  out.job = first.job;  // queue, priority, defaults, identity: the first pod's
  out.job.name = g.name;
  out.job.pod_sets.clear();
  out.job.exec_mut().command.clear();
  out.job.exec_mut().env.clear();
  for (size_t i : members) {
    PodSet set = member_set(jobs[i].job);
    auto same = std::find_if(out.job.pod_sets.begin(), out.job.pod_sets.end(),
                             [&](const PodSet& s) { return same_shape(s, set); });
    if (same != out.job.pod_sets.end()) {
      same->count += set.count;
    } else {
      out.job.pod_sets.push_back(std::move(set));
    }
    out.job.walltime_ns = std::max(out.job.walltime_ns, jobs[i].job.walltime_ns);
  }
  hoist_pod_commands(out.job);
  return true;
}

}  // namespace

void merge_pod_groups(std::vector<ReadJob>& jobs, Sink& sink) {
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> groups;
  std::set<std::pair<std::string, std::string>> plain;  // names of jobs outside groups
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].group.name.empty()) {
      plain.emplace(jobs[i].job.namespace_, jobs[i].job.name);
    } else {
      groups[{jobs[i].job.namespace_, jobs[i].group.name}].push_back(i);
    }
  }
  if (groups.empty()) return;
  std::vector<ReadJob> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].group.name.empty()) {
      out.push_back(std::move(jobs[i]));
      continue;
    }
    const auto key = std::make_pair(jobs[i].job.namespace_, jobs[i].group.name);
    const auto& members = groups[key];
    if (members.front() != i) continue;  // merged at its first pod
    if (plain.count(key)) {
      sink.error(format(jobs[i].group.loc.where, jobs[i].group.loc.path,
                        "pod group " + quote(key.second) + " has the name of another job"));
      continue;
    }
    ReadJob merged;
    if (merge_group(jobs, members, sink, merged)) out.push_back(std::move(merged));
  }
  jobs = std::move(out);
}

}  // namespace sluice::config_detail
