// Preemption and backfill cost (issue 3; not a test): on the issue-2 cluster (5,000 nodes x 8
// GPUs) with 50,000 running jobs, the median cost of a cycle that makes one preemption decision
// (victim search + minimal set + the preemptor's placement), and of a full cycle with a
// reservation and backfill checks over a pending backlog.
//
//   build/preempt_bench [--pending 100000] [--samples 21] [--backfill-samples 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "bench_world.h"
#include "core/cycle/scheduler.h"

using namespace sluice;
using Clock = std::chrono::steady_clock;

namespace {

// CPU time of this thread: on a shared, loaded machine wall time mostly measures the wait for
// a core; both are reported.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Job small_job(JobId id, int queue, int32_t priority, TimeNs submit, int64_t milli) {
  Job j;
  j.id = id;
  j.name = "j" + std::to_string(id);
  j.namespace_ = "default";
  j.queue = "team-" + std::to_string(queue);
  j.priority = priority;
  j.submit_ns = submit;
  j.walltime_ns = 3600 * kNsPerSec * (1 + static_cast<TimeNs>(id % 8));
  PodSet ps;
  ps.gpus = 1;
  ps.gpu_milli = static_cast<int32_t>(milli);
  ps.requests[kGpu] = milli;
  ps.requests[kCpu] = 1000;
  ps.requests[kMemory] = 1024;
  j.pod_sets.push_back(ps);
  return j;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int pending = 100'000;
  int samples_n = 21;  // preemption-decision samples (more for profiling)
  int backfill_n = 5;  // backfill-pass samples
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--pending")) pending = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--samples")) samples_n = std::max(1, std::stoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--backfill-samples"))
      backfill_n = std::max(1, std::stoi(argv[i + 1]));
  }
  auto config = bench::make_world();
  for (auto& cq : config->cluster_queues)
    cq.preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  Scheduler s(config);
  // For the backfill pass: no preemption (the gang must wait) and quotas at twice the
  // capacity, so the gang is held by placement, not quota.
  auto no_preempt = bench::make_world();
  for (auto& cq : no_preempt->cluster_queues)
    for (auto& rq : cq.resource_groups[0].flavors[0].resources) rq.nominal *= 2;
  Scheduler b(no_preempt);

  // 1. A full cluster with 51,875 running low-priority jobs: 50,000 half-GPU jobs (25,000
  // GPUs) and 1,875 8-GPU jobs (15,000 GPUs).
  JobId next = 1;
  for (int i = 0; i < 50'000; ++i) s.submit(small_job(next++, i % 20, 100, 0, 500));
  for (int i = 0; i < 1'875; ++i) {
    Job big = small_job(next++, i % 20, 100, 0, 1000);
    big.pod_sets[0].gpus = 8;
    big.pod_sets[0].requests[kGpu] = 8000;
    s.submit(big);
    b.submit(big);
  }
  for (JobId id = 1; id <= 50'000; ++id) b.submit(s.find_pending(id)->job);
  CycleResult fill = s.run_cycle(kNsPerSec);
  s.apply(fill, kNsPerSec);
  CycleResult fill_b = b.run_cycle(kNsPerSec);
  b.apply(fill_b, kNsPerSec);
  std::printf("running jobs: %zu\n", s.running_count());

  // 2. One high-priority 8-GPU job arrives; the cycle must preempt. Measured without applying,
  // so every sample starts from the same state.
  std::vector<double> samples, cpu;
  size_t preempted = 0;
  for (int k = 0; k < samples_n; ++k) {
    Job hi = small_job(next++, k % 20, 1000, 2 * kNsPerSec, 1000);
    hi.pod_sets[0].gpus = 8;
    hi.pod_sets[0].gpu_milli = 1000;
    hi.pod_sets[0].requests[kGpu] = 8000;
    s.submit(hi);
    auto t0 = Clock::now();
    const double c0 = cpu_ms();
    CycleResult r = s.run_cycle(3 * kNsPerSec);
    cpu.push_back(cpu_ms() - c0);
    samples.push_back(ms_since(t0));
    preempted = r.preempted.size();
    s.cancel(hi.id, 3 * kNsPerSec);
  }
  std::printf(
      "cycle with one preemption decision: median %.2f ms wall, %.2f ms CPU (%zu victims for 8 "
      "GPUs)\n",
      median(samples), median(cpu), preempted);

  // 3. Backfill: a 64-GPU gang at the head cannot start and reserves; then `pending` small
  // jobs behind it are checked against the reservation.
  Job gang = small_job(next++, 0, 1000, 4 * kNsPerSec, 1000);
  gang.pod_sets[0].count = 8;
  gang.pod_sets[0].gpus = 8;
  gang.pod_sets[0].requests[kGpu] = 8000;
  b.submit(gang);
  for (int i = 0; i < pending; ++i) b.submit(small_job(next++, i % 20, 100, 5 * kNsPerSec, 200));
  samples.clear();
  cpu.clear();
  CycleResult r;
  for (int k = 0; k < backfill_n; ++k) {
    r = CycleResult{};  // (freeing the previous result is not part of the pass)
    auto t0 = Clock::now();
    const double c0 = cpu_ms();
    r = b.run_cycle(6 * kNsPerSec, Scheduler::CycleMode::kFull);
    cpu.push_back(cpu_ms() - c0);
    samples.push_back(ms_since(t0));
  }
  std::printf(
      "full cycle with a reservation over %d pending: median %.1f ms wall, %.1f ms CPU "
      "(reserved job %llu, %zu admitted, %zu preempted)\n",
      pending, median(samples), median(cpu), static_cast<unsigned long long>(r.reservation.job),
      r.admitted.size(), r.preempted.size());
  return 0;
}
