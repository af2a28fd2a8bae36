// The agent protocol's decoding of what a peer sends (src/proto/protocol.h).
#include <gtest/gtest.h>

#include "proto/protocol.h"

namespace sluice::proto {
namespace {

using nlohmann::json;

// A float where the protocol has an integer used to go through a plain cast, undefined for one
// out of range (found by tests/fuzz, fuzz_proto: `"heartbeat_ms": 4.4e53`). It is a wrong type
// now, thrown as json::exception, which the receiver answers with 400.
TEST(Protocol, FloatsAreWrongTypesNotCasts) {
  EXPECT_THROW(json::parse(R"({"node":"n","heartbeat_ms":4.4e53})").get<RegisterResponse>(),
               json::exception);
  EXPECT_THROW(json::parse(R"({"assign":[{"job":-2.5}]})").get<SyncResponse>(), json::exception);
  EXPECT_THROW(json::parse(R"({"exits":[{"at_unix_ns":1e300}]})").get<SyncRequest>(),
               json::exception);
  EXPECT_THROW(json::parse(R"({"gpus":[{"memory_mib":1.0}]})").get<RegisterRequest>(),
               json::exception);
  // Integers, missing fields and unknown fields decode as before.
  const auto sync =
      json::parse(R"({"wait_ms":250,"started":[{"job":7,"pod":1}],"new":"x"})").get<SyncRequest>();
  EXPECT_EQ(sync.wait_ms, 250);  // given
  ASSERT_EQ(sync.started.size(), 1u);
  EXPECT_EQ(sync.started[0].job, 7u);
  EXPECT_EQ(sync.started[0].pod, 1);
  EXPECT_EQ(sync.started[0].run, 0u);  // missing: default (an agent from before run numbers)
  EXPECT_EQ(sync.agent_id, "");  // missing: default
}

TEST(Protocol, MessagesRoundTrip) {
  SyncResponse r;
  r.heartbeat_ms = 500;
  Assignment a;
  a.job = 3;
  a.env = {{"A", "1"}};
  r.assign.push_back(a);
  const json j = r;
  const auto back = json::parse(j.dump()).get<SyncResponse>();
  EXPECT_EQ(json(back), j);
  EXPECT_EQ(back.assign.at(0).env.at("A"), "1");
}

}  // namespace
}  // namespace sluice::proto
