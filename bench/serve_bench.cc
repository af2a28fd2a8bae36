// serve_bench: an end-to-end load generator against a running `sluice serve`.
//
// Phase 1 submits --jobs jobs from --clients concurrent keep-alive clients, --batch jobs per
// POST /v1/jobs (multi-document YAML). Every 202 means the jobs are on disk (SQLite,
// synchronous=FULL, group commit), so acknowledged jobs / wall time is the durable submission
// rate. Phase 2 waits (bounded) until every submitted job has ended, then computes from the
// server's own JobView timestamps: job starts per second, submit-to-running latency p50/p99 and
// the completion rate. Times of phase 2 are the server's, so the generator's own scheduling on a
// shared machine does not distort them.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

using nlohmann::json;

namespace {

struct Args {
  std::string server = "http://127.0.0.1:7070";
  long jobs = 10000;
  int clients = 8;
  long batch = 1;
  int gpus = 1;
  std::string ns = "bench";
  std::string queue = "bench";
  std::string command = "true";
  double wait_s = 600;
  std::string token;
  bool json_out = false;
  bool no_wait = false;
  // --rate R: requests a second over all clients, each due at its own time (open loop, so two
  // builds compare at the same load); 0: each client posts as soon as its last answer came.
  double rate = 0;
  // --cpu-pids serve=PID,agent=PID: their CPU time (utime + stime, clock ticks) read once every
  // job has ended, before the final listing of the job views (--json: "cpu_ticks_at_end"), so
  // that the figure per job leaves out what only the measuring costs; and once before the first
  // submission ("cpu_ticks_at_start"): the difference leaves out the processes' start-up (64
  // agents' adoption scans of /proc, registrations), which a short run divides by few jobs.
  std::vector<std::pair<std::string, long>> cpu_pids;
};

[[noreturn]] void usage(const char* msg);

// "serve=12,agent=34" -> {{"serve", 12}, {"agent", 34}}.
std::vector<std::pair<std::string, long>> parse_pids(const std::string& text) {
  std::vector<std::pair<std::string, long>> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t eq = item.find('=');
    const long pid = eq == std::string::npos ? 0 : std::atol(item.c_str() + eq + 1);
    if (pid <= 0) usage("--cpu-pids: expected NAME=PID,...");
    out.emplace_back(item.substr(0, eq), pid);
    at = comma + 1;
  }
  return out;
}

// utime + stime of a process in clock ticks; -1 when it cannot be read.
long cpu_ticks(long pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return -1;
  char buf[1024] = {0};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* p = std::strrchr(buf, ')');  // fields after the command name, from 3 (state)
  if (n == 0 || !p) return -1;
  unsigned long utime = 0, stime = 0;
  if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) !=
      2)
    return -1;
  return static_cast<long>(utime + stime);
}

[[noreturn]] void usage(const char* msg) {
  std::cerr << "serve_bench: " << msg
            << "\nusage: serve_bench --server URL [--jobs 10000] [--clients 8] [--batch 1] "
               "[--gpus 1] [--namespace bench] [--queue bench] [--command true] [--wait-s 600] "
               "[--token T] [--no-wait] [--json] [--cpu-pids NAME=PID,...] [--rate R]\n";
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + k).c_str());
      return argv[++i];
    };
    auto num = [&]() -> long {
      const std::string v = val();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0) usage((k + ": expected a positive integer").c_str());
      return n;
    };
    if (k == "--server")
      a.server = val();
    else if (k == "--jobs")
      a.jobs = num();
    else if (k == "--clients")
      a.clients = static_cast<int>(num());
    else if (k == "--batch")
      a.batch = num();
    else if (k == "--gpus")
      a.gpus = static_cast<int>(num());
    else if (k == "--namespace")
      a.ns = val();
    else if (k == "--queue")
      a.queue = val();
    else if (k == "--command")
      a.command = val();
    else if (k == "--wait-s")
      a.wait_s = static_cast<double>(num());
    else if (k == "--token")
      a.token = val();
    else if (k == "--json")
      a.json_out = true;
    else if (k == "--no-wait")
      a.no_wait = true;
    else if (k == "--rate")
      a.rate = static_cast<double>(num());
    else if (k == "--cpu-pids")
      a.cpu_pids = parse_pids(val());
    else if (k == "-h" || k == "--help")
      usage("help");
    else
      usage(("unknown argument " + k).c_str());
  }
  return a;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Nearest-rank percentile of a sorted vector (0 when empty).
double pct(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// One multi-document YAML body of `count` jobs starting at sequence number `first`. Each
// document is flow-style (JSON is YAML), which keeps the server's parser on its fast path.
std::string body_for(const Args& a, long first, long count) {
  const std::string cmd = json(a.command).dump();
  std::string out;
  out.reserve(static_cast<size_t>(count) * 200);
  for (long i = 0; i < count; ++i) {
    if (i) out += "---\n";
    out += R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Job","metadata":{"name":"b)" +
           std::to_string(first + i) + R"(","namespace":)" + json(a.ns).dump() +
           R"(},"spec":{"queue":)" + json(a.queue).dump() + R"(,"pods":1,"gpus":)" +
           std::to_string(a.gpus) + R"(,"command":[)" + cmd + "]}}\n";
  }
  return out;
}

httplib::Headers auth_headers(const Args& a) {
  httplib::Headers h;
  if (!a.token.empty()) h.emplace("Authorization", "Bearer " + a.token);
  return h;
}

struct SubmitResult {
  std::vector<long> ids;
  std::vector<double> ack_latency_s;  // per request
  long refused = 0;                   // 429s (retried)
  long errors = 0;                    // other failures (not retried)
  std::string first_error;
  double wall_s = 0;
};

SubmitResult submit_all(const Args& a) {
  SubmitResult r;
  std::mutex mu;
  const long batches = (a.jobs + a.batch - 1) / a.batch;
  std::atomic<long> next{0};
  const auto headers = auth_headers(a);
  const double t0 = now_s();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c)
    threads.emplace_back([&] {
      httplib::Client cli(a.server);
      cli.set_keep_alive(true);
      // Headers and body go out in two writes: with Nagle on, the body waits for the
      // server's delayed ACK (tens of ms per request on loopback).
      cli.set_tcp_nodelay(true);
      cli.set_connection_timeout(10, 0);
      cli.set_read_timeout(120, 0);
      std::vector<long> ids;
      std::vector<double> lat;
      long refused = 0, errors = 0;
      std::string first_error;
      for (long b = next++; b < batches; b = next++) {
        const long first = b * a.batch;
        const long count = std::min(a.batch, a.jobs - first);
        const std::string body = body_for(a, first, count);
        if (a.rate > 0)  // batch b is due b / rate seconds after the start
          std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(t0 + static_cast<double>(b) / a.rate))));
        for (;;) {
          const double s = now_s();
          auto res = cli.Post("/v1/jobs", headers, body, "application/yaml");
          if (res && res->status == 202) {
            lat.push_back(now_s() - s);
            const json reply = json::parse(res->body);  // named: a range-for over a temporary's
            for (const auto& j : reply.at("jobs")) ids.push_back(j.at("id"));  // member dangles
            break;
          }
          if (res && res->status == 429) {  // a pending cap: back off briefly and retry
            ++refused;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
          }
          ++errors;
          if (first_error.empty())
            first_error = res ? std::to_string(res->status) + " " + res->body
                              : "transport: " + httplib::to_string(res.error());
          break;
        }
      }
      std::lock_guard lk(mu);
      r.ids.insert(r.ids.end(), ids.begin(), ids.end());
      r.ack_latency_s.insert(r.ack_latency_s.end(), lat.begin(), lat.end());
      r.refused += refused;
      r.errors += errors;
      if (r.first_error.empty()) r.first_error = first_error;
    });
  for (auto& t : threads) t.join();
  r.wall_s = now_s() - t0;
  std::sort(r.ack_latency_s.begin(), r.ack_latency_s.end());
  return r;
}

struct Outcome {
  long ended = 0, succeeded = 0, failed = 0, other = 0, started = 0;
  long start_from_end = 0;  // ended jobs without start_time: end_time stands in (see below)
  bool timed_out = false;
  double wait_s = 0;
  double starts_per_s = 0;       // jobs / (last start - first submit)
  double starts_per_s_run = 0;   // jobs / (last start - first start): the start engine alone
  double completions_per_s = 0;  // ended / (last end - first submit)
  double lat_p50 = 0, lat_p99 = 0, lat_max = 0;  // start - submit
  json cpu_ticks_at_end = json::object();        // Args::cpu_pids
};

std::optional<json> get_json(httplib::Client& cli, const std::string& path,
                             const httplib::Headers& h) {
  auto res = cli.Get(path, h);
  if (!res || res->status != 200) return std::nullopt;
  return json::parse(res->body);
}

// Every job of a listing: GET /v1/jobs page after page (at most 1000 a page; `continue` says
// where the next one starts). {"jobs": [...]}, or nullopt when a page failed.
std::optional<json> get_all_jobs(httplib::Client& cli, const std::string& path,
                                 const httplib::Headers& h) {
  json out = {{"jobs", json::array()}};
  std::string next;
  for (;;) {
    auto page = get_json(cli, path + "&limit=1000" + (next.empty() ? "" : "&continue=" + next), h);
    if (!page) return std::nullopt;
    for (auto& v : page->at("jobs")) out["jobs"].push_back(std::move(v));
    if (!page->value("truncated", false) || !page->contains("continue") ||
        !page->at("continue").is_string())
      return out;
    next = page->at("continue").get<std::string>();
  }
}

Outcome wait_and_measure(const Args& a, const std::vector<long>& ids) {
  Outcome o;
  httplib::Client cli(a.server);
  cli.set_keep_alive(true);
  cli.set_read_timeout(120, 0);
  const auto headers = auth_headers(a);
  const std::string ns = httplib::detail::encode_query_param(a.ns);
  const double t0 = now_s();
  // Cheap poll: is anything of ours still pending or running?
  for (;;) {
    auto j = get_json(cli, "/v1/jobs?state=pending,running&limit=1&namespace=" + ns, headers);
    if (j && j->at("jobs").empty()) break;
    if (now_s() - t0 > a.wait_s) {
      o.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  o.wait_s = now_s() - t0;
  for (const auto& [name, pid] : a.cpu_pids) o.cpu_ticks_at_end[name] = cpu_ticks(pid);
  const std::unordered_set<long> mine(ids.begin(), ids.end());
  auto j = get_all_jobs(cli, "/v1/jobs?state=succeeded,failed,cancelled,rejected&namespace=" + ns,
                        headers);
  if (!j) return o;
  double first_submit = INFINITY, first_start = INFINITY, last_start = -INFINITY,
         last_end = -INFINITY;
  std::vector<double> lat;
  for (const auto& v : j->at("jobs")) {
    if (!mine.count(v.at("id").get<long>())) continue;
    ++o.ended;
    const std::string st = v.at("state");
    if (st == "succeeded")
      ++o.succeeded;
    else if (st == "failed")
      ++o.failed;
    else
      ++o.other;
    const double sub = v.at("submit_time").get<double>();
    first_submit = std::min(first_submit, sub);
    double end = NAN;
    if (v.contains("end_time") && !v.at("end_time").is_null()) {
      end = v.at("end_time").get<double>();
      last_end = std::max(last_end, end);
    }
    // start_time is when the server learned that every pod ran. A pod that starts and exits
    // between two agent syncs arrives as start+exit in one sync, and the server (as of this
    // writing) handles the exit first and then drops the start of a job already ended, so
    // start_time stays null. Such a job was running by its end_time at the latest: use that
    // (a conservative upper bound) and count how often.
    double start = NAN;
    if (v.contains("start_time") && !v.at("start_time").is_null())
      start = v.at("start_time").get<double>();
    else if ((st == "succeeded" || st == "failed") && !std::isnan(end)) {
      start = end;
      ++o.start_from_end;
    } else {
      continue;
    }
    ++o.started;
    first_start = std::min(first_start, start);
    last_start = std::max(last_start, start);
    lat.push_back(start - sub);
  }
  std::sort(lat.begin(), lat.end());
  if (o.started > 0) {
    o.starts_per_s = static_cast<double>(o.started) / std::max(1e-9, last_start - first_submit);
    o.starts_per_s_run = static_cast<double>(o.started) / std::max(1e-9, last_start - first_start);
    o.lat_p50 = pct(lat, 50);
    o.lat_p99 = pct(lat, 99);
    o.lat_max = lat.back();
  }
  if (o.ended > 0 && last_end > first_submit)
    o.completions_per_s = static_cast<double>(o.ended) / (last_end - first_submit);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  {
    httplib::Client cli(a.server);
    auto res = cli.Get("/readyz");
    if (!res || res->status != 200) {
      std::cerr << "serve_bench: " << a.server << " is not ready\n";
      return 1;
    }
  }
  json cpu_ticks_at_start = json::object();
  for (const auto& [name, pid] : a.cpu_pids) cpu_ticks_at_start[name] = cpu_ticks(pid);
  const SubmitResult s = submit_all(a);
  const long acked = static_cast<long>(s.ids.size());
  const double sub_rate = static_cast<double>(acked) / std::max(1e-9, s.wall_s);
  Outcome o;
  if (!a.no_wait && acked > 0) o = wait_and_measure(a, s.ids);

  if (a.json_out) {
    json out = {{"server", a.server},
                {"jobs", a.jobs},
                {"clients", a.clients},
                {"batch", a.batch},
                {"gpus", a.gpus},
                {"acknowledged", acked},
                {"submit_errors", s.errors},
                {"submit_429", s.refused},
                {"submit_wall_s", s.wall_s},
                {"durable_submissions_per_s", sub_rate},
                {"ack_latency_p50_ms", pct(s.ack_latency_s, 50) * 1e3},
                {"ack_latency_p99_ms", pct(s.ack_latency_s, 99) * 1e3}};
    if (!a.no_wait)
      out.update({{"ended", o.ended},
                  {"succeeded", o.succeeded},
                  {"failed", o.failed},
                  {"other_end_states", o.other},
                  {"started", o.started},
                  {"start_time_from_end_time", o.start_from_end},
                  {"timed_out", o.timed_out},
                  {"job_starts_per_s", o.starts_per_s},
                  {"job_starts_per_s_after_first_start", o.starts_per_s_run},
                  {"completions_per_s", o.completions_per_s},
                  {"submit_to_running_p50_s", o.lat_p50},
                  {"submit_to_running_p99_s", o.lat_p99},
                  {"submit_to_running_max_s", o.lat_max},
                  {"cpu_ticks_at_start", cpu_ticks_at_start},
                  {"cpu_ticks_at_end", o.cpu_ticks_at_end}});
    if (!s.first_error.empty()) out["first_error"] = s.first_error;
    std::cout << out.dump() << "\n";
  } else {
    std::printf("serve_bench  %s  jobs=%ld clients=%d batch=%ld gpus=%d command=%s\n",
                a.server.c_str(), a.jobs, a.clients, a.batch, a.gpus, a.command.c_str());
    std::printf("  %-38s %12ld  (errors %ld, 429s %ld)\n", "acknowledged jobs", acked, s.errors,
                s.refused);
    std::printf("  %-38s %12.0f  (%.2f s wall)\n", "durable submissions/s", sub_rate, s.wall_s);
    std::printf("  %-38s %9.2f ms / %.2f ms\n", "ack latency per request p50 / p99",
                pct(s.ack_latency_s, 50) * 1e3, pct(s.ack_latency_s, 99) * 1e3);
    if (!a.no_wait) {
      std::printf("  %-38s %12ld  (succeeded %ld, failed %ld, other %ld%s)\n", "ended jobs",
                  o.ended, o.succeeded, o.failed, o.other, o.timed_out ? ", TIMED OUT" : "");
      std::printf("  %-38s %12ld  (start_time null, end_time used: %ld)\n", "started jobs",
                  o.started, o.start_from_end);
      std::printf("  %-38s %12.0f\n", "job starts/s (first submit..last start)", o.starts_per_s);
      std::printf("  %-38s %12.0f\n", "job starts/s (first..last start)", o.starts_per_s_run);
      std::printf("  %-38s %12.0f\n", "completions/s (first submit..last end)",
                  o.completions_per_s);
      std::printf("  %-38s %9.3f s / %.3f s (max %.3f s)\n", "submit-to-running p50 / p99",
                  o.lat_p50, o.lat_p99, o.lat_max);
    }
    if (!s.first_error.empty()) std::printf("  first error: %s\n", s.first_error.c_str());
  }
  return (s.errors > 0 || o.timed_out) ? 1 : 0;
}
