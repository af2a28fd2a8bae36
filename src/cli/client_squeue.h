#pragma once
// `sluice jobs -o FORMAT`: squeue's output format (`squeue -o "%.18i %.9P %.8j %.8u %.2t %.10M
// %.6D %R"`) over the jobs of a GET /v1/jobs reply. Each field is %[.][width]type: width the
// field's size (longer values are cut, as squeue does), "." right-justifies; other text is
// copied. Types: i/A job id, j name, u user, a namespace (Slurm's account), P queue
// (partition), q priority class (QOS), t state code (PD R CD F CA TO), T state (PENDING ...
// TIMEOUT), M time used, D nodes, N node list, R reason when pending else node list, b GPUs
// (gres), V submit time, S start time, e end time, % a literal %.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::cli {

// Why the format is wrong (the bad field), or none when it is right.
std::optional<std::string> squeue_check(const std::string& format);

// One line per job (a header line first unless `header` is false), each as the format says.
// `now_unix_s` measures the time used of running jobs. Call squeue_check() first.
std::string squeue_lines(const nlohmann::json& jobs, const std::string& format, bool header,
                         double now_unix_s);

}  // namespace sluice::cli
