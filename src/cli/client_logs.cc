// `sluice logs ID [--pod N] [--tail-bytes N] [-f]`: a pod's output as its agent captured it.
// The server caps one answer (serve --log-max-bytes) and says where it cut; -f polls for what
// the log gained, from the byte offset the last answer ended at (X-Sluice-Log-Size), until the
// job ends.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/client_common.h"
#include "cli/client_term.h"

namespace sluice::cli {

namespace {

using nlohmann::json;

struct LogsArgs {
  std::string id;
  int pod = 0;
  long long tail = 0;
  bool follow = false;
  bool raw = false;
  int poll_ms = 1000;
};

std::string logs_path(unsigned long long id, int pod) {
  std::string path = "/v1/jobs/" + std::to_string(id) + "/logs";
  add_query(path, "pod", std::to_string(pod));
  return path;
}

// The log's size after this answer: the server's header, else what was read so far.
long long size_after(const HttpReply& r, long long offset) {
  try {
    if (!r.log_size.empty()) return std::stoll(r.log_size);
  } catch (...) {
  }
  return offset + static_cast<long long>(r.body.size());
}

// A pod's bytes to stdout: to a terminal with their control characters made visible unless
// --raw (client_term.h); to a pipe or file as they are.
void print_log(const std::string& body, bool raw) {
  if (raw)
    std::cout << body << std::flush;
  else
    print_out(body);
}

bool live(const std::string& state) {
  return state == "pending" || state == "running";
}

// -f: prints what the log gained since `offset` once a second until the job has ended and its
// last bytes are out. A pod that starts again (preempted, requeued) starts a new log.
void follow(const Common& c, unsigned long long id, const LogsArgs& a) {
  const HttpClient http(c.conn);
  long long offset = -1;  // -1: nothing printed yet (the first answer is the capped view)
  bool warned = false;
  for (;;) {  // bounded by the job: it ends, or the user interrupts
    const json job = need(http.call_json("GET", "/v1/jobs/" + std::to_string(id)));
    const std::string state = job.value("state", "");
    const bool placed = job.contains("placement") && job["placement"].is_array() &&
                        job["placement"].size() > static_cast<size_t>(a.pod);
    bool got = false;  // bytes came: more may be waiting (an answer holds at most the cap)
    if (placed) {
      std::string path = logs_path(id, a.pod);
      if (offset >= 0)
        add_query(path, "offset", std::to_string(offset));
      else if (a.tail > 0)
        add_query(path, "tail_bytes", std::to_string(a.tail));
      auto r = need(http.request("GET", path));
      if (r.status == 200) {
        const long long size = size_after(r, std::max(offset, 0LL));
        warned = false;
        if (offset >= 0 && size < offset) {
          // Shorter than what was printed: a new run's log. Read it from its start.
          std::cout << "[... the pod started again: a new log ...]\n";
          offset = 0;
          got = true;
        } else {
          print_log(r.body, a.raw);
          got = !r.body.empty();
          offset = size;
        }
      } else if (!live(state)) {
        fail(describe_http_error(r, c.conn.server));
      } else if (!warned) {
        // The node is briefly away: say it once and keep following.
        print_err(describe_http_error(r, c.conn.server).message + "\n  (still following)\n");
        warned = true;
      }
    }
    if (got) continue;
    if (!live(state)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(a.poll_ms));
  }
}

}  // namespace

int wait_for_job(const Common& c, unsigned long long id) {
  LogsArgs a;
  a.follow = true;
  a.poll_ms = 250;
  follow(c, id, a);
  const json job = need(HttpClient(c.conn).call_json("GET", "/v1/jobs/" + std::to_string(id)));
  if (job.value("state", "") == "succeeded") return 0;
  const auto& code = job.contains("exit_code") ? job["exit_code"] : json();
  return code.is_number_integer() && code.get<int>() != 0 ? code.get<int>() : 1;
}

void register_logs(CLI::App& app) {
  auto* cmd = app.add_subcommand("logs", "Print a pod's output (stdout and stderr)");
  auto c = std::make_shared<Common>();
  auto a = std::make_shared<LogsArgs>();
  cmd->add_option("id", a->id, "Job id")->required();
  cmd->add_option("--pod,-p", a->pod, "Pod index in the gang")->check(CLI::NonNegativeNumber);
  cmd->add_option("--tail-bytes", a->tail,
                  "Only the last N bytes (default: the whole log up to the server's cap, "
                  "its head and its end when longer)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--follow,-f", a->follow, "Keep printing what the pod writes until the job ends");
  cmd->add_flag("--raw", a->raw,
                "Write the log's bytes as they are, also to a terminal (by default control "
                "characters and escape sequences are shown, not sent to the terminal)");
  add_common(cmd, *c, false);
  cmd->callback([c, a] {
    auto id = parse_job_id(a->id);
    if (!id) fail(not_a_job_id(a->id));
    if (a->follow) return follow(*c, *id, *a);
    std::string path = logs_path(*id, a->pod);
    if (a->tail > 0) add_query(path, "tail_bytes", std::to_string(a->tail));
    auto reply = need(HttpClient(c->conn).call("GET", path));
    print_log(reply.body, a->raw);
  });
}

}  // namespace sluice::cli
