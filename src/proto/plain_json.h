#pragma once
// Reading the JSON the agent protocol's own ends write, straight into its structs: no nlohmann
// document tree (json::parse + get<T>() builds one and walks it twice, once for
// require_integers and once for the fields), and no nlohmann lexer (its token buffer and
// strtoull were two thirds of a SAX reader's time). The agents' syncs are the server's most
// frequent request and their replies the agents' (docs/benchmarks.md, thirty-fifth session).
//
// It reads only the plainest JSON: strings of printable ASCII without escapes, integers that
// fit nlohmann's own integer types, the types each field is declared with. It declines every
// other text (false): a float, null, an escape or a non-ASCII byte, a repeated key, a wrong
// type, text that does not parse. Callers then take the document path (parse_message), so a
// body gets the same value or the same error text either way; unknown keys are skipped, as
// get<T>() ignores them (a float inside one is declined: require_integers rejects it).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::proto::plain {

// How a field's JSON is read, and into what.
enum class Kind : uint8_t { kI32, kI64, kU64, kBool, kStr, kStrList, kI32List, kStrMap, kObjList };

struct ObjType;

struct Slot {
  Kind kind = Kind::kI32;
  void* at = nullptr;
  const ObjType* elem = nullptr;  // kObjList: its elements' type
};

// One struct of the protocol: its fields by key (the slot and the field's index, < 32; -1:
// not a field), and, for vectors of it, how to append a default element.
struct ObjType {
  int (*field)(void* obj, std::string_view key, Slot* out);
  void* (*emplace)(void* vec);
};

inline Slot slot(int32_t& v) {
  return {Kind::kI32, &v};
}
inline Slot slot(int64_t& v) {
  return {Kind::kI64, &v};
}
inline Slot slot(uint64_t& v) {
  return {Kind::kU64, &v};
}
inline Slot slot(bool& v) {
  return {Kind::kBool, &v};
}
inline Slot slot(std::string& v) {
  return {Kind::kStr, &v};
}
inline Slot slot(std::vector<std::string>& v) {
  return {Kind::kStrList, &v};
}
inline Slot slot(std::vector<int32_t>& v) {
  return {Kind::kI32List, &v};
}
inline Slot slot(std::map<std::string, std::string>& v) {
  return {Kind::kStrMap, &v};
}
template <class T>
Slot slot(std::vector<T>& v, const ObjType& elem) {
  return {Kind::kObjList, &v, &elem};
}

// The slot of `key` among `fields` (in their declared order) and its index.
inline int pick(std::string_view key,
                std::initializer_list<std::pair<std::string_view, Slot>> fields, Slot* out) {
  int i = 0;
  for (const auto& [name, s] : fields) {
    if (name == key) {
      *out = s;
      return i;
    }
    ++i;
  }
  return -1;
}

template <class T>
void* emplace_into(void* vec) {
  return &static_cast<std::vector<T>*>(vec)->emplace_back();
}

// SAX events into a struct of the given type. Every conversion is the static_cast that
// nlohmann's get<T>() makes, so both paths give the same value.
class Reader {
 public:
  Reader(const ObjType& root, void* out) : root_(root), out_(out) {}
  bool done() const { return done_; }

  bool null() { return skipped(); }
  bool boolean(bool v) {
    if (skipped()) return true;
    if (!pending_ || value_.kind != Kind::kBool) return false;
    *static_cast<bool*>(value_.at) = v;
    pending_ = false;
    return true;
  }
  bool number_integer(int64_t v) { return number(v); }
  bool number_unsigned(uint64_t v) { return number(v); }
  bool string(std::string& v) {
    if (skipped()) return true;
    if (pending_ && value_.kind == Kind::kStr) {
      *static_cast<std::string*>(value_.at) = std::move(v);
      pending_ = false;
      return true;
    }
    if (pending_ || stack_.empty()) return false;
    Frame& f = stack_.back();
    if (f.kind == Kind::kStrList) {
      static_cast<std::vector<std::string>*>(f.at)->push_back(std::move(v));
      return true;
    }
    if (f.kind == Kind::kStrMap && f.map_key) {
      (*static_cast<std::map<std::string, std::string>*>(f.at))[std::move(key_)] = std::move(v);
      f.map_key = false;
      return true;
    }
    return false;
  }
  bool start_object() {
    if (skipping_) return ++skip_depth_, true;
    if (done_) return false;
    if (stack_.empty()) return started_ ? false : (started_ = true, push_object(root_, out_));
    if (pending_) {
      if (value_.kind != Kind::kStrMap) return false;
      pending_ = false;
      stack_.push_back({Kind::kStrMap, value_.at});
      return true;
    }
    const Frame& f = stack_.back();
    if (f.type != nullptr || f.kind != Kind::kObjList) return false;
    return push_object(*f.elem, f.elem->emplace(f.at));
  }
  bool key(std::string& k) {
    if (skipping_) return true;
    if (pending_ || stack_.empty()) return false;
    Frame& f = stack_.back();
    if (f.kind == Kind::kStrMap) {
      if (f.map_key) return false;
      key_ = std::move(k);
      f.map_key = true;
      return true;
    }
    if (f.type == nullptr) return false;  // a list: no keys
    Slot s;
    const int i = f.type->field(f.at, k, &s);
    if (i < 0) {  // unknown: its value is skipped
      skipping_ = true;
      skip_depth_ = 0;
      return true;
    }
    if (f.seen & (1u << i)) return false;  // a repeated key: the document path keeps the last
    f.seen |= 1u << i;
    value_ = s;
    pending_ = true;
    return true;
  }
  bool end_object() {
    if (skipping_) return end_skipped();
    if (pending_ || stack_.empty()) return false;
    const Frame& f = stack_.back();
    if (f.kind == Kind::kStrMap ? f.map_key : f.type == nullptr) return false;
    stack_.pop_back();
    if (stack_.empty()) done_ = true;
    return true;
  }
  bool start_array() {
    if (skipping_) return ++skip_depth_, true;
    if (!pending_) return false;
    switch (value_.kind) {
      case Kind::kStrList:
      case Kind::kI32List:
      case Kind::kObjList:
        stack_.push_back({value_.kind, value_.at, nullptr, value_.elem});
        break;
      default:
        return false;
    }
    pending_ = false;
    return true;
  }
  bool end_array() {
    if (skipping_) return end_skipped();
    if (pending_ || stack_.empty() || stack_.back().type != nullptr ||
        stack_.back().kind == Kind::kStrMap)
      return false;
    stack_.pop_back();
    return true;
  }

 private:
  // An object being read (type set), or a list or map being filled (kind, type null).
  struct Frame {
    Kind kind;
    void* at;
    const ObjType* type = nullptr;
    const ObjType* elem = nullptr;  // kObjList
    uint32_t seen = 0;              // an object's fields read so far
    bool map_key = false;           // kStrMap: a key waits for its value (in key_)
  };

  bool push_object(const ObjType& type, void* at) {
    if (stack_.size() >= 16) return false;
    stack_.push_back({Kind::kObjList, at, &type});
    return true;
  }

  template <class N>
  bool number(N v) {
    if (skipped()) return true;
    if (!pending_) {
      if (stack_.empty() || stack_.back().kind != Kind::kI32List || stack_.back().type)
        return false;
      static_cast<std::vector<int32_t>*>(stack_.back().at)->push_back(static_cast<int32_t>(v));
      return true;
    }
    switch (value_.kind) {
      case Kind::kI32:
        *static_cast<int32_t*>(value_.at) = static_cast<int32_t>(v);
        break;
      case Kind::kI64:
        *static_cast<int64_t*>(value_.at) = static_cast<int64_t>(v);
        break;
      case Kind::kU64:
        *static_cast<uint64_t*>(value_.at) = static_cast<uint64_t>(v);
        break;
      default:
        return false;  // a number for a string, a boolean or a list: get<T>() throws
    }
    pending_ = false;
    return true;
  }

  // A scalar event: true when it was (part of) a skipped value.
  bool skipped() {
    if (!skipping_) return false;
    if (skip_depth_ == 0) skipping_ = false;
    return true;
  }
  bool end_skipped() {
    if (--skip_depth_ == 0) skipping_ = false;
    return true;
  }

  const ObjType& root_;
  void* out_;
  std::vector<Frame> stack_;
  Slot value_;            // where the value after a key goes
  bool pending_ = false;  // a key was read and its value has not come yet
  std::string key_;       // a map's key, until its value comes
  bool skipping_ = false;
  int skip_depth_ = 0;
  bool started_ = false, done_ = false;
};

// The plainest JSON, scanned into a Reader's events; false for any other text (see above):
// whatever it accepts, nlohmann's parser accepts as the same events.
class Scanner {
 public:
  Scanner(std::string_view text, Reader& sax)
      : p_(text.data()), end_(p_ + text.size()), sax_(sax) {}

  bool scan() {
    space();
    if (!value(0)) return false;
    space();
    return p_ == end_;
  }

 private:
  static constexpr int kMaxDepth = 32;

  void space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool eat(char c) {
    space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    space();
    return true;
  }
  bool peek(char c) const { return p_ < end_ && *p_ == c; }

  bool value(int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return depth < kMaxDepth && object(depth + 1);
      case '[':
        return depth < kMaxDepth && array(depth + 1);
      case '"': {
        std::string s;
        return string(s) && sax_.string(s);
      }
      case 't':
        return literal("true") && sax_.boolean(true);
      case 'f':
        return literal("false") && sax_.boolean(false);
      case 'n':
        return literal("null") && sax_.null();
      default:
        return number();
    }
  }

  bool object(int depth) {
    ++p_;
    if (!sax_.start_object()) return false;
    space();
    if (peek('}')) return ++p_, sax_.end_object();
    do {
      std::string k;
      if (!peek('"') || !string(k) || !sax_.key(k) || !eat(':') || !value(depth)) return false;
    } while (eat(','));
    return peek('}') && (++p_, sax_.end_object());
  }

  bool array(int depth) {
    ++p_;
    if (!sax_.start_array()) return false;
    space();
    if (peek(']')) return ++p_, sax_.end_array();
    do {
      if (!value(depth)) return false;
    } while (eat(','));
    return peek(']') && (++p_, sax_.end_array());
  }

  bool string(std::string& out) {
    const char* start = ++p_;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c < 0x20 || c > 0x7e || c == '\\') return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out.assign(start, p_);
    ++p_;
    return true;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  bool number() {
    const bool negative = peek('-');
    if (negative) ++p_;
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    const char* first = p_;
    uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      const auto d = static_cast<uint64_t>(*p_ - '0');
      if (v > (UINT64_MAX - d) / 10) return false;  // nlohmann's lexer makes it a float
      v = v * 10 + d;
      ++p_;
    }
    if (*first == '0' && p_ - first > 1) return false;                        // a leading zero
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;  // a float
    if (!negative) return sax_.number_unsigned(v);
    if (v > uint64_t{1} << 63) return false;
    return sax_.number_integer(static_cast<int64_t>(0 - v));
  }

  const char* p_;
  const char* end_;
  Reader& sax_;
};

// `text` read into *out (a T of `type`); false, out untouched, when it is not the plainest JSON.
template <class T>
bool read(std::string_view text, const ObjType& type, T* out) {
  T v;
  Reader reader(type, &v);
  if (!Scanner(text, reader).scan() || !reader.done()) return false;
  *out = std::move(v);
  return true;
}

}  // namespace sluice::proto::plain
