// The server's SAX reader of sync bodies against the document path it stands in for
// (json::parse + get<SyncRequest>()): what an agent sends is read by the fast reader, and every
// body, well-formed or not, gives the same request or the same error text both ways.
#include "server/http/sync_request_reader.h"

#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <optional>
#include <string>

namespace sluice::server {
namespace {

using nlohmann::json;

// The old path's outcome: the request as JSON, or the exception's text.
struct Outcome {
  std::optional<json> value;
  std::string error;
};
Outcome by_document(const std::string& text) {
  try {
    return {json(json::parse(text).get<proto::SyncRequest>()), ""};
  } catch (const json::exception& e) {
    return {std::nullopt, e.what()};
  }
}
Outcome by_reader(const std::string& text) {
  try {
    return {json(parse_sync_request(text)), ""};
  } catch (const json::exception& e) {
    return {std::nullopt, e.what()};
  }
}
void expect_same(const std::string& text) {
  RC_LOG() << "body: " << text << "\n";
  const Outcome a = by_document(text), b = by_reader(text);
  RC_ASSERT(a.value == b.value);
  RC_ASSERT(a.error == b.error);
  proto::SyncRequest fast;
  const bool taken = read_sync_request_fast(text, &fast);
  if (taken) RC_ASSERT(a.value && json(fast) == *a.value);
  RC_CLASSIFY(taken, "read by the fast reader");
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

proto::SyncRequest any_request(bool plain) {
  proto::SyncRequest r;
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

RC_GTEST_PROP(SyncRequestReader, ReadsWhatAnAgentSends, ()) {
  const proto::SyncRequest sent = any_request(true);
  const std::string text = proto::dump_json(json(sent));
  proto::SyncRequest got;
  RC_ASSERT(read_sync_request_fast(text, &got));
  RC_ASSERT(json(got) == json::parse(text).get<proto::SyncRequest>());
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
                                      "unknown"};
  return kKeys[*rc::gen::inRange(0, 23)];
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

// An agent's body with a few keys, at the top or in an element, set to anything: mostly
// bodies the fast reader takes, each with an odd value or two.
json perturbed_request() {
  json doc = json(any_request(*rc::gen::inRange(0, 4) > 0));
  for (int i = *rc::gen::inRange(0, 3); i > 0; --i) {
    json* at = &doc;
    const auto list =
        *rc::gen::element<std::string>("running", "exits", "checkpoints", "started", "gpu_use", "");
    if (!list.empty() && doc[list].is_array() && !doc[list].empty())
      at = &doc[list][*rc::gen::inRange<size_t>(0, doc[list].size())];
    const json value = any_value(2);
    (*at)[any_value_key()] = value;
  }
  return doc;
}

RC_GTEST_PROP(SyncRequestReader, AnyDocumentReadsAsTheDocumentPathReadsIt, ()) {
  json top = json::object();
  if (*rc::gen::inRange(0, 4) > 0) {
    top = perturbed_request();
  } else {
    for (int i = *rc::gen::inRange(0, 6); i > 0; --i) top[any_value_key()] = any_value(3);
  }
  expect_same(proto::dump_json(*rc::gen::inRange(0, 8) > 0 ? top : any_value(3)));
}

// An agent's body, cut or with one byte changed: parse errors and odd tokens.
RC_GTEST_PROP(SyncRequestReader, DamagedBodiesGiveTheSameErrors, ()) {
  std::string text = proto::dump_json(json(any_request(*rc::gen::inRange(0, 4) > 0)));
  const size_t at = *rc::gen::inRange<size_t>(0, text.size());
  if (*rc::gen::element(0, 1))
    text.resize(at);
  else
    text[at] = *rc::gen::element('"', ',', ':', '{', '}', '[', ']', '.', 'e', '-', '1', ' ', 'x');
  expect_same(text);
}

// ---- the cases the reader declines, by name -----------------------------------------------------

proto::SyncRequest read(const std::string& text) {
  return parse_sync_request(text);
}
bool fast(const std::string& text) {
  proto::SyncRequest r;
  return read_sync_request_fast(text, &r);
}

TEST(SyncRequestReader, SkipsUnknownKeysAsTheDocumentPathIgnoresThem) {
  const std::string text = R"({"wait_ms": 5, "x": {"y": [1, "a", null, true, {}]}, "running":
      [{"job": 7, "pod": 1, "new": [2]}]})";
  EXPECT_TRUE(fast(text));
  const auto r = read(text);
  EXPECT_EQ(r.wait_ms, 5);
  ASSERT_EQ(r.running.size(), 1u);
  EXPECT_EQ(r.running[0].job, 7u);
  EXPECT_EQ(r.running[0].pod, 1);
}

TEST(SyncRequestReader, DeclinesWhatTheDocumentPathReadsDifferently) {
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

TEST(SyncRequestReader, NumbersConvertAsGetConvertsThem) {
  // Out of an int32's range: the same static_cast as get<int32_t>().
  const std::string text =
      R"({"gpu_utilization_pct": [4294967297, -1], "started": [{"job": -1, "pod": 4294967298}]})";
  EXPECT_TRUE(fast(text));
  EXPECT_EQ(json(read(text)), json(json::parse(text).get<proto::SyncRequest>()));
}

}  // namespace
}  // namespace sluice::server
