// ServerState::check_agents and the server's own stalls (issue 41).
#include <gtest/gtest.h>

#include "server/state.h"
#include "state_fixture.h"

namespace sluice::server {
namespace state_stall_test {  // of its own: unity batches

using namespace testing_state;  // NOLINT(google-build-using-namespace)

bool ready(const ServerState& st, const std::string& node, TimeNs now) {
  const auto view = st.nodes_view(now);
  for (const auto& n : view["nodes"])
    if (n["name"] == node) return n["ready"].get<bool>();
  return false;
}

// The server's own stall (the loop looked at the agents 30 s apart: a frozen process, a hung
// fsync) is not the agents' silence: the nodes stay Ready and get the time back; agents silent
// after it are NotReady one timeout after the stall ended (issue 41).
TEST_F(ServerStateTest, TheServersOwnStallIsNotTheAgentsSilence) {
  up(1 * kS);
  st.check_agents(1 * kS);
  st.check_agents(31 * kS);
  EXPECT_TRUE(ready(st, "n0", 31 * kS));
  EXPECT_TRUE(ready(st, "n1", 31 * kS));
  EXPECT_NE(st.metrics_text(31 * kS).find("sluice_server_stalled_seconds_total 29.8"),
            std::string::npos);
  TimeNs t = 31 * kS;
  for (; t < 40 * kS; t += kS / 5) st.check_agents(t);  // ticks as usual: no more credit
  EXPECT_TRUE(ready(st, "n0", t));
  for (; t < 42 * kS; t += kS / 5) st.check_agents(t);
  EXPECT_FALSE(ready(st, "n0", t));  // 10 s after 30.8 s
  EXPECT_FALSE(ready(st, "n1", t));
}

}  // namespace state_stall_test
}  // namespace sluice::server
