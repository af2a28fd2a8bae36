// `sluice advise`: right-sizing from measured GPU use (docs/cli.md). Asks the server for the
// report of the jobs the caller may see (GET /v1/advise) and prints GPU-hours requested against
// used per namespace and user, and the jobs whose peak GPU memory would fit a smaller GPU or a
// MIG slice of this cluster.
#include <memory>

#include "cli/client_advise.h"
#include "cli/client_common.h"
#include "cli/commands.h"

namespace sluice::cli {

void register_advise(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "advise",
      "Right-sizing: GPU-hours requested against used, and jobs that would fit a "
      "smaller GPU or a MIG slice (from the GPU use the agents measured)");
  auto c = std::make_shared<Common>();
  struct Args {
    std::string ns, user;
    int headroom_pct = 20;
    int limit = 5000;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--namespace,-n", a->ns, "Only this namespace");
  cmd->add_option("--user,-u", a->user, "Only jobs of this submitter");
  cmd->add_option("--headroom", a->headroom_pct,
                  "Percent of memory above the measured peak a smaller shape must leave")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--limit", a->limit, "Look at the newest this many jobs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_common(cmd, *c, true);
  cmd->callback([c, a] {
    std::string path = "/v1/advise";
    add_query(path, "namespace", a->ns);
    add_query(path, "user", a->user);
    add_query(path, "headroom", std::to_string(a->headroom_pct));
    add_query(path, "limit", std::to_string(a->limit));
    const auto report = need(HttpClient(c->conn).call_json("GET", path));
    if (c->json) return print_json(report);
    print_out(advise_text(report));
  });
}

}  // namespace sluice::cli
