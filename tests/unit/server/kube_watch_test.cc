// The pure pieces of the Kubernetes API's watch (server/http/kube_watch.h): its query, the
// events' shapes (a Table row for kubectl get -w), BOOKMARK and the 410 Expired ERROR event,
// and which objects a watch shows.
#include "server/http/kube_watch.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_watch_test {

using kube::json;

net::Request ask(net::Fields params) {
  net::Request r;
  r.method = "GET";
  r.params = std::move(params);
  return r;
}

kube::Watch jobs_watch() {
  kube::Watch w;
  w.kind = kube::find_kind("batch", "v1", "jobs");
  return w;
}

TEST(KubeWatchQuery, ReadsTheVersionTimeoutAndBookmarksAndRefusesWhatItCannotHonour) {
  kube::Watch w = jobs_watch();
  EXPECT_EQ(kube::read_watch_query(ask({{"resourceVersion", "1234"},
                                        {"timeoutSeconds", "30"},
                                        {"allowWatchBookmarks", "true"}}),
                                   w),
            "");
  EXPECT_FALSE(w.initial);
  EXPECT_EQ(w.from, 1234u);
  EXPECT_TRUE(w.bookmarks);
  const auto left = w.until - kube::WatchClock::now();
  EXPECT_GT(left, std::chrono::seconds(25));
  EXPECT_LE(left, std::chrono::seconds(30));
  kube::Watch big = jobs_watch();  // versions begin at the server's start in microseconds
  EXPECT_EQ(kube::read_watch_query(ask({{"resourceVersion", "1765000000000123"}}), big), "");
  EXPECT_EQ(big.from, 1765000000000123u);
  kube::Watch all = jobs_watch();
  EXPECT_EQ(kube::read_watch_query(ask({{"resourceVersion", "0"}}), all), "");
  EXPECT_TRUE(all.initial);  // "0": the current objects first, as ADDED
  EXPECT_LE(all.until - kube::WatchClock::now(), std::chrono::seconds(kube::kMaxWatchSeconds));
  kube::Watch bad = jobs_watch();
  EXPECT_NE(kube::read_watch_query(ask({{"resourceVersion", "12a"}}), bad), "");
  EXPECT_NE(kube::read_watch_query(ask({{"timeoutSeconds", "-1"}}), bad), "");
  EXPECT_NE(kube::read_watch_query(ask({{"sendInitialEvents", "true"}}), bad), "");
  EXPECT_NE(kube::read_watch_query(ask({{"resourceVersionMatch", "Exact"}}), bad), "");
  kube::Watch list = jobs_watch();
  EXPECT_EQ(kube::read_watch_query(
                ask({{"sendInitialEvents", "true"}, {"allowWatchBookmarks", "true"}}), list),
            "");
  EXPECT_TRUE(list.initial && list.send_initial_events);
}

TEST(KubeWatchEvents, AreOneJsonLineEachAndATableRowForKubectlGet) {
  kube::Watch w = jobs_watch();
  const json job = {{"kind", "Job"}, {"metadata", {{"name", "x"}, {"namespace", "a"}}}};
  const json cells = json::array({"x", "Running", "0/1", "5s", "5s", "", "", ""});
  std::string line = kube::watch_event(w, "ADDED", job, cells);
  ASSERT_EQ(line.back(), '\n');
  json e = json::parse(line);
  EXPECT_EQ(e["type"], "ADDED");
  EXPECT_EQ(e["object"], job);
  w.table = true;
  e = json::parse(kube::watch_event(w, "MODIFIED", job, cells));
  EXPECT_EQ(e["object"]["kind"], "Table");
  EXPECT_EQ(e["object"]["rows"][0]["cells"], cells);
  EXPECT_EQ(e["object"]["columnDefinitions"].size(), kube::job_columns().size());
  e = json::parse(kube::bookmark_event(w, 77, false));
  EXPECT_EQ(e["type"], "BOOKMARK");
  EXPECT_EQ(e["object"]["metadata"]["resourceVersion"], "77");
  EXPECT_FALSE(e["object"]["metadata"].contains("annotations"));
  e = json::parse(kube::bookmark_event(w, 78, true));
  EXPECT_EQ(e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  e = json::parse(kube::expired_event(5));
  EXPECT_EQ(e["type"], "ERROR");
  EXPECT_EQ(e["object"]["code"], 410);
  EXPECT_EQ(e["object"]["reason"], "Expired");
}

TEST(KubeWatchSnapshot, VersionsWhatChangedAddedAndGoneWithOneVersionPerUpdate) {
  uint64_t next = 10;
  const auto bump = [&] { return ++next; };
  const auto table = [](std::vector<std::pair<std::string, int>> queues) {
    json rows = json::array();
    for (const auto& [name, pending] : queues)
      rows.push_back({{"cells", {name, pending}},
                      {"object",
                       {{"metadata", {{"name", name}, {"resourceVersion", "1"}}},
                        {"status", {{"pendingWorkloads", pending}}}}}});
    return json{{"columnDefinitions", json::array({{{"name", "Name"}}})}, {"rows", rows}};
  };
  kube::Snapshot s;
  s.update(table({{"a", 0}, {"b", 0}}), bump);
  EXPECT_EQ(s.first_rv, 11u);
  EXPECT_EQ(s.columns[0]["name"], "Name");
  EXPECT_FALSE(s.objects["/a"].added);  // there before the first snapshot: not new
  EXPECT_EQ(s.objects["/a"].built.object["metadata"]["resourceVersion"], "11");
  s.update(table({{"a", 0}, {"b", 0}}), bump);  // nothing changed: no version taken
  EXPECT_EQ(next, 11u);
  s.update(table({{"a", 1}, {"c", 0}}), bump);  // a changed, b gone, c new: one version
  EXPECT_EQ(next, 12u);
  EXPECT_EQ(s.objects["/a"].rv, 12u);
  EXPECT_EQ(s.objects["/a"].built.cells[1], 1);
  EXPECT_TRUE(s.objects["/b"].gone);
  EXPECT_EQ(s.objects["/b"].rv, 12u);
  EXPECT_TRUE(s.objects["/c"].added);
  s.update(table({{"a", 1}, {"b", 0}, {"c", 0}}), bump);  // b back: added again
  EXPECT_FALSE(s.objects["/b"].gone);
  EXPECT_TRUE(s.objects["/b"].added);
  EXPECT_EQ(s.objects["/b"].rv, 13u);
  EXPECT_TRUE(kube::snapshot_kind(*kube::find_kind("", "v1", "nodes")));
  EXPECT_TRUE(kube::snapshot_kind(*kube::find_kind("kueue.x-k8s.io", "v1beta1", "localqueues")));
  EXPECT_FALSE(kube::snapshot_kind(*kube::find_kind("", "v1", "pods")));
  EXPECT_FALSE(kube::snapshot_kind(
      *kube::find_kind("visibility.kueue.x-k8s.io", "v1beta1", "clusterqueues")));
}

TEST(KubeWatchQuery, FlagsAreTrueAsGoParsesThem) {
  for (const char* yes : {"true", "True", "TRUE", "t", "T", "1"}) EXPECT_TRUE(kube::flag_true(yes));
  for (const char* no : {"", "false", "False", "0", "yes", "on", "tru"})
    EXPECT_FALSE(kube::flag_true(no)) << no;
}

TEST(KubeWatchShows, TheCallersNamespacesThePathsAndTheSelectors) {
  kube::Watch w = jobs_watch();
  w.caller.admin = false;
  w.caller.namespaces = {"a"};
  const json in_a = {{"kind", "Job"},
                     {"metadata", {{"name", "x"}, {"namespace", "a"}, {"labels", {{"k", "v"}}}}}};
  const json in_b = {{"kind", "Job"}, {"metadata", {{"name", "x"}, {"namespace", "b"}}}};
  json other_kind = in_a;
  other_kind["kind"] = "JobSet";  // a watch of Jobs shows Jobs (one of JobSets, JobSets)
  EXPECT_TRUE(w.shows(in_a));
  EXPECT_FALSE(w.shows(in_b));  // not the caller's
  EXPECT_FALSE(w.shows(other_kind));
  w.fields.equal.emplace_back("metadata.name", "y");
  EXPECT_FALSE(w.shows(in_a));
  w.fields = {};
  w.labels.equal.emplace_back("k", "v");
  EXPECT_TRUE(w.shows(in_a));
  w.labels.equal = {{"k", "w"}};
  EXPECT_FALSE(w.shows(in_a));
}

}  // namespace kube_watch_test
}  // namespace sluice::server
