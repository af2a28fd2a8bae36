#include "cli/client_common.h"

#include <chrono>

#include "cli/client_term.h"

namespace sluice::cli {

void add_common(CLI::App* cmd, Common& c, bool with_json) {
  cmd->add_option("--server", c.conn.server,
                  "Server URL (default: $SLUICE_SERVER, else " + std::string(kDefaultServer) + ")")
      ->envname("SLUICE_SERVER");
  cmd->add_option("--token", c.conn.token, "Bearer token (default: $SLUICE_TOKEN)")
      ->envname("SLUICE_TOKEN");
  if (with_json) cmd->add_flag("--json", c.json, "Print the server's JSON reply as it is");
}

void fail(const ClientFailure& f) {
  print_err(f.message + "\n");
  throw CLI::RuntimeError(f.exit_code);
}

void print_submit_warnings(const nlohmann::json& reply) {
  if (!reply.contains("warnings") || !reply["warnings"].is_array()) return;
  for (const auto& w : reply["warnings"])
    if (w.is_string()) print_err("warning: " + w.get<std::string>() + "\n");
}

double now_unix_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void print_json(const nlohmann::json& j) {
  std::cout << j.dump(2) << "\n";
}

void add_query(std::string& path, const char* key, const std::string& value) {
  if (value.empty()) return;
  path += (path.find('?') == std::string::npos ? "?" : "&");
  path += key;
  path += '=';
  path += url_encode(value);
}

std::optional<unsigned long long> parse_job_id(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  unsigned long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned long long>(c - '0');
  }
  if (v == 0) return std::nullopt;
  return v;
}

ClientFailure not_a_job_id(const std::string& text) {
  return {1, "error: \"" + text +
                 "\" is not a job id (a positive number; `sluice jobs` lists them, "
                 "`sluice cancel --name NAME` cancels by name)"};
}

}  // namespace sluice::cli
