// Reading the agents' syncs (issue 38: CPU per job): the plain-JSON reader
// (src/proto/plain_json.h) against json::parse + get<T>(), the path it stands in for, on bodies
// shaped like the end-to-end benchmark's: the server reads a node's request (8 GPUs: up to 8
// running pods, a few starts and exits per report), the agent the reply (its assignments).
//
//   build/bench/sync_parse_bench [--benchmark_filter=...]
//
// Arg: Sync*: the node's running pods (every body also reports two starts and one exit);
// Reply*: the assignments the reply carries.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "proto/protocol.h"
#include "proto/protocol_plain.h"

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

// A reply as the server sends one for a one-GPU job of serve_bench (sluice_e2e.sh).
std::string reply(long assignments) {
  proto::SyncResponse r;
  for (long i = 0; i < assignments; ++i) {
    proto::Assignment a;
    a.job = static_cast<uint64_t>(5000 + i);
    a.run = a.job;
    a.attempt = 1;
    a.job_name = "b" + std::to_string(i + 1);
    a.job_namespace = "bench";
    a.peers = {{0, "n17", "http://127.0.0.1:40117"}};
    a.command = {"true"};
    a.env = {{"SLUICE_QUEUE", "bench"}};
    a.gpus = {static_cast<int32_t>(i % 8)};
    a.user = "anonymous";
    a.cpu_milli = 1000;
    a.memory_mib = 4096;
    r.assign.push_back(a);
  }
  return proto::dump_json(nlohmann::json(r));
}

template <class T>
void document_path(benchmark::State& state, const std::string& text) {
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(text).get<T>());
}

template <class T>
void plain_reader(benchmark::State& state, const std::string& text) {
  T v;
  if (!proto::read_plain(text, &v)) std::abort();  // the plain reader takes these
  for (auto _ : state) benchmark::DoNotOptimize(proto::parse_message<T>(text));
}

void BM_SyncDocumentPath(benchmark::State& s) {
  document_path<proto::SyncRequest>(s, body(s.range(0)));
}
void BM_SyncReader(benchmark::State& s) {
  plain_reader<proto::SyncRequest>(s, body(s.range(0)));
}
void BM_ReplyDocumentPath(benchmark::State& s) {
  document_path<proto::SyncResponse>(s, reply(s.range(0)));
}
void BM_ReplyReader(benchmark::State& s) {
  plain_reader<proto::SyncResponse>(s, reply(s.range(0)));
}

BENCHMARK(BM_SyncDocumentPath)->Arg(0)->Arg(8);
BENCHMARK(BM_SyncReader)->Arg(0)->Arg(8);
BENCHMARK(BM_ReplyDocumentPath)->Arg(1)->Arg(4);
BENCHMARK(BM_ReplyReader)->Arg(1)->Arg(4);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
