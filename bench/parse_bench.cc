// Job submission parsing (issue 5: the server's CPU per submitted job). Bodies as the end-to-end
// benchmark sends them (bench/serve_bench.cc body_for): one-line JSON documents separated by
// `---` lines, 1 or 100 per body, against bench_world's configuration (64 nodes).
//
//   build/bench/parse_bench [--benchmark_filter=...]
//
// per_job is the time per job of a body. The pieces: parse_jobs (JSON fast path, what the
// server runs), the YAML path forced (the baseline, as before the fast path), yaml-cpp's
// LoadAll alone, the fast path's node building alone, and the document readers alone.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_world.h"
#include "config/json_documents.h"
#include "config/loader.h"
#include "config/parse_jobs.h"

namespace sluice {
namespace {

namespace cd = config_detail;

// The world of the other benchmarks, small: LocalQueue team-0 in namespace default.
const Config& config() {
  static const std::shared_ptr<Config> c = bench::make_world(64, 4, 1);
  return *c;
}

// serve_bench's body_for: `count` documents, names b<first>...
std::string body(long count) {
  std::string out;
  for (long i = 0; i < count; ++i) {
    if (i) out += "---\n";
    out +=
        R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Job","metadata":{"name":"b)" +
        std::to_string(i + 1) +
        R"(","namespace":"default"},"spec":{"queue":"team-0","pods":1,"gpus":1,"command":["true"]}})"
        "\n";
  }
  return out;
}

// Seconds per job, shown as e.g. "16.5us".
void per_job(benchmark::State& state, long jobs) {
  state.counters["per_job"] =
      benchmark::Counter(static_cast<double>(jobs), benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}

// Every job read, no message: a benchmark of a failing parse would measure the wrong thing.
void check(const JobsOutput& out, long jobs) {
  if (static_cast<long>(out.jobs.size()) != jobs || !out.errors.empty() || !out.notes.empty()) {
    std::fprintf(stderr, "parse_bench: expected %ld jobs and no messages\n", jobs);
    std::abort();
  }
}

void BM_ParseJobs(benchmark::State& state) {
  const long n = state.range(0);
  const Source src{"request", body(n)};
  check(parse_jobs(src, config()), n);
  if (!cd::parse_jobs_json(src, config())) std::abort();  // the fast path takes these bodies
  for (auto _ : state) benchmark::DoNotOptimize(parse_jobs(src, config()));
  per_job(state, n);
}

void BM_ParseJobsYamlPath(benchmark::State& state) {
  const long n = state.range(0);
  const Source src{"request", body(n)};
  check(cd::parse_jobs_yaml(src, config()), n);
  for (auto _ : state) benchmark::DoNotOptimize(cd::parse_jobs_yaml(src, config()));
  per_job(state, n);
}

void BM_YamlLoadAll(benchmark::State& state) {
  const long n = state.range(0);
  const std::string text = body(n);
  for (auto _ : state) benchmark::DoNotOptimize(YAML::LoadAll(text));
  per_job(state, n);
}

void BM_JsonDocuments(benchmark::State& state) {
  const long n = state.range(0);
  const std::string text = body(n);
  if (!cd::json_documents(text)) std::abort();
  for (auto _ : state) benchmark::DoNotOptimize(cd::json_documents(text));
  per_job(state, n);
}

// The readers on documents parsed once (yaml-cpp's nodes; the fast path's read the same).
void BM_ReadersOnly(benchmark::State& state) {
  const long n = state.range(0);
  const std::vector<YAML::Node> docs = YAML::LoadAll(body(n));
  check(cd::read_job_documents("request", docs, config()), n);
  for (auto _ : state) benchmark::DoNotOptimize(cd::read_job_documents("request", docs, config()));
  per_job(state, n);
}

BENCHMARK(BM_ParseJobs)->Arg(1)->Arg(100);
BENCHMARK(BM_ParseJobsYamlPath)->Arg(1)->Arg(100);
BENCHMARK(BM_YamlLoadAll)->Arg(1)->Arg(100);
BENCHMARK(BM_JsonDocuments)->Arg(1)->Arg(100);
BENCHMARK(BM_ReadersOnly)->Arg(1)->Arg(100);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
