// The plain-JSON reader of the agents' syncs (proto/protocol_plain.h) against the document
// path it stands in for (json::parse + get<T>()): what an agent sends and what the server
// answers are read by the plain reader, and every text, well-formed or not, gives the same
// message or the same error text both ways.
#include "proto/protocol_plain.h"

#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <optional>
#include <string>

namespace sluice::proto {
namespace {

using nlohmann::json;

// A path's outcome: the message as JSON, or the exception's text.
struct Outcome {
  std::optional<json> value;
  std::string error;
};
template <class Read>
Outcome outcome(Read read) {
  try {
    return {json(read()), ""};
  } catch (const json::exception& e) {
    return {std::nullopt, e.what()};
  }
}
template <class T>
void expect_same(const std::string& text) {
  RC_LOG() << "body: " << text << "\n";
  const Outcome a = outcome([&] { return json::parse(text).get<T>(); });
  const Outcome b = outcome([&] { return parse_message<T>(text); });
  RC_ASSERT(a.value == b.value);
  RC_ASSERT(a.error == b.error);
  T plain;
  const bool taken = read_plain(text, &plain);
  if (taken) RC_ASSERT(a.value && json(plain) == *a.value);
  RC_CLASSIFY(taken, "read by the plain reader");
  RC_CLASSIFY(!a.value, "an error");
}

// ---- what an agent sends ----------------------------------------------------------------------

template <class T>
T any() {
  return *rc::gen::arbitrary<T>();
}

// Strings as an agent writes them (printable ASCII: ids, reasons, most messages) or any bytes
// (escapes, UTF-8, bad UTF-8: the fast reader declines them).
std::string any_string(bool plain) {
  if (!plain) return any<std::string>();
  return *rc::gen::container<std::string>(rc::gen::suchThat(
      rc::gen::inRange<char>(0x20, 0x7f), [](char c) { return c != '"' && c != '\\'; }));
}

SyncRequest any_request(bool plain) {
  SyncRequest r;
  r.agent_id = any_string(plain);
  r.wait_ms = any<int64_t>();
  const auto n = [] { return *rc::gen::inRange(0, 4); };
  for (int i = n(); i > 0; --i)
    r.running.push_back(
        {any<uint64_t>(), any<int32_t>(), any<int64_t>(), any<bool>(), any<uint64_t>()});
  for (int i = n(); i > 0; --i)
    r.exits.push_back({any<uint64_t>(), any<int32_t>(), any<int32_t>(), any<int32_t>(),
                       any_string(plain), any_string(plain), any<int64_t>(), any<uint64_t>()});
  for (int i = n(); i > 0; --i)
    r.checkpoints.push_back({any<uint64_t>(), any<int32_t>(), any<int64_t>(), any<uint64_t>()});
  for (int i = n(); i > 0; --i)
    r.started.push_back({any<uint64_t>(), any<int32_t>(), any<uint64_t>()});
  for (int i = n(); i > 0; --i) r.gpu_utilization_pct.push_back(any<int32_t>());
  for (int i = n(); i > 0; --i)
    r.gpu_use.push_back({any<uint64_t>(), any<int32_t>(), any<uint64_t>(), any<int64_t>(),
                         any<int64_t>(), any<int64_t>(), any<int64_t>()});
  return r;
}

// What the server answers: assignments (with peers, a command, env), stop orders, log
// requests, terminal input.
SyncResponse any_response(bool plain) {
  SyncResponse r;
  const auto n = [] { return *rc::gen::inRange(0, 3); };
  for (int i = n(); i > 0; --i) {
    Assignment a;
    a.job = any<uint64_t>();
    a.pod = any<int32_t>();
    a.run = any<uint64_t>();
    a.attempt = any<int32_t>();
    a.job_name = any_string(plain);
    a.job_namespace = any_string(plain);
    a.gang_size = any<int32_t>();
    for (int k = n(); k > 0; --k)
      a.peers.push_back({any<int32_t>(), any_string(plain), any_string(plain)});
    for (int k = n(); k > 0; --k) a.command.push_back(any_string(plain));
    for (int k = n(); k > 0; --k) a.env[any_string(plain)] = any_string(plain);
    for (int k = n(); k > 0; --k) a.gpus.push_back(any<int32_t>());
    a.gpu_milli = any<int32_t>();
    a.walltime_ms = any<int64_t>();
    a.run_as_uid = any<int64_t>();
    a.user = any_string(plain);
    a.allow_root = any<bool>();
    a.memory_mib = any<int64_t>();
    a.image = any_string(plain);
    a.image_on_host = any<bool>();
    a.working_dir = any_string(plain);
    a.output_path = any_string(plain);
    a.tty = any<bool>();
    r.assign.push_back(a);
  }
  for (int i = n(); i > 0; --i)
    r.stop.push_back({any<uint64_t>(), any<int32_t>(), any_string(plain), any<int64_t>(),
                      any_string(plain), any<uint64_t>()});
  r.heartbeat_ms = any<int64_t>();
  for (int i = n(); i > 0; --i)
    r.logs.push_back({any<uint64_t>(), any<uint64_t>(), any<int32_t>(), any<int64_t>(),
                      any<int64_t>(), any<int64_t>()});
  for (int i = n(); i > 0; --i)
    r.tty.push_back(
        {any<uint64_t>(), any<int32_t>(), any_string(plain), any<int32_t>(), any<int32_t>()});
  return r;
}

template <class T>
void reads_what_was_sent(const T& sent) {
  const std::string text = dump_json(json(sent));
  T got;
  RC_ASSERT(read_plain(text, &got));
  RC_ASSERT(json(got) == json::parse(text).get<T>());
  RC_ASSERT(json(got) == json(sent));
}

RC_GTEST_PROP(PlainJson, ReadsWhatAnAgentSends, ()) {
  reads_what_was_sent(any_request(true));
}
RC_GTEST_PROP(PlainJson, ReadsWhatTheServerAnswers, ()) {
  reads_what_was_sent(any_response(true));
}

// ---- any body ---------------------------------------------------------------------------------

// A key of the protocol's own (so that wrong types land on real fields), or an unknown one.
std::string any_value_key() {
  static const char* const kKeys[] = {"agent_id",
                                      "running",
                                      "exits",
                                      "checkpoints",
                                      "started",
                                      "wait_ms",
                                      "gpu_utilization_pct",
                                      "gpu_use",
                                      "job",
                                      "pod",
                                      "pid",
                                      "stopping",
                                      "run",
                                      "exit_code",
                                      "signal",
                                      "reason",
                                      "message",
                                      "at_unix_ns",
                                      "samples",
                                      "peak_mib",
                                      "mib_sum",
                                      "util_sum",
                                      "unknown",
                                      "assign",
                                      "stop",
                                      "heartbeat_ms",
                                      "logs",
                                      "tty",
                                      "peers",
                                      "command",
                                      "env",
                                      "gpus",
                                      "node",
                                      "grace_ms",
                                      "allow_root",
                                      "data",
                                      "id"};
  return kKeys[*rc::gen::inRange(0, 37)];
}

json any_value(int depth) {
  const int kind = *rc::gen::inRange(0, depth > 0 ? 9 : 7);
  switch (kind) {
    case 0:
      return nullptr;
    case 1:
      return any<bool>();
    case 2:
      return any<int64_t>();
    case 3:
      return any<uint64_t>();
    case 4:
      return *rc::gen::element(0.5, -2.0, 1e300);
    case 5:
      return *rc::gen::element<std::string>("", "exited", "n1");
    case 6:
      return *rc::gen::inRange(-3, 300);
    case 7: {
      json a = json::array();
      for (int i = *rc::gen::inRange(0, 4); i > 0; --i) a.push_back(any_value(depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = *rc::gen::inRange(0, 5); i > 0; --i) o[any_value_key()] = any_value(depth - 1);
      return o;
    }
  }
}

// A message with a few keys, at the top or in an element (or an assignment's peer), set to
// anything: mostly texts the plain reader takes, each with an odd value or two.
json perturbed(json doc, std::initializer_list<std::string> lists) {
  for (int i = *rc::gen::inRange(0, 3); i > 0; --i) {
    json* at = &doc;
    const std::string list = *rc::gen::elementOf(std::vector<std::string>(lists));
    if (!list.empty() && doc[list].is_array() && !doc[list].empty()) {
      at = &doc[list][*rc::gen::inRange<size_t>(0, doc[list].size())];
      if (at->is_object() && at->contains("peers") && (*at)["peers"].is_array() &&
          !(*at)["peers"].empty() && *rc::gen::element(0, 1))
        at = &(*at)["peers"][0];
      // An earlier step may have put anything there (false, an array): keys go on the top.
      if (!at->is_object()) at = &doc;
    }
    const json value = any_value(2);
    (*at)[any_value_key()] = value;
  }
  return doc;
}

template <class T>
void any_document_reads_alike(const json& message) {
  json top = json::object();
  if (*rc::gen::inRange(0, 4) > 0) {
    top = message;
  } else {
    for (int i = *rc::gen::inRange(0, 6); i > 0; --i) top[any_value_key()] = any_value(3);
  }
  expect_same<T>(dump_json(*rc::gen::inRange(0, 8) > 0 ? top : any_value(3)));
}

RC_GTEST_PROP(PlainJson, AnyRequestReadsAsTheDocumentPathReadsIt, ()) {
  any_document_reads_alike<SyncRequest>(
      perturbed(json(any_request(*rc::gen::inRange(0, 4) > 0)),
                {"running", "exits", "checkpoints", "started", "gpu_use", ""}));
}

RC_GTEST_PROP(PlainJson, AnyReplyReadsAsTheDocumentPathReadsIt, ()) {
  any_document_reads_alike<SyncResponse>(perturbed(json(any_response(*rc::gen::inRange(0, 4) > 0)),
                                                   {"assign", "stop", "logs", "tty", ""}));
}

// A message, cut or with one byte changed: parse errors and odd tokens.
template <class T>
void damaged_reads_alike(const T& message) {
  std::string text = dump_json(json(message));
  const size_t at = *rc::gen::inRange<size_t>(0, text.size());
  if (*rc::gen::element(0, 1))
    text.resize(at);
  else
    text[at] = *rc::gen::element('"', ',', ':', '{', '}', '[', ']', '.', 'e', '-', '1', ' ', 'x');
  expect_same<T>(text);
}

RC_GTEST_PROP(PlainJson, DamagedRequestsGiveTheSameErrors, ()) {
  damaged_reads_alike(any_request(*rc::gen::inRange(0, 4) > 0));
}
RC_GTEST_PROP(PlainJson, DamagedRepliesGiveTheSameErrors, ()) {
  damaged_reads_alike(any_response(*rc::gen::inRange(0, 4) > 0));
}

// ---- the cases the reader declines, by name -----------------------------------------------------

SyncRequest read(const std::string& text) {
  return parse_message<SyncRequest>(text);
}
bool fast(const std::string& text) {
  SyncRequest r;
  return read_plain(text, &r);
}

TEST(PlainJson, SkipsUnknownKeysAsTheDocumentPathIgnoresThem) {
  const std::string text = R"({"wait_ms": 5, "x": {"y": [1, "a", null, true, {}]}, "running":
      [{"job": 7, "pod": 1, "new": [2]}]})";
  EXPECT_TRUE(fast(text));
  const auto r = read(text);
  EXPECT_EQ(r.wait_ms, 5);
  ASSERT_EQ(r.running.size(), 1u);
  EXPECT_EQ(r.running[0].job, 7u);
  EXPECT_EQ(r.running[0].pod, 1);
}

TEST(PlainJson, DeclinesWhatTheDocumentPathReadsDifferently) {
  // A float anywhere is a wrong type (require_integers), in an unknown key too.
  EXPECT_FALSE(fast(R"({"x": [1.5]})"));
  EXPECT_THROW(read(R"({"x": [1.5]})"), json::type_error);
  // A boolean for a number.
  EXPECT_FALSE(fast(R"({"wait_ms": true})"));
  EXPECT_THROW(read(R"({"wait_ms": true})"), json::type_error);
  // A repeated key: the last one.
  EXPECT_FALSE(fast(R"({"wait_ms": 1, "wait_ms": 2})"));
  EXPECT_EQ(read(R"({"wait_ms": 1, "wait_ms": 2})").wait_ms, 2);
  EXPECT_FALSE(fast(R"({"started": [{"job": 1, "job": 3}]})"));
  EXPECT_EQ(read(R"({"started": [{"job": 1, "job": 3}]})").started.at(0).job, 3u);
  // Wrong types and null throw as before.
  EXPECT_THROW(read(R"({"running": [{"stopping": 1}]})"), json::type_error);
  EXPECT_THROW(read(R"({"running": null})"), json::type_error);
  EXPECT_THROW(read(R"({"exits": [5]})"), json::type_error);
  EXPECT_THROW(read(R"([])"), json::type_error);
  EXPECT_THROW(read(R"({"agent_id": "a"} x)"), json::parse_error);
}

// Every field protocol.h declares for these messages is in protocol_plain.h's tables: one left
// out there would be skipped as an unknown key, and lost on the plain path only.
template <class T>
void expect_every_field_listed(const plain::ObjType& type) {
  T v;
  const json fields = v;
  for (const auto& [key, unused] : fields.items()) {
    plain::Slot s;
    EXPECT_GE(type.field(&v, key, &s), 0) << key;
  }
}

TEST(PlainJson, EveryFieldOfTheProtocolHasItsPlace) {
  namespace t = plain_types;
  expect_every_field_listed<SyncRequest>(t::kSyncRequest);
  expect_every_field_listed<RunningPod>(t::kRunningPod);
  expect_every_field_listed<PodExit>(t::kPodExit);
  expect_every_field_listed<CheckpointReport>(t::kCheckpoint);
  expect_every_field_listed<StartedPod>(t::kStartedPod);
  expect_every_field_listed<PodGpuUse>(t::kGpuUse);
  expect_every_field_listed<SyncResponse>(t::kSyncResponse);
  expect_every_field_listed<Assignment>(t::kAssignment);
  expect_every_field_listed<PeerPod>(t::kPeerPod);
  expect_every_field_listed<StopOrder>(t::kStopOrder);
  expect_every_field_listed<LogRequest>(t::kLogRequest);
  expect_every_field_listed<TtyInput>(t::kTtyInput);
}

TEST(PlainJson, NumbersConvertAsGetConvertsThem) {
  // Out of an int32's range: the same static_cast as get<int32_t>().
  const std::string text =
      R"({"gpu_utilization_pct": [4294967297, -1], "started": [{"job": -1, "pod": 4294967298}]})";
  EXPECT_TRUE(fast(text));
  EXPECT_EQ(json(read(text)), json(json::parse(text).get<SyncRequest>()));
}

TEST(PlainJson, AReplysEnvKeepsTheLastOfARepeatedNameAsTheDocumentPathDoes) {
  const std::string text =
      R"({"assign": [{"job": 1, "env": {"A": "1", "B": "2", "A": "3"}, "peers": [{"pod": 0}]}]})";
  SyncResponse r;
  EXPECT_TRUE(read_plain(text, &r));
  EXPECT_EQ(json(r), json(json::parse(text).get<SyncResponse>()));
  EXPECT_EQ(r.assign.at(0).env.at("A"), "3");
  // A value that is not a string, a list for the map: declined, and the same error after.
  for (const char* odd :
       {R"({"assign": [{"env": {"A": 1}}]})", R"({"assign": [{"env": []}]})",
        R"({"assign": [{"command": [1]}]})", R"({"assign": [{"peers": [[]]}]})"}) {
    EXPECT_FALSE(read_plain(odd, &r)) << odd;
    EXPECT_THROW(parse_message<SyncResponse>(odd), json::type_error) << odd;
  }
}

}  // namespace
}  // namespace sluice::proto
