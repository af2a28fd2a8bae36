// The server's reading of an agent's sync body (issue 38: the server's CPU per job): the SAX
// reader (src/server/http/sync_request_reader.h) against json::parse + get<SyncRequest>(), the
// path it stands in for, on bodies shaped like the end-to-end benchmark's (a node of 8 GPUs:
// up to 8 running pods, a few starts and exits per report).
//
//   build/bench/sync_parse_bench [--benchmark_filter=...]
//
// Arg: the node's running pods; every body also reports two starts and one exit.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "proto/protocol.h"
#include "server/http/sync_request_reader.h"

namespace sluice {
namespace {

std::string body(long running) {
  proto::SyncRequest r;
  r.agent_id = "5f1c0e3a9b7d4c21";
  for (long i = 0; i < running; ++i)
    r.running.push_back(
        {static_cast<uint64_t>(1000 + i), 0, 40000 + i, false, static_cast<uint64_t>(1000 + i)});
  r.started = {{1000, 0, 1000}, {1001, 0, 1001}};
  proto::PodExit e;
  e.job = 999;
  e.run = 999;
  e.at_unix_ns = 1796000000000000000;
  r.exits = {e};
  return proto::dump_json(nlohmann::json(r));
}

void BM_SyncDocumentPath(benchmark::State& state) {
  const std::string text = body(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(nlohmann::json::parse(text).get<proto::SyncRequest>());
}

void BM_SyncReader(benchmark::State& state) {
  const std::string text = body(state.range(0));
  proto::SyncRequest r;
  if (!server::read_sync_request_fast(text, &r)) std::abort();  // the fast path takes these
  for (auto _ : state) benchmark::DoNotOptimize(server::parse_sync_request(text));
}

BENCHMARK(BM_SyncDocumentPath)->Arg(0)->Arg(8);
BENCHMARK(BM_SyncReader)->Arg(0)->Arg(8);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
