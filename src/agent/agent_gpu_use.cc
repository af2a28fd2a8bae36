// Right-sizing from measured use: each pod's GPU memory and utilisation, sampled at most once a
// second as the syncs go out (and once more as its exit is reported), sent to the server as
// deltas (proto::PodGpuUse) that it adds into the job's peak and mean (docs/agent.md, "GPU use").
#include <algorithm>
#include <filesystem>

#include "agent/agent.h"

namespace sluice::agent {

namespace {

// 0 on either side: a pod adopted after a restart, or a server from before run numbers.
bool same_run_of(uint64_t a, uint64_t b) {
  return a == 0 || b == 0 || a == b;
}

void add_sample(proto::PodGpuUse& u, const PodGpuSample& s) {
  ++u.samples;
  u.peak_mib = std::max(u.peak_mib, s.used_mib);
  u.mib_sum += s.used_mib;
  u.util_sum += s.util_pct;
}

}  // namespace

void Agent::track_gpu_use(proto::PodRef ref, uint64_t run, const std::vector<int32_t>& gpus) {
  if (gpus.empty()) return;  // a CPU-only pod uses no GPU memory
  // A file left by an earlier run of this pod must not count for this one.
  std::error_code ec;
  std::filesystem::remove(pod_paths(options_.state_dir, ref).gpu_use_file, ec);
  std::lock_guard lock(use_mu_);
  auto& acc = use_[ref];
  acc = GpuUseAcc{};
  acc.run = run;
  acc.gpus = gpus;
  acc.pending.job = ref.job;
  acc.pending.pod = ref.pod;
  acc.pending.run = run;
}

std::vector<proto::PodGpuUse> Agent::take_gpu_use(const std::vector<proto::RunningPod>& running,
                                                  const std::vector<proto::PodExit>& exits) {
  std::lock_guard lock(use_mu_);
  auto sample = [&](const proto::PodRef& ref, GpuUseAcc& acc) {
    const auto s = gpus_->pod_sample(acc.gpus, pod_paths(options_.state_dir, ref).gpu_use_file);
    if (s) add_sample(acc.pending, *s);
  };
  const auto now = std::chrono::steady_clock::now();
  if (now - use_at_ >= std::chrono::seconds(1)) {
    use_at_ = now;
    for (const auto& rp : running) {
      auto it = use_.find({rp.job, rp.pod});
      if (it != use_.end() && rp.pid > 0 && same_run_of(it->second.run, rp.run))
        sample(it->first, it->second);
    }
  }
  std::vector<proto::PodGpuUse> out;
  // A pod that ended: one last sample (the file outlives the process), its report goes with
  // its exit, and it is forgotten.
  for (const auto& e : exits) {
    auto it = use_.find({e.job, e.pod});
    if (it == use_.end() || !same_run_of(it->second.run, e.run)) continue;
    sample(it->first, it->second);
    if (it->second.pending.samples > 0) out.push_back(it->second.pending);
    use_.erase(it);
  }
  for (auto& [ref, acc] : use_) {
    if (acc.pending.samples == 0) continue;
    out.push_back(acc.pending);
    acc.pending.samples = acc.pending.peak_mib = acc.pending.mib_sum = acc.pending.util_sum = 0;
  }
  return out;
}

// A sync that failed: its samples count again in the next one (a pod already forgotten is not
// brought back; its exit is resent without them).
void Agent::restore_gpu_use(const std::vector<proto::PodGpuUse>& taken) {
  std::lock_guard lock(use_mu_);
  for (const auto& t : taken) {
    auto it = use_.find({t.job, t.pod});
    if (it == use_.end() || it->second.run != t.run) continue;
    auto& p = it->second.pending;
    p.samples += t.samples;
    p.peak_mib = std::max(p.peak_mib, t.peak_mib);
    p.mib_sum += t.mib_sum;
    p.util_sum += t.util_sum;
  }
}

}  // namespace sluice::agent
