// JSON job submissions to YAML::Node documents without yaml-cpp's parser: nlohmann's SAX events
// build the node tree in place. What yaml-cpp would give for the same text, checked node by node
// against YAML::LoadAll in tests/unit/config/json_fast_path_test.cc:
//   - JSON strings are double-quoted scalars: the decoded text, tag "!";
//   - numbers, true and false are plain scalars: the text as written, tag "?";
//   - null is a null node with no tag; objects and arrays are flow maps and sequences, tag "?".
#include "config/json_documents.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <string>

namespace sluice::config_detail {

namespace {

using json = nlohmann::json;

// yaml-cpp's own bound is deeper; real job documents nest about six levels.
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxFastMapEntries = 256;  // a larger map goes the YAML path (key())
const std::string kPlainTag = "?";          // plain scalars and flow collections
const std::string kQuotedTag = "!";         // quoted scalars (keys and values)

// nlohmann SAX handler that builds one document. Every callback returns false to stop the
// parse when the text is not what the fast path takes (the caller then uses yaml-cpp).
class SaxToYaml {
 public:
  bool null() { return value(nullptr, ""); }
  bool boolean(bool v) { return value(v ? "true" : "false", kPlainTag); }
  // JSON has one spelling of an integer (but `-0`, see yaml_reads_alike): to_string gives it.
  bool number_integer(json::number_integer_t v) { return value(std::to_string(v), kPlainTag); }
  bool number_unsigned(json::number_unsigned_t v) { return value(std::to_string(v), kPlainTag); }
  // `text` is the number as written ("1.50", "1e3"): what a YAML plain scalar holds.
  bool number_float(json::number_float_t, const std::string& text) {
    return value(text, kPlainTag);
  }
  bool string(std::string& s) { return value(s, kQuotedTag); }
  bool binary(json::binary_t&) { return false; }
  bool start_object(size_t) { return open(true); }
  bool key(std::string& k);
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(false); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  const YAML::Node& root() const { return root_; }

 private:
  struct Frame {
    YAML::Node node;
    bool map = false;
    size_t size = 0;
    std::vector<std::string> keys;  // maps: seen so far (duplicates)
    YAML::Node key;                 // maps: of the next value
  };

  // A node of the document's own pool that is in no tree: node_pool_'s next element. Creating
  // nodes there, and not as fresh YAML::Nodes, spares yaml-cpp a pool and a merge per node.
  YAML::Node new_node() { return node_pool_[pool_size_++]; }

  // The node the next value goes into (*out: a handle bound to nothing yet).
  bool slot(YAML::Node* out) {
    if (depth_ == 0) return false;  // only an object is a document
    Frame& f = frames_[depth_ - 1];
    *out = f.map ? f.node[f.key] : f.node[f.size];  // by the key node itself: no lookup by text
    ++f.size;
    return true;
  }

  // text nullptr: a null node.
  bool value(const char* text, const std::string& tag) {
    YAML::Node n;
    if (!slot(&n)) return false;
    if (text) n = text;
    n.SetTag(tag);  // also defines a null node
    return true;
  }
  bool value(const std::string& text, const std::string& tag) {
    YAML::Node n;
    if (!slot(&n)) return false;
    n = text;
    n.SetTag(tag);
    return true;
  }

  bool open(bool map);
  bool close();

  YAML::Node node_pool_;
  size_t pool_size_ = 0;
  YAML::Node root_;
  bool root_done_ = false;
  std::vector<Frame> frames_;  // [0, depth_) in use; kept for their keys' capacity
  size_t depth_ = 0;
};

// A key given twice fails: YAML keeps both entries and the readers report it with its line.
bool SaxToYaml::key(std::string& k) {
  Frame& f = frames_[depth_ - 1];
  // Both the duplicate check and yaml-cpp's insertion by key node are linear in the map's
  // size: a big map (a 40,000-entry env) goes the YAML path, whose builder is not.
  if (f.keys.size() >= kMaxFastMapEntries) return false;
  for (const std::string& seen : f.keys)
    if (seen == k) return false;
  f.keys.push_back(k);
  f.key.reset(new_node());  // reset: assigning would rebind the previous key's data
  f.key = k;
  f.key.SetTag(kQuotedTag);
  return true;
}

bool SaxToYaml::open(bool map) {
  if (depth_ >= kMaxDepth) return false;
  YAML::Node n;
  if (depth_ == 0) {
    if (!map || root_done_) return false;
    root_done_ = true;
    n = new_node();
    root_.reset(n);
  } else if (!slot(&n)) {
    return false;
  }
  // A defined null node until its first entry makes it a map or a sequence.
  n.SetTag(kPlainTag);
  n.SetStyle(YAML::EmitterStyle::Flow);
  if (frames_.size() == depth_) frames_.emplace_back();
  Frame& f = frames_[depth_++];
  f.node.reset(n);
  f.map = map;
  f.size = 0;
  f.keys.clear();
  return true;
}

bool SaxToYaml::close() {
  Frame& f = frames_[--depth_];
  if (f.size == 0) {  // `{}` or `[]`: still a null node. Rare: a pool of its own is fine.
    f.node = YAML::Node(f.map ? YAML::NodeType::Map : YAML::NodeType::Sequence);
    f.node.SetTag(kPlainTag);
    f.node.SetStyle(YAML::EmitterStyle::Flow);
  }
  return true;
}

// False when yaml-cpp would read this (JSON) text differently or reject it; a scan over the
// raw text, as the SAX events no longer show how a token was written:
//   - tabs and carriage returns (YAML's rules for them differ from JSON's);
//   - `\uD800`..`\uDFFF` escapes: JSON's surrogate pairs, which yaml-cpp rejects;
//   - a key whose colon is on a later line, or more than ~1,000 bytes after the key's opening
//     quote: YAML's implicit keys stop there ("end of map flow not found");
//   - the number `-0`, which YAML keeps as the text "-0" and JSON reads as 0.
bool yaml_reads_alike(std::string_view text) {
  constexpr size_t kMaxKeySpan = 1000;  // yaml-cpp: 1,024 characters
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '\t' || c == '\r') return false;
    if (c == '-' && i + 1 < n && text[i + 1] == '0' &&
        (i + 2 == n || std::strchr("0123456789.eE", text[i + 2]) == nullptr || text[i + 2] == '\0'))
      return false;
    if (c != '"') continue;
    // A string: to its closing quote.
    const size_t open = i;
    for (++i; i < n && text[i] != '"'; ++i) {
      if (text[i] != '\\') continue;
      if (i + 3 < n && text[i + 1] == 'u' && (text[i + 2] == 'd' || text[i + 2] == 'D') &&
          std::strchr("89abcdefABCDEF", text[i + 3]) != nullptr && text[i + 3] != '\0')
        return false;
      ++i;  // the escaped character
    }
    // A key: the colon after it.
    size_t j = i + 1;
    bool newline = false;
    for (; j < n && (text[j] == ' ' || text[j] == '\n'); ++j) newline = newline || text[j] == '\n';
    if (j < n && text[j] == ':' && (newline || j - open > kMaxKeySpan)) return false;
  }
  return true;
}

// Start of the next line at or after `from` that is exactly `---`; npos when none.
size_t find_separator(std::string_view text, size_t from) {
  size_t line = from;
  while (line < text.size()) {
    size_t nl = text.find('\n', line);
    size_t len = (nl == std::string_view::npos ? text.size() : nl) - line;
    if (len == 3 && text.compare(line, 3, "---") == 0) return line;
    if (nl == std::string_view::npos) break;
    line = nl + 1;
  }
  return std::string_view::npos;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \n") == std::string_view::npos;
}

std::optional<YAML::Node> parse_object(std::string_view text) {
  SaxToYaml sax;
  if (!json::sax_parse(text.begin(), text.end(), &sax)) return std::nullopt;
  return sax.root();
}

}  // namespace

bool for_each_json_document(std::string_view text,
                            const std::function<bool(const YAML::Node&)>& each) {
  // 1. Nothing yaml-cpp reads differently (and no byte-order mark).
  if (!text.empty() && static_cast<unsigned char>(text[0]) == 0xEF) return false;
  if (!yaml_reads_alike(text)) return false;
  // 2. One object per document; documents end at `---` lines. A blank document is what YAML
  // reads as null, which the readers skip: it is left out here.
  size_t count = 0;
  try {
    for (size_t start = 0; start <= text.size();) {
      size_t end = find_separator(text, start);
      std::string_view doc =
          text.substr(start, (end == std::string_view::npos ? text.size() : end) - start);
      if (!blank(doc)) {
        auto node = parse_object(doc);
        if (!node || !each(*node)) return false;
        ++count;
      }
      if (end == std::string_view::npos) break;
      start = end + 4;  // past "---\n" (or past the end)
    }
  } catch (const std::exception&) {
    return false;
  }
  return count > 0;
}

std::optional<std::vector<YAML::Node>> json_documents(std::string_view text) {
  std::vector<YAML::Node> docs;
  if (!for_each_json_document(text, [&](const YAML::Node& doc) {
        docs.push_back(doc);
        return true;
      }))
    return std::nullopt;
  return docs;
}

}  // namespace sluice::config_detail
