// The control plane's command-line options, which `sluice serve` and `sluice up` share.
#include "cli/serve_options.h"

namespace sluice::cli {

namespace {

// Where the server listens and keeps its state.
void add_place_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--listen", a.opt.listen, "HOST:PORT to serve the API on (port 0: any free)")
      ->capture_default_str();
  cmd->add_option("--data-dir", a.opt.data_dir, "SQLite store and event log directory")
      ->capture_default_str();
  cmd->add_option("--store", a.opt.store,
                  "etcd://HOST:PORT[,HOST:PORT...][/CLUSTER][?lease=S]: keep everything in etcd "
                  "instead of --data-dir; several replicas elect one leader (docs/ha.md)");
  cmd->add_option("--advertise", a.opt.advertise,
                  "With --store etcd://: the URL clients reach this replica at, which standbys "
                  "name as the leader (default: http://LISTEN)");
}

// The agents' lease and the requests' admission limits.
void add_lease_and_limit_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--agent-timeout", a.agent_timeout_s,
                  "Seconds without a sync before a node is NotReady; also the agents' lease: an "
                  "agent that cannot sync this long stops its pods, and a silent node's jobs "
                  "are requeued this + their checkpoint grace + --fence-margin after its last "
                  "sync (docs/agent.md, Fencing)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--fence-margin", a.fence_margin_s,
                  "Seconds added to a silent node's lease and grace before its jobs are "
                  "requeued (covers the agent's tick and signal delivery)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--min-free-disk", a.opt.min_free_disk_mib,
                  "MiB: below this much free space in --data-dir's file system, requests that "
                  "would change the store (submit, cancel, hold, release, requeue) get 507 and "
                  "change nothing (0: no floor)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--public-metrics", a.opt.public_metrics,
                "/metrics writes every namespace's series (GPU-seconds, budgets) without a token; "
                "else a scraper sees those of its token's namespaces (docs/api.md, Metrics)");
  cmd->add_option("--namespace-max-pending", a.opt.state.namespace_max_pending,
                  "Pending jobs one namespace may have; a submission beyond gets 429 (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--namespace-submit-rate", a.opt.state.namespace_submit_rate,
                  "Jobs a second one namespace may submit, in bursts of --namespace-submit-burst; "
                  "faster gets 429 with a Retry-After (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--namespace-submit-burst", a.opt.state.namespace_submit_burst,
                  "Jobs one namespace may submit at once (a job array counts its tasks)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--caller-max-in-flight", a.opt.caller_max_in_flight,
                  "Requests of one caller (token) between header and answer; beyond: 429 "
                  "before the body is read (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  cmd->add_option("--caller-max-running", a.opt.caller_max_running,
                  "Requests of one caller handled at once; more wait their turn, callers are "
                  "served in turn (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
}

// How often the server asks and decides.
void add_cadence_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--heartbeat-ms", a.opt.state.heartbeat_ms, "Agent sync interval to ask for")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}));
  cmd->add_option("--cycle-interval-ms", a.opt.cycle_interval_ms,
                  "A scheduling cycle at least this often (events trigger more)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}));
}

// What the server keeps, and for how long.
void add_retention_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--keep-finished-jobs", a.opt.state.keep_finished_jobs,
                  "Finished jobs kept for job views (memory and store); beyond this many the "
                  "oldest are dropped, their events stay in the event log (0: keep all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000}));
  cmd->add_option("--history-max-jobs", a.opt.state.history_max_jobs,
                  "Jobs `sluice history` keeps (rebuilt from the event log at startup); beyond "
                  "this many the rows of the jobs that ended first are dropped")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  cmd->add_option("--log-max-bytes", a.opt.log_max_bytes,
                  "The most of a pod's log one `sluice logs` answer carries; a longer log comes "
                  "back as its head and its end with a \"[... N bytes cut ...]\" line")
      ->capture_default_str()
      ->check(CLI::Range(size_t{4096}, size_t{1} << 30));
  cmd->add_option("--dashboard-sample-ms", a.opt.dashboard_sample_ms,
                  "How often the web dashboard's history takes a sample (docs/dashboard.md)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  cmd->add_option("--dashboard-samples", a.opt.dashboard_samples,
                  "Samples the dashboard's history keeps (memory: a few KB each)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{2}, size_t{100'000}));
  cmd->add_option("--event-log-max-bytes", a.opt.sqlite.event_log.max_bytes,
                  "DATA/events.jsonl is rotated (to events.jsonl.1, ...) at this size; 0: never")
      ->capture_default_str();
  cmd->add_option("--event-log-keep", a.opt.sqlite.event_log.keep,
                  "Rotated event log files kept (events.jsonl.1 the newest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--events-keep", a.opt.sqlite.max_events,
                  "Events the database keeps, the newest (`sluice history` is rebuilt from them "
                  "at startup; etcd: the store URL's events-keep); 0: all")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--fresh-store", a.opt.sqlite.fresh,
                "Start with an empty database although the data directory's event log shows "
                "earlier jobs (the database was lost); job ids continue after the event log's");
}

// What the server says, and where.
void add_output_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_flag("--quiet", a.opt.quiet, "No log lines on stderr");
  cmd->add_option("--otlp-endpoint", a.otlp_endpoint,
                  "Send the jobs' OpenTelemetry traces (OTLP/HTTP, JSON) to this URL, e.g. "
                  "http://127.0.0.1:4318/v1/traces (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
                  "else $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else none)");
}

}  // namespace

void add_server_options(CLI::App* cmd, ServeArgs& a) {
  add_place_options(cmd, a);
  add_lease_and_limit_options(cmd, a);
  add_cadence_options(cmd, a);
  add_retention_options(cmd, a);
  add_output_options(cmd, a);
}

}  // namespace sluice::cli
