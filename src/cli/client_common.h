#pragma once
// What the client commands' files share (client_cmd.cc, client_logs.cc): the server options,
// printing a failure with its exit code, and small helpers for requests.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_http.h"
#include "cli/client_term.h"

namespace sluice::cli {

struct Common {
  Connection conn;
  bool json = false;
  bool wide = false;
};

// `sluice run --wait`, `sbatch --wait` (client_logs.cc): prints pod 0's log as it grows, as
// `sluice logs -f`, until the job ends; then its exit status: 0 when it succeeded, else its
// exit code (1 when it has none: cancelled, rejected, a start failure).
int wait_for_job(const Common& c, unsigned long long id);

// --server, --token (with their environment defaults) and, where asked, --json.
void add_common(CLI::App* cmd, Common& c, bool with_json);

// Prints the failure (print_err: the server's words may quote hostile input) and ends the
// command with its exit code (CLI11 prints nothing more for a RuntimeError).
[[noreturn]] void fail(const ClientFailure& f);

template <class T>
T need(Outcome<T> o) {
  if (!o.ok) fail(o.failure);
  return std::move(o.value);
}

double now_unix_s();
// A submission's warnings (a GPU model no node has, ...) on stderr: `run` and `sbatch` print
// these; `submit` prints every note.
void print_submit_warnings(const nlohmann::json& reply);
void print_json(const nlohmann::json& j);

// Adds "&key=value" (or "?key=value" first) when value is set.
void add_query(std::string& path, const char* key, const std::string& value);

// A job id as the user typed it: digits only, positive. nullopt otherwise.
std::optional<unsigned long long> parse_job_id(const std::string& text);
// The message for a word that is not a job id ("big-out"), naming what to use instead.
ClientFailure not_a_job_id(const std::string& text);

// GET /v1/jobs page after page (the server gives at most 1000 a page) until `want` jobs or the
// last page: one reply {"jobs", "truncated", "continue"} as one page would have been.
nlohmann::json list_pages(HttpClient http, const std::string& path, size_t want);

// `sluice logs` (client_logs.cc).
void register_logs(CLI::App& app);

}  // namespace sluice::cli
