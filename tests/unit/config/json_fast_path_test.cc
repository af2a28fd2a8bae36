// parse_jobs' fast path for JSON bodies against its YAML path: the same node trees as
// YAML::LoadAll, the same JobsOutput for every example job and for awkward JSON, and every
// message (errors, warnings, notes) from the YAML path with its line.
#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <nlohmann/json.hpp>

#include "config/json_documents.h"
#include "config/parse_jobs.h"
#include "config_test_util.h"

namespace sluice {
namespace {

namespace cd = config_detail;
using testing_config::any_contains;
using testing_config::dump;
using testing_config::source_dir;

// ---- node trees ------------------------------------------------------------------------------

// First difference between two trees ("" when equal): type, tag, style, scalar text, key order.
std::string diff(const YAML::Node& a, const YAML::Node& b, const std::string& path) {
  if (a.Type() != b.Type())
    return path + ": type " + std::to_string(a.Type()) + " vs " + std::to_string(b.Type());
  if (a.Tag() != b.Tag()) return path + ": tag '" + a.Tag() + "' vs '" + b.Tag() + "'";
  if (a.Style() != b.Style()) return path + ": style";
  if (a.IsScalar() && a.Scalar() != b.Scalar())
    return path + ": scalar '" + a.Scalar() + "' vs '" + b.Scalar() + "'";
  if (a.size() != b.size()) return path + ": size";
  auto ia = a.begin(), ib = b.begin();
  for (size_t i = 0; ia != a.end(); ++ia, ++ib, ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    std::string d = a.IsMap()
                        ? diff(ia->first, ib->first, at + ".key") + diff(ia->second, ib->second, at)
                        : diff(*ia, *ib, at);
    if (!d.empty()) return d;
  }
  return "";
}

// The fast path's documents equal yaml-cpp's (less the null documents, which readers skip).
void expect_same_trees(const std::string& text) {
  SCOPED_TRACE(text);
  auto fast = cd::json_documents(text);
  ASSERT_TRUE(fast.has_value()) << "the fast path declined";
  std::vector<YAML::Node> slow;
  for (const auto& d : YAML::LoadAll(text))
    if (!d.IsNull()) slow.push_back(d);
  ASSERT_EQ(fast->size(), slow.size());
  for (size_t i = 0; i < slow.size(); ++i)
    EXPECT_EQ(diff((*fast)[i], slow[i], "doc" + std::to_string(i)), "");
}

TEST(ConfigJsonFastPath, TreesMatchYamlCpp) {
  expect_same_trees(
      R"({"a":1,"b":"x","c":null,"d":true,"e":false,"f":[],"g":{},"h":[{}],"i":[[]]})");
  // Numbers keep their text: YAML reads "1.50", "1e3", "-1" as written.
  expect_same_trees(R"({"f":1.50,"e":1e3,"E":-2.5E-3,"n":-1,"big":18446744073709551616,)"
                    R"("u":18446744073709551615,"i":-9223372036854775808,"z":0,"fz":-0.0})");
  // Strings that look like other things stay strings (tag "!").
  expect_same_trees(R"({"q":"8","t":"true","n":"null","e":"","s":" a ","h":"#x","d":"---"})");
  // Escapes and text beyond ASCII.
  expect_same_trees(
      R"({"s":"\"\\\/\b\f\n\r\t","u":"\u00e9\u4e2d\u0041","raw":"é中😀","z":"a\u0000b"})");
  // Keys in document order (not sorted), nesting, arrays of objects.
  expect_same_trees(R"({"z":{"y":[1,{"x":[true,null]}]},"a":{"k":"v"},"m":[[1,2],[3]]})");
  // Documents on lines of their own, `---` between, blank documents, a leading `---`.
  expect_same_trees("{\"a\":1}\n---\n{\"b\":2}\n");
  expect_same_trees("---\n{\"a\":1}\n---\n---\n  {\"b\" : [ 1 , 2 ] }  \n\n---\n");
  // One object over several lines (a pretty-printed body).
  expect_same_trees("{\n  \"a\": [\n    1,\n    {\"b\": \"c\"}\n  ],\n  \"d\": {}\n}\n");
  expect_same_trees("{\"a\":\n1, \"b\" :\n [\n\"x\"\n,\n2]\n}");
  // Long keys (up to YAML's limit) and long values.
  expect_same_trees("{\"" + std::string(900, 'k') + "\":\"" + std::string(5000, 'v') + "\"}");
}

TEST(ConfigJsonFastPath, DeclinesWhatItDoesNotTake) {
  auto declines = [](const std::string& text) {
    EXPECT_FALSE(cd::json_documents(text).has_value()) << text;
  };
  declines(R"({"a":1,"a":2})");                        // YAML keeps both: the readers report it
  declines(R"({"m":{"k":1,"k":1}})");                  // ... at any depth
  declines(R"({"s":"\ud83d\ude00"})");                 // yaml-cpp: "invalid unicode"
  declines(R"({"n":-0})");                             // YAML keeps "-0"
  declines(R"({"n":[1, -0]})");                        // ...
  declines("{\"a\":\t1}");                             // tabs and carriage returns
  declines("{\"a\":1}\r\n");                           // ...
  declines(R"([{"a":1}])");                            // a top-level array (YAML: one document)
  declines(R"("text")");                               // not an object
  declines("a: 1\n");                                  // YAML
  declines("{\"a\":1}\n# comment\n");                  // ...
  declines("--- {\"a\":1}\n");                         // a document on the `---` line
  declines("{\"a\":1}\n...\n");                        // a document end marker
  declines("{\"a\"\n:1}");                             // YAML: a key ends on its line
  declines("{\"" + std::string(1100, 'k') + "\":1}");  // ... and within 1,024 characters
  declines("");                                        // nothing
  declines("{\"a\":1} {\"b\":2}");                     // two values in one document
  declines(std::string(100, '[') + std::string(100, ']'));  // deep nesting
  std::string deep = "{\"a\":";
  for (int i = 0; i < 80; ++i) deep += "{\"a\":";
  declines(deep + "1" + std::string(81, '}') + "}");
}

// Random JSON text, written the ways clients and people write it: tricky strings and numbers,
// repeated keys, whitespace and line breaks between tokens.
std::string random_space() {
  static const char* kSpace[] = {"", "", "", " ", "\n", "  ", "\n  ", " \n"};
  return kSpace[*rc::gen::inRange(0, 8)];
}

std::string random_json(int depth, bool object = false) {
  static const char* kStrings[] = {R"("")",
                                   R"("8")",
                                   R"("true")",
                                   R"("null")",
                                   R"("~")",
                                   R"("-0")",
                                   R"("1e3")",
                                   R"("a b")",
                                   R"(" x ")",
                                   R"("#c")",
                                   R"("é中")",
                                   R"("\u00e9\u4e2d")",
                                   R"("\ud83d\ude00")",
                                   R"("\n\t\"\\\/")",
                                   R"("a: b")",
                                   R"("- x")",
                                   R"("[1]")",
                                   R"("{}")",
                                   R"("---")",
                                   R"("\u0000")"};
  static const char* kNumbers[] = {"0",
                                   "-0",
                                   "1",
                                   "-17",
                                   "1.50",
                                   "1e3",
                                   "2E-2",
                                   "-0.0",
                                   "12345678901234567890",
                                   "0.1",
                                   "9223372036854775807",
                                   "-9223372036854775808"};
  static const char* kKeys[] = {"a", "b", "name", "spec", "é", "", "a b", "x\\\\y", "1", "true"};
  const int kind = object ? 5 : *rc::gen::inRange(0, depth >= 3 ? 4 : 6);
  switch (kind) {
    case 0:
      return kStrings[*rc::gen::inRange(0, 20)];
    case 1:
      return kNumbers[*rc::gen::inRange(0, 12)];
    case 2:
      return *rc::gen::element<std::string>("true", "false", "null");
    case 3:
      return kStrings[*rc::gen::inRange(0, 5)];
    case 4: {
      std::string s = "[" + random_space();
      const int n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i)
        s += (i ? "," + random_space() : "") + random_json(depth + 1) + random_space();
      return s + "]";
    }
    default: {
      std::string s = "{" + random_space();
      const int n = *rc::gen::inRange(0, 5);
      for (int i = 0; i < n; ++i)
        s += (i ? "," + random_space() : "") + "\"" + kKeys[*rc::gen::inRange(0, 10)] + "\"" +
             random_space() + ":" + random_space() + random_json(depth + 1) + random_space();
      return s + "}";
    }
  }
}

// Whatever the fast path takes, yaml-cpp reads alike (and does not reject).
RC_GTEST_PROP(ConfigJsonFastPathProperty, TakenTextReadsAsYamlCppReadsIt, ()) {
  std::string text;
  const int docs = *rc::gen::inRange(1, 4);
  for (int i = 0; i < docs; ++i) {
    const std::string doc = random_json(1, /*object=*/true);
    text += (i ? "\n---\n" : random_space()) + doc + random_space();
  }
  auto fast = cd::json_documents(text);
  RC_CLASSIFY(fast.has_value(), "taken");
  if (!fast) return;
  std::vector<YAML::Node> slow;
  try {
    for (const auto& d : YAML::LoadAll(text))
      if (!d.IsNull()) slow.push_back(d);
  } catch (const YAML::Exception& e) {
    RC_FAIL("taken, but yaml-cpp rejects it: " + std::string(e.what()) + "\n" + text);
  }
  RC_ASSERT(fast->size() == slow.size());
  for (size_t i = 0; i < slow.size(); ++i) {
    const std::string d = diff((*fast)[i], slow[i], "doc" + std::to_string(i));
    if (!d.empty()) RC_FAIL(d + "\n" + text);
  }
}

// ---- JobsOutput ------------------------------------------------------------------------------

void expect_same_jobs(const JobsOutput& a, const JobsOutput& b) {
  EXPECT_EQ(a.errors, b.errors);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    const Job& x = a.jobs[i];
    const Job& y = b.jobs[i];
    SCOPED_TRACE(x.name);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.namespace_, y.namespace_);
    EXPECT_EQ(x.queue, y.queue);
    EXPECT_EQ(x.exec().priority_class, y.exec().priority_class);
    EXPECT_EQ(x.priority, y.priority);
    EXPECT_EQ(x.preemptible, y.preemptible);
    EXPECT_EQ(x.interactive, y.interactive);
    ASSERT_EQ(x.pod_sets.size(), y.pod_sets.size());
    for (size_t p = 0; p < x.pod_sets.size(); ++p) {
      EXPECT_EQ(x.pod_sets[p].name, y.pod_sets[p].name);
      EXPECT_EQ(x.pod_sets[p].count, y.pod_sets[p].count);
      EXPECT_TRUE(x.pod_sets[p].requests == y.pod_sets[p].requests);
      EXPECT_EQ(x.pod_sets[p].gpus, y.pod_sets[p].gpus);
      EXPECT_EQ(x.pod_sets[p].gpu_milli, y.pod_sets[p].gpu_milli);
    }
    EXPECT_EQ(x.allowed_models, y.allowed_models);
    EXPECT_EQ(x.topology.level, y.topology.level);
    EXPECT_EQ(x.topology.required, y.topology.required);
    EXPECT_EQ(x.gpu_locality, y.gpu_locality);
    EXPECT_EQ(x.walltime_ns, y.walltime_ns);
    EXPECT_EQ(x.checkpoint_grace_ns, y.checkpoint_grace_ns);
    EXPECT_EQ(x.submit_ns, y.submit_ns);
    EXPECT_EQ(x.fallback.after_ns, y.fallback.after_ns);
    EXPECT_EQ(x.fallback.shapes, y.fallback.shapes);
    EXPECT_EQ(x.exec().command, y.exec().command);
    EXPECT_EQ(x.exec().env, y.exec().env);
  }
}

// The fast path (when it takes the body), parse_jobs and the YAML path all agree. Succeeds when
// the fast path took it; fails with the YAML path's messages when not.
testing::AssertionResult same_both_ways(const std::string& text, const Config& config) {
  SCOPED_TRACE(text);
  const Source src{"request", text};
  const JobsOutput slow = cd::parse_jobs_yaml(src, config);
  expect_same_jobs(parse_jobs(src, config), slow);
  auto fast = cd::parse_jobs_json(src, config);
  if (!fast)
    return testing::AssertionFailure()
           << "the fast path declined; YAML path: " << dump(slow.errors) << dump(slow.notes);
  expect_same_jobs(*fast, slow);
  return testing::AssertionSuccess() << "the fast path took it";
}

// A YAML document as one line of JSON: plain scalars that are JSON numbers or booleans stay
// bare, other scalars become strings, null stays null.
nlohmann::ordered_json to_json(const YAML::Node& n) {
  using J = nlohmann::ordered_json;
  if (n.IsMap()) {
    J o = J::object();
    for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = to_json(it->second);
    return o;
  }
  if (n.IsSequence()) {
    J a = J::array();
    for (auto it = n.begin(); it != n.end(); ++it) a.push_back(to_json(*it));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "?") {
    if (s == "true" || s == "false") return s == "true";
    J number = J::parse(s, nullptr, /*allow_exceptions=*/false);
    if (number.is_number()) return J::parse(s);
  }
  return s;
}

Config example_config(const std::string& dir) {
  std::vector<Source> sources;
  for (const char* f : {"cluster.yaml", "queues.yaml"}) {
    auto s = read_source(source_dir() + "/examples/" + dir + "/" + f);
    EXPECT_TRUE(s.ok());
    sources.push_back(s.value());
  }
  auto out = load(sources, {});
  EXPECT_TRUE(out.ok()) << dump(out.errors);
  return out.config;
}

// Every job document of the examples, as JSON: alone, and all in one `---` body.
TEST(ConfigJsonFastPath, ExampleJobsAsJson) {
  for (const char* dir : {"config", "demo"}) {
    SCOPED_TRACE(dir);
    const Config config = example_config(dir);
    auto text = read_source(source_dir() + "/examples/" + std::string(dir) + "/jobs.yaml");
    ASSERT_TRUE(text.ok());
    std::string all;
    size_t taken = 0, docs = 0;
    for (const YAML::Node& doc : YAML::LoadAll(text.value().text)) {
      if (doc.IsNull()) continue;
      const std::string line = to_json(doc).dump();
      all += (all.empty() ? "" : "---\n") + line + "\n";
      ++docs;
      if (same_both_ways(line, config)) ++taken;
    }
    same_both_ways(all, config);
    // The Pods and batch Jobs with ignored fields (a note) go the YAML way; the rest not.
    EXPECT_GE(taken, docs / 2) << taken << " of " << docs;
  }
}

// The example jobs as the YAML they are: never the fast path, the same answer.
TEST(ConfigJsonFastPath, ExampleYamlIsNotTaken) {
  const Config config = example_config("config");
  auto text = read_source(source_dir() + "/examples/config/jobs.yaml");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(same_both_ways(text.value().text, config));
}

// A sluice Job in namespace nlp of examples/config (queue train: GPUs, CPU, memory).
std::string job(const std::string& name, const std::string& spec_rest,
                const std::string& queue = "train") {
  return R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":"nlp"},"spec":{"queue":")" + queue + "\"" + spec_rest + "}}";
}

TEST(ConfigJsonFastPath, AwkwardJsonJobs) {
  const Config c = example_config("config");
  // What the end-to-end benchmark sends.
  EXPECT_TRUE(same_both_ways(job("b1", R"(,"pods":1,"gpus":1,"command":["true"])") + "\n---\n" +
                                 job("b2", R"(,"pods":1,"gpus":1,"command":["true"])") + "\n",
                             c));
  // Quoted numbers and booleans read as the readers read YAML's.
  EXPECT_TRUE(same_both_ways(
      job("quoted", R"(,"pods":"2","gpus":"4","cpu":"1.5","memory":"8Gi","preemptible":"true",)"
                    R"("interactive":false,"id":"7","submitTime":"12.5","walltime":"90")"),
      c));
  // Numbers as written: 1e3 MiB of memory, 0.50 of a CPU, a duration in seconds.
  EXPECT_TRUE(
      same_both_ways(job("numbers", R"(,"gpus":1,"memory":1e3,"cpu":0.50,"walltime":3600.0)"), c));
  // Escapes and text beyond ASCII in the command and the environment.
  EXPECT_TRUE(same_both_ways(
      job("escapes", R"(,"gpus":1,"command":["sh","-c","echo \"h\u00e9\" \\ \/ \n\tdone"],)"
                     R"("env":{"Z":"中文 😀","A":"","M":"\u0041"})"),
      c));
  // Pod sets, fallback shapes, topology, priority.
  EXPECT_TRUE(same_both_ways(
      job("sets", R"(,"priorityClassName":"urgent","podSets":[{"name":"w","count":2,)"
                  R"("resources":{"nvidia.com/gpu":8,"cpu":"16"}},{"name":"e","resources":)"
                  R"({"cpu":4}}],"topology":{"required":"block"},"gpuLocality":"nvlink")"),
      c));
  EXPECT_TRUE(same_both_ways(
      job("fb", R"(,"pods":2,"gpus":8,"fallback":{"after":"10m","shapes":[{"pods":4,"gpus":4}]})"),
      c));
  // A Pod and a batch/v1 Job with only the fields sluice reads.
  EXPECT_TRUE(
      same_both_ways(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"nlp",)"
                     R"("labels":{"kueue.x-k8s.io/queue-name":"train"}},"spec":{"containers":)"
                     R"([{"name":"c","command":["python"],"args":["x.py"],"env":[{"name":)"
                     R"("A","value":"1"}],"resources":{"limits":{"nvidia.com/gpu":2}}}]}})",
                     c));
  EXPECT_TRUE(same_both_ways(
      R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bj","namespace":"nlp",)"
      R"("labels":{"queue":"train"}},"spec":{"parallelism":2,"template":)"
      R"({"spec":{"containers":[{"name":"c","resources":{"requests":)"
      R"({"cpu":"2","nvidia.com/gpu":"1"}}}]}}}})",
      c));
  // Pretty-printed, with blank documents around.
  EXPECT_TRUE(
      same_both_ways("---\n{\n  \"apiVersion\": \"sluice.dev/v1alpha1\",\n  \"kind\": "
                     "\"Job\",\n  \"metadata\": {\"name\": \"pretty\", \"namespace\": \"nlp\"},\n"
                     "  \"spec\": {\"queue\": \"train\", \"gpus\": 2}\n}\n---\n",
                     c));
  // A Pod with fields sluice ignores (a note): the YAML path says it, with its line.
  EXPECT_FALSE(
      same_both_ways(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"nlp",)"
                     R"("labels":{"queue":"train"}},"spec":{"restartPolicy":"Never",)"
                     R"("containers":[{"name":"c","image":"x","resources":{"limits":)"
                     R"({"nvidia.com/gpu":1}}}]}})",
                     c));
  // A built-in priority class (a warning), a bad value, an unknown queue: errors and warnings
  // from the YAML path.
  EXPECT_FALSE(same_both_ways(job("w", R"(,"gpus":1,"priorityClassName":"high")"), c));
  EXPECT_FALSE(same_both_ways(job("bad", R"(,"gpus":"1.5")"), c));
  EXPECT_FALSE(same_both_ways(job("nq", R"(,"gpus":1)", "nowhere"), c));
  EXPECT_FALSE(same_both_ways(job("a", R"(,"gpus":1)") + "\n---\n" + job("a", R"(,"gpus":1)"), c));
  // A JSON array of jobs is one YAML document that is not a map: the YAML path's error.
  EXPECT_FALSE(same_both_ways("[" + job("x", R"(,"gpus":1)") + "]", c));
  // Empty values: `{}` resources, a null field.
  EXPECT_TRUE(same_both_ways(job("empty", R"(,"gpus":1,"resources":{},"env":null)"), c));
}

TEST(ConfigJsonFastPath, MessagesKeepTheirLines) {
  const Config c = example_config("config");
  // A duplicate key: nlohmann would keep the last one silently; YAML reports it.
  const std::string dup =
      job("d1", R"(,"gpus":1)") + "\n---\n" +
      R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Job",)" + "\n" +
      R"( "metadata":{"name":"d2"},"spec":{"queue":"train","gpus":1,"gpus":2}})";
  EXPECT_FALSE(cd::parse_jobs_json(Source{"request", dup}, c).has_value());
  auto out = parse_jobs(Source{"request", dup}, c);
  EXPECT_TRUE(any_contains(out.errors, {"request:4: spec.gpus: duplicate key (first at line 4)"}))
      << dump(out.errors);
  // An unknown queue in the second document: its line, not the first's.
  const std::string unknown = job("u1", R"(,"gpus":1)") + "\n---\n" + job("u2", ",\"gpus\":1", "x");
  EXPECT_FALSE(cd::parse_jobs_json(Source{"request", unknown}, c).has_value());
  out = parse_jobs(Source{"request", unknown}, c);
  EXPECT_TRUE(any_contains(out.errors, {"request:3: spec.queue: LocalQueue"})) << dump(out.errors);
}

}  // namespace
}  // namespace sluice
