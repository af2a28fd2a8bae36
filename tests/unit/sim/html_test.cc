// The HTML report: self-contained (no script, no external reference), escaped, and byte-identical
// for the same input and seed, for `sim run` and `sim compare`, as the JSON report is.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/html.h"
#include "sim/run_cli.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace {

using testing::TempDir;
using testing::tiny_config_yaml;

TEST(Html, EscapesText) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
}

class HtmlRun : public TempDir {
 protected:
  RunArgs synthetic() {
    RunArgs a;
    a.config = {write("config <&>.yaml", tiny_config_yaml(4))};
    a.trace_format = "synthetic";
    a.synthetic.jobs = 400;
    a.synthetic.arrival_rate_per_s = 0.002;
    a.synthetic.max_duration_s = 3600;
    a.node_failures = 2;
    a.seed = 5;
    a.quiet = true;
    a.report = (dir_ / "r.json").string();
    a.html = (dir_ / "r.html").string();
    return a;
  }
};

TEST_F(HtmlRun, RunPageIsDeterministicAndSelfContained) {
  RunArgs a = synthetic();
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const std::string html = slurp(a.html), json = slurp(a.report);
  ASSERT_EQ(run_sim(a, out, err), 0);
  EXPECT_EQ(html, slurp(a.html));
  EXPECT_EQ(json, slurp(a.report));
  // The JSON is the same with and without --html (the series is not in it).
  RunArgs b = a;
  b.html.clear();
  b.report = (dir_ / "r2.json").string();
  ASSERT_EQ(run_sim(b, out, err), 0);
  EXPECT_EQ(json, slurp(b.report));

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("config <&>"), std::string::npos);  // the file name is escaped
  EXPECT_NE(html.find("config &lt;&amp;&gt;.yaml"), std::string::npos);
  for (const char* s : {"GPU utilisation", "Pending jobs per priority class", "Wait-time CDF",
                        "entitlement", "chargeback", "Preemptions", "<polyline", "<svg"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
}

TEST_F(HtmlRun, ComparePageIsDeterministic) {
  RunArgs a = synthetic();
  a.config.push_back(write("second.yaml", tiny_config_yaml(4)));
  std::ostringstream out, err;
  ASSERT_EQ(compare_sim(a, out, err), 0) << err.str();
  const std::string html = slurp(a.html);
  ASSERT_EQ(compare_sim(a, out, err), 0);
  EXPECT_EQ(html, slurp(a.html));
  EXPECT_NE(html.find("Side by side"), std::string::npos);
  EXPECT_NE(html.find("second.yaml"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace sluice::sim
