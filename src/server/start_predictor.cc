#include "server/start_predictor.h"

#include <ctime>
#include <string>
#include <vector>

#include "core/model/duration_text.h"

namespace sluice::server {

using nlohmann::json;

namespace {

// "2026-12-02T19:04:05Z", to the nearest second (as `sluice jobs --start` rounds).
std::string utc_text(TimeNs ns) {
  const std::time_t t = static_cast<std::time_t>((ns + kNsPerSec / 2) / kNsPerSec);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "1h02m", "9m50s", "40s" (to the nearest second).
std::string rounded_duration_text(TimeNs ns) {
  return duration_text((ns + kNsPerSec / 2) / kNsPerSec);
}

std::string assumes_text(const StartPredictions& p) {
  return "nothing else is submitted, and every running and queued job runs for its walltime "
         "(its own, else its queue's default, else " +
         rounded_duration_text(p.unknown_walltime_ns) + ")";
}

}  // namespace

std::shared_ptr<const StartPredictions> StartPredictor::get(ServerState& state, TimeNs now) {
  std::lock_guard replay(replay_mu_);
  // 1. Under the state lock: the cycle, and (when the cache is older) the copy.
  PredictInput input;
  std::shared_ptr<const Config> config;
  std::vector<JobId> wanted;
  uint64_t cycle = 0;
  {
    std::lock_guard lk(state.mu());
    cycle = state.cycles_run();
    {
      std::lock_guard c(cache_mu_);
      if (cache_ && cache_->cycle == cycle) return cache_;
    }
    input = predict_input(state.scheduler(), now);
    config = state.config_ptr();
  }
  // 2. Outside it: the replay, bounded in cycles and wall time.
  wanted.reserve(input.pending.size());
  for (const Job& j : input.pending) wanted.push_back(j.id);
  PredictOptions opt;
  opt.max_cycles = limits_.max_cycles;
  opt.unknown_walltime_ns = limits_.unknown_walltime_ns;
  const auto deadline = std::chrono::steady_clock::now() + limits_.budget;
  opt.stop = [deadline] { return std::chrono::steady_clock::now() >= deadline; };
  const Prediction pred = predict_starts(config, input, wanted, opt);
  auto out = std::make_shared<StartPredictions>();
  out->cycle = cycle;
  out->at_ns = now;
  out->horizon_ns = pred.horizon_ns;
  out->bounded = pred.bounded;
  out->cycles = pred.cycles;
  out->unknown_walltime_ns = limits_.unknown_walltime_ns;
  for (const PredictedStart& ps : pred.starts) out->starts.emplace(ps.job, ps);
  std::lock_guard c(cache_mu_);
  cache_ = out;
  return cache_;
}

json StartPredictor::view(const StartPredictions& p, const JobRecord& r, TimeNs now) {
  if (r.state != JobState::kPending) return nullptr;
  json v = json::object();
  if (r.gated) {
    v["status"] = "held";  // not in the scheduler until its gate opens
  } else if (auto it = p.starts.find(r.job.id); it == p.starts.end()) {
    v["status"] = "next-cycle";  // newer than the replay: the next one has it
  } else {
    switch (it->second.outcome) {
      case PredictOutcome::kStarts:
        v["status"] = "estimated";
        v["time"] = unix_s(std::max(now, it->second.start_ns));
        v["in_s"] = static_cast<double>(std::max<TimeNs>(0, it->second.start_ns - now)) / 1e9;
        break;
      case PredictOutcome::kNever:
        v["status"] = "never";
        break;
      case PredictOutcome::kBeyondBound:
        v["status"] = "beyond-bound";
        v["not_before"] = unix_s(p.horizon_ns);
        break;
      case PredictOutcome::kNotPending:
        v["status"] = "next-cycle";
        break;
    }
  }
  v["assumes"] = assumes_text(p);
  return v;
}

std::string StartPredictor::explain_line(const StartPredictions& p, const JobRecord& r,
                                         const Config& config, TimeNs now) {
  if (r.state != JobState::kPending) return "";
  const json v = view(p, r, now);
  const std::string status = v.value("status", "");
  std::string line = "\nEstimated start: ";
  if (status == "estimated") {
    const auto it = p.starts.find(r.job.id);
    line += utc_text(std::max(now, it->second.start_ns)) + " (in " +
            rounded_duration_text(it->second.start_ns - now) + ")";
  } else if (status == "never") {
    line += "none: with nothing else submitted it would never start";
  } else if (status == "beyond-bound") {
    line += "later than " + utc_text(p.horizon_ns) + " (the forecast stopped at its bound)";
  } else if (status == "held") {
    line += "none while it is held back from the scheduler (see Why)";
    return line + ".";
  } else {
    line += "at the next cycle's forecast";
    return line + ".";
  }
  PredictOptions o;
  o.unknown_walltime_ns = p.unknown_walltime_ns;
  line += "; it assumes " + assumes_text(p) +
          "; this job's walltime: " + rounded_duration_text(predicted_walltime(config, r.job, o)) +
          ".";
  return line;
}

}  // namespace sluice::server
