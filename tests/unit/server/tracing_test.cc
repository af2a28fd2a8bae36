// Job traces (src/server/tracing.cc) and their export over OTLP/HTTP (otlp_export.cc): the span
// tree of a job's lifecycle, its ids and times, the OTLP/JSON encoding, and the exporter against
// an HTTP server on loopback.
#include "server/tracing.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/otlp_export.h"

namespace sluice::server {
namespace {

constexpr TimeNs kS = kNsPerSec;

std::map<std::string, std::vector<Span>> by_name(const std::vector<Span>& spans) {
  std::map<std::string, std::vector<Span>> out;
  for (const auto& s : spans) out[s.name].push_back(s);
  return out;
}

TEST(JobTracer, ALifecycleIsOneTreeWithTheRunAsThePodsParent) {
  JobTracer t(42);
  t.submit(7, "train", "nlp", "team-a", "high", 1 * kS);
  EXPECT_FALSE(t.traceparent(7));  // waiting: no run yet
  t.admit(7, {"n0", "n1"}, 3 * kS);
  const auto tp = t.traceparent(7);
  ASSERT_TRUE(tp);
  t.pod_started(7, 0, "n0", 4 * kS);
  t.pod_started(7, 1, "n1", 5 * kS);
  t.pod_started(7, 1, "n1", 6 * kS);  // reported again: ignored
  t.end(7, "succeeded", 9 * kS);
  EXPECT_EQ(t.open_jobs(), 0u);
  EXPECT_FALSE(t.traceparent(7));
  const auto spans = t.take_finished();
  auto n = by_name(spans);
  ASSERT_EQ(spans.size(), 7u);  // job, submit, admission, run, 2 x pod start, finish
  const Span& root = n["job"].at(0);
  const Span& run = n["run"].at(0);
  EXPECT_TRUE(std::regex_match(root.trace_id, std::regex("[0-9a-f]{32}")));
  std::set<std::string> ids;
  for (const auto& s : spans) {
    EXPECT_EQ(s.trace_id, root.trace_id) << s.name;
    EXPECT_TRUE(std::regex_match(s.span_id, std::regex("[0-9a-f]{16}"))) << s.span_id;
    ids.insert(s.span_id);
  }
  EXPECT_EQ(ids.size(), spans.size());  // unique span ids
  EXPECT_TRUE(root.parent_span_id.empty());
  for (const char* c : {"submit", "admission", "run", "finish"})
    EXPECT_EQ(n[c].at(0).parent_span_id, root.span_id) << c;
  for (const auto& p : n["pod start"]) EXPECT_EQ(p.parent_span_id, run.span_id);
  EXPECT_EQ(*tp, "00-" + root.trace_id + "-" + run.span_id + "-01");
  // Times: job 1..9 s, waited 1..3 s, ran 3..9 s, pods started at 4 and 5 s.
  EXPECT_EQ(root.start_ns, 1 * kS);
  EXPECT_EQ(root.end_ns, 9 * kS);
  EXPECT_EQ(n["admission"].at(0).start_ns, 1 * kS);
  EXPECT_EQ(n["admission"].at(0).end_ns, 3 * kS);
  EXPECT_EQ(run.start_ns, 3 * kS);
  EXPECT_EQ(run.end_ns, 9 * kS);
  EXPECT_EQ(n["pod start"].at(0).end_ns, 4 * kS);
  EXPECT_EQ(n["pod start"].at(1).end_ns, 5 * kS);
  EXPECT_FALSE(root.error);
  EXPECT_FALSE(run.error);
}

TEST(JobTracer, APreemptionEndsTheRunAndTheJobWaitsAgainInTheSameTrace) {
  JobTracer t(1);
  t.submit(3, "sweep", "ml", "batch", "low", 0);
  t.admit(3, {"n0"}, 1 * kS);
  const auto first = *t.traceparent(3);
  t.pod_started(3, 0, "n0", 2 * kS);
  t.preempt(3, "preempted by job 9", 5 * kS);
  t.admit(3, {"n1"}, 8 * kS);
  EXPECT_NE(*t.traceparent(3), first);  // the second run is another span of the same trace
  t.end(3, "failed", 10 * kS);          // its pod never reported running
  auto n = by_name(t.take_finished());
  ASSERT_EQ(n["run"].size(), 2u);
  ASSERT_EQ(n["admission"].size(), 2u);
  ASSERT_EQ(n["pod start"].size(), 2u);
  ASSERT_EQ(n["preempt"].size(), 1u);
  const Span& run1 = n["run"][0];
  EXPECT_TRUE(run1.error);
  EXPECT_EQ(run1.end_ns, 5 * kS);
  EXPECT_EQ(n["preempt"][0].parent_span_id, run1.span_id);
  EXPECT_EQ(n["admission"][1].start_ns, 5 * kS);  // requeued at the preemption
  EXPECT_EQ(n["admission"][1].end_ns, 8 * kS);
  EXPECT_TRUE(n["pod start"][1].error);  // never started: ends with the run, as an error
  EXPECT_TRUE(n["job"][0].error);
  EXPECT_EQ(n["run"][1].parent_span_id, n["job"][0].span_id);
}

TEST(JobTracer, AJobEndedWhileWaitingClosesItsWait) {
  JobTracer t(1);
  t.submit(4, "x", "ns", "q", "", 0);
  t.end(4, "cancelled", 2 * kS);
  auto n = by_name(t.take_finished());
  EXPECT_EQ(n["admission"].at(0).end_ns, 2 * kS);
  EXPECT_EQ(n.count("run"), 0u);
  EXPECT_FALSE(n["job"].at(0).error);  // cancelled is not a failure
  t.admit(4, {"n0"}, 3 * kS);          // unknown by now: nothing happens
  EXPECT_TRUE(t.take_finished().empty());
}

TEST(JobTracer, JobsAndSeedsGetTheirOwnTraces) {
  JobTracer a(1), b(2);
  a.submit(1, "x", "ns", "q", "", 0);
  a.submit(2, "y", "ns", "q", "", 0);
  b.submit(1, "x", "ns", "q", "", 0);
  std::set<std::string> traces;
  for (auto* t : {&a, &b})
    for (const auto& s : t->take_finished()) traces.insert(s.trace_id);
  EXPECT_EQ(traces.size(), 3u);
}

TEST(OtlpJson, FollowsTheOtlpJsonEncoding) {
  JobTracer t(5);
  t.submit(11, "j", "ns", "q", "high", 1'700'000'000 * kS);
  t.end(11, "failed", 1'700'000'002 * kS);
  const auto j = nlohmann::json::parse(otlp_json(t.take_finished(), "sluice", "1.2.3"));
  const auto& rs = j.at("resourceSpans").at(0);
  EXPECT_EQ(rs["resource"]["attributes"][0],
            (nlohmann::json{{"key", "service.name"}, {"value", {{"stringValue", "sluice"}}}}));
  const auto& spans = rs.at("scopeSpans").at(0).at("spans");
  ASSERT_EQ(spans.size(), 4u);  // submit, admission, finish, job
  for (const auto& s : spans) {
    EXPECT_TRUE(s["startTimeUnixNano"].is_string());  // 64-bit integers as strings
    EXPECT_EQ(s["kind"], 1);                          // SPAN_KIND_INTERNAL
    EXPECT_TRUE(s.contains("parentSpanId") == (s["name"] != "job")) << s.dump();
  }
  const auto& root = spans.back();
  EXPECT_EQ(root["name"], "job");
  EXPECT_EQ(root["endTimeUnixNano"], "1700000002000000000");
  EXPECT_EQ(root["status"]["code"], 2);  // STATUS_CODE_ERROR: the job failed
  EXPECT_EQ(root["attributes"][0],
            (nlohmann::json{{"key", "sluice.job.id"}, {"value", {{"intValue", "11"}}}}));
}

TEST(OtlpExporter, RefusesEndpointsItCannotUse) {
  for (const char* bad : {"https://collector:4318", "collector:4318", "http://:4318",
                          "http://host:99999/v1/traces", "http://host:x"}) {
    OtlpOptions o;
    o.endpoint = bad;
    EXPECT_FALSE(OtlpExporter::create(o)) << bad;
  }
}

TEST(OtlpExporter, TheEnvironmentNamesTheEndpointAsSdksRead) {
  unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  EXPECT_EQ(otlp_endpoint_from_env(), "");
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/", 1);
  EXPECT_EQ(otlp_endpoint_from_env(), "http://c:4318/v1/traces");
  setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x", 1);
  EXPECT_EQ(otlp_endpoint_from_env(), "http://t:1/x");
  unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
}

TEST(OtlpExporter, PostsBatchesToACollectorAndDropsWhenItIsGone) {
  httplib::Server collector;
  std::mutex mu;
  std::vector<nlohmann::json> got;
  collector.Post("/v1/traces", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lk(mu);
    EXPECT_EQ(req.get_header_value("Content-Type"), "application/json");
    got.push_back(nlohmann::json::parse(req.body));
    res.set_content("{}", "application/json");
  });
  const int port = collector.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread th([&] { collector.listen_after_bind(); });
  JobTracer t(3);
  for (JobId id = 1; id <= 3; ++id) t.submit(id, "j", "ns", "q", "", 0);
  {
    OtlpOptions o;
    o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
    o.flush_ms = 10;
    auto ex = OtlpExporter::create(o);
    ASSERT_TRUE(ex) << ex.error();
    (*ex)->add(t.take_finished());  // 3 submit spans
    for (int i = 0; i < 500 && (*ex)->sent() < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ((*ex)->sent(), 3u);
  }
  collector.stop();
  th.join();
  size_t spans = 0;
  for (const auto& r : got) spans += r["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
  EXPECT_EQ(spans, 3u);
  // Nothing listens any more: the batch is dropped, counted, and the caller never waits.
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
  o.flush_ms = 10;
  std::vector<std::string> logs;
  o.log = [&](const std::string& l) { logs.push_back(l); };
  auto ex = OtlpExporter::create(o);
  ASSERT_TRUE(ex);
  t.end(1, "cancelled", 1);
  (*ex)->add(t.take_finished());
  for (int i = 0; i < 500 && (*ex)->dropped() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT((*ex)->dropped(), 0u);
  (*ex).reset();               // stops the thread
  EXPECT_EQ(logs.size(), 1u);  // one line for the run of failures
}

}  // namespace
}  // namespace sluice::server
