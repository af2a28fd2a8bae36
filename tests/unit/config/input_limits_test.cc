// Bounds on submissions and configuration text (issue 13): invalid UTF-8, alias expansion,
// document counts, string and list lengths, nesting, names with control characters.
#include "config/input_limits.h"

#include <gtest/gtest.h>

#include "config/parse_jobs.h"
#include "config/yaml_documents.h"
#include "config_test_util.h"

namespace sluice {
namespace input_limits_test {  // its own: the unit tests build in unity batches
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

const char* kBase = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodeGroups:
  - {namePrefix: n, count: 2, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
)";

const Config& config() {
  static const Config c = [] {
    auto out = load_one(yaml(kBase), "base.yaml");
    EXPECT_TRUE(out.ok()) << dump(out.errors);
    return out.config;
  }();
  return c;
}

JobsOutput submit(const std::string& text) {
  return parse_jobs(Source{"request", text}, config());
}

std::string job_json(const std::string& command_arg) {
  return R"({"apiVersion":"sluice.dev/v1alpha1","kind":"Job","metadata":{"name":"j","namespace":"team-a"},"spec":{"queue":"train","podSets":[{"resources":{"nvidia.com/gpu":1}}],"command":["sh","-c",")" +
         command_arg + R"("]}})";
}

TEST(InputLimits, Utf8Validation) {
  EXPECT_TRUE(valid_utf8("plain ascii"));
  EXPECT_TRUE(
      valid_utf8("gr\xC3\xBC\xC3\x9F"
                 "e \xE2\x82\xAC \xF0\x9F\x98\x80"));
  size_t at = 0;
  EXPECT_FALSE(valid_utf8("ab\xFF", &at));
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(valid_utf8("\xE2\x82"));          // cut short
  EXPECT_FALSE(valid_utf8("\x80"));              // a lone continuation byte
}

// The finding: a command holding the byte 0xFF was accepted, and the record encoder threw
// later in the scheduling loop. Now it is a 400 naming the field, on both parse paths.
TEST(InputLimits, InvalidUtf8IsAnErrorNamingTheField) {
  auto out = submit(job_json("echo \xFF"));
  ASSERT_EQ(out.jobs.size(), 0u);
  ASSERT_FALSE(out.errors.empty());
  EXPECT_TRUE(any_contains(out.errors, {"spec.command[2]: invalid UTF-8 at byte 5"}))
      << dump(out.errors);
  EXPECT_FALSE(out.too_large);
  auto y = config_detail::parse_jobs_yaml(Source{"request", job_json("\xC3")}, config());
  EXPECT_TRUE(any_contains(y.errors, {"invalid UTF-8"})) << dump(y.errors);
  // Valid UTF-8 passes.
  auto ok = submit(job_json("echo gr\xC3\xBC\xC3\x9F"));
  EXPECT_EQ(ok.jobs.size(), 1u) << dump(ok.errors);
}

TEST(InputLimits, NulBytesAndControlCharactersInNames) {
  std::string nul = job_json("x");
  nul.replace(nul.find("\"sh\""), 4, "\"s\\u0000h\"");
  EXPECT_TRUE(any_contains(submit(nul).errors, {"NUL byte"})) << dump(submit(nul).errors);
  std::string esc = job_json("x");
  esc.replace(esc.find("\"name\":\"j\""), 10, "\"name\":\"j\\u001b[2J\"");
  auto out = submit(esc);
  EXPECT_TRUE(any_contains(out.errors, {"metadata.name: must not contain control characters"}))
      << dump(out.errors);
  // C1 controls and bidirectional overrides too (issue 41: only C0 and DEL were refused).
  for (const char* bad : {"\\u0085", "\\u009b", "\\u202e", "\\u2066", "\\u200f", "\\u061c"}) {
    std::string j = job_json("x");
    j.replace(j.find("\"name\":\"j\""), 10, std::string("\"name\":\"j") + bad + "x\"");
    auto refused = submit(j);
    EXPECT_TRUE(any_contains(refused.errors, {"must not contain control characters", "at byte 1"}))
        << bad << ": " << dump(refused.errors);
  }
  // Other non-ASCII letters stay welcome.
  std::string accents = job_json("x");
  accents.replace(accents.find("\"name\":\"j\""), 10, "\"name\":\"j\u00fc\u2013x\"");
  EXPECT_EQ(submit(accents).jobs.size(), 1u) << dump(submit(accents).errors);
}

// The finding: one anchor and 10,000 aliases (70 KB) became a 300 MB job. The expanded walk
// stops at the node budget and says so, as a size limit.
TEST(InputLimits, AliasExpansionIsBounded) {
  std::string text =
      "apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: j, namespace: team-a}\n"
      "x-big: &a [" +
      std::string(8000, 'x') + ", " + std::string(8000, 'y') +
      "]\nspec:\n  queue: train\n"
      "  podSets: [{resources: {nvidia.com/gpu: 1}}]\n  command: [";
  for (int i = 0; i < 10000; ++i) text += i ? ", *a" : "*a";
  text += "]\n";
  auto out = submit(text);
  EXPECT_TRUE(out.jobs.empty());
  EXPECT_TRUE(out.too_large);
  EXPECT_TRUE(any_contains(out.errors, {"once aliases are expanded"})) << dump(out.errors);
}

// The finding: a megabyte of `---` lines cost ~170 MB. Documents are counted before parsing.
TEST(InputLimits, TooManyDocuments) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "---\n";
  auto out = submit(text);
  EXPECT_TRUE(out.too_large);
  EXPECT_TRUE(any_contains(out.errors, {"more than 1000 YAML documents"})) << dump(out.errors);
  // 1,000 documents are fine (empty ones are skipped).
  std::string fine;
  for (int i = 0; i < 999; ++i) fine += "---\n";
  EXPECT_FALSE(submit(fine + job_json("x")).too_large);
}

TEST(InputLimits, LongStringsLongListsDeepNesting) {
  auto long_string = submit(job_json(std::string(70 * 1024, 'a')));
  EXPECT_TRUE(long_string.too_large);
  EXPECT_TRUE(any_contains(long_string.errors, {"spec.command[2]: a string of 71680 bytes"}))
      << dump(long_string.errors);

  // The finding: a 40,000-entry env took 5.9 s of CPU. Over 10,000 entries it is refused
  // before it is read; below, duplicates are found through an index (not timed here: the
  // benchmark of record is bench/parse_bench).
  std::string env = "{";
  for (int i = 0; i < 40000; ++i) env += (i ? ",\"V" : "\"V") + std::to_string(i) + "\":\"1\"";
  env += "}";
  std::string big = job_json("x");
  big.insert(big.rfind("}}"), ",\"env\":" + env);
  auto many = submit(big);
  EXPECT_TRUE(many.too_large);
  EXPECT_TRUE(any_contains(many.errors, {"spec.env: 40000 entries"})) << dump(many.errors);

  std::string deep = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: ";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  auto nested = submit(deep + "\n");
  EXPECT_TRUE(nested.too_large);
  EXPECT_TRUE(any_contains(nested.errors, {"nested more than 64 levels"})) << dump(nested.errors);
}

TEST(InputLimits, DuplicateEnvKeysInABigMapAreStillFound) {
  std::string env = "{";
  for (int i = 0; i < 5000; ++i) env += (i ? ",\"V" : "\"V") + std::to_string(i) + "\":\"1\"";
  env += ",\"V17\":\"2\"}";
  std::string text = job_json("x");
  text.insert(text.rfind("}}"), ",\"env\":" + env);
  auto out = submit(text);
  EXPECT_TRUE(any_contains(out.errors, {"spec.env.V17: duplicate key"})) << dump(out.errors);
}

// Found by tests/reliability/hostile.py (and the fuzzers, as `,"gpus":1`): on this 89-byte
// body yaml-cpp 0.7's LoadAll never returns, allocating until memory runs out
// (yaml_documents.h stops it first).
TEST(InputLimits, TextYamlCppDoesNotEndOnIsRefused) {
  const std::string body =
      R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "me": "s0", "namespace": "team-a"}, )"
      "\n";
  auto out = submit(body);
  EXPECT_TRUE(out.jobs.empty());
  EXPECT_FALSE(out.too_large);
  EXPECT_TRUE(any_contains(out.errors, {"request:1: malformed YAML: unexpected token"}))
      << dump(out.errors);
  // Configuration text takes the same pass.
  auto cfg = load_one(body);
  EXPECT_TRUE(any_contains(cfg.errors, {"malformed YAML: unexpected token"})) << dump(cfg.errors);
  // Ordinary YAML is untouched by it.
  EXPECT_EQ(config_detail::load_all_documents("a: [1, 2, {b: c}]\n---\nd: e\n",
                                              max_parser_events(submission_limits()))
                .size(),
            2u);
}

// Configuration text is checked too, with the larger configuration limits.
TEST(InputLimits, ConfigurationTextIsChecked) {
  auto out = load_one(yaml(kBase) +
                      "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: "
                      "ResourceFlavor\nmetadata: {name: \"b\xFF\"}\n");
  EXPECT_TRUE(any_contains(out.errors, {"metadata.name: invalid UTF-8"})) << dump(out.errors);
}

}  // namespace
}  // namespace input_limits_test
}  // namespace sluice
