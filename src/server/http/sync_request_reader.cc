// SAX events into proto::SyncRequest (sync_request_reader.h). A small state machine: the top
// object, one of its arrays of objects (running, exits, ...), an element's fields, the array of
// integers (gpu_utilization_pct), or an unknown key's value being skipped. Any event it does
// not expect returns false, which stops the parse and declines the body.
#include "server/http/sync_request_reader.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace sluice::server {

namespace {

using nlohmann::json;

// Where a value goes: the field's type decides which events it takes, and each conversion is
// the static_cast that nlohmann's get<T>() makes, so both paths give the same value.
struct Slot {
  enum class Kind : uint8_t { kNone, kI32, kI64, kU64, kBool, kStr } kind = Kind::kNone;
  void* at = nullptr;
};
Slot slot(int32_t& v) {
  return {Slot::Kind::kI32, &v};
}
Slot slot(int64_t& v) {
  return {Slot::Kind::kI64, &v};
}
Slot slot(uint64_t& v) {
  return {Slot::Kind::kU64, &v};
}
Slot slot(bool& v) {
  return {Slot::Kind::kBool, &v};
}
Slot slot(std::string& v) {
  return {Slot::Kind::kStr, &v};
}

using Fields = std::initializer_list<std::pair<std::string_view, Slot>>;

// The key's slot and its index among the fields (-1: not a field of this message).
std::pair<Slot, int> pick(std::string_view key, Fields fields) {
  int i = 0;
  for (const auto& [name, s] : fields) {
    if (name == key) return {s, i};
    ++i;
  }
  return {Slot{}, -1};
}

// Each element's fields, in the order of protocol.h's NLOHMANN_DEFINE_TYPE lists.
std::pair<Slot, int> field(proto::RunningPod& e, std::string_view k) {
  return pick(k, {{"job", slot(e.job)},
                  {"pod", slot(e.pod)},
                  {"pid", slot(e.pid)},
                  {"stopping", slot(e.stopping)},
                  {"run", slot(e.run)}});
}
std::pair<Slot, int> field(proto::PodExit& e, std::string_view k) {
  return pick(k, {{"job", slot(e.job)},
                  {"pod", slot(e.pod)},
                  {"exit_code", slot(e.exit_code)},
                  {"signal", slot(e.signal)},
                  {"reason", slot(e.reason)},
                  {"message", slot(e.message)},
                  {"at_unix_ns", slot(e.at_unix_ns)},
                  {"run", slot(e.run)}});
}
std::pair<Slot, int> field(proto::CheckpointReport& e, std::string_view k) {
  return pick(k, {{"job", slot(e.job)},
                  {"pod", slot(e.pod)},
                  {"at_unix_ns", slot(e.at_unix_ns)},
                  {"run", slot(e.run)}});
}
std::pair<Slot, int> field(proto::StartedPod& e, std::string_view k) {
  return pick(k, {{"job", slot(e.job)}, {"pod", slot(e.pod)}, {"run", slot(e.run)}});
}
std::pair<Slot, int> field(proto::PodGpuUse& e, std::string_view k) {
  return pick(k, {{"job", slot(e.job)},
                  {"pod", slot(e.pod)},
                  {"run", slot(e.run)},
                  {"samples", slot(e.samples)},
                  {"peak_mib", slot(e.peak_mib)},
                  {"mib_sum", slot(e.mib_sum)},
                  {"util_sum", slot(e.util_sum)}});
}

template <class N>
bool put_number(Slot s, N v) {
  switch (s.kind) {
    case Slot::Kind::kI32:
      *static_cast<int32_t*>(s.at) = static_cast<int32_t>(v);
      return true;
    case Slot::Kind::kI64:
      *static_cast<int64_t*>(s.at) = static_cast<int64_t>(v);
      return true;
    case Slot::Kind::kU64:
      *static_cast<uint64_t*>(s.at) = static_cast<uint64_t>(v);
      return true;
    default:
      return false;  // a number for a string or a boolean: get<T>() throws
  }
}

class Reader {
 public:
  explicit Reader(proto::SyncRequest& out) : out_(out) {}

  bool done() const { return at_ == At::kEnd; }

  // --- nlohmann's SAX interface ---
  bool null() { return scalar_skipped(); }
  bool boolean(bool v) {
    if (scalar_skipped()) return true;
    if (at_ != At::kElemValue || value_.kind != Slot::Kind::kBool) return false;
    *static_cast<bool*>(value_.at) = v;
    at_ = At::kElem;
    return true;
  }
  bool number_integer(json::number_integer_t v) { return number(v); }
  bool number_unsigned(json::number_unsigned_t v) { return number(v); }
  bool number_float(json::number_float_t, const std::string&) { return false; }
  bool string(std::string& v) {
    if (scalar_skipped()) return true;
    if (at_ == At::kTopValue && top_ == kAgentId) {
      out_.agent_id = std::move(v);
      at_ = At::kTop;
      return true;
    }
    if (at_ != At::kElemValue || value_.kind != Slot::Kind::kStr) return false;
    *static_cast<std::string*>(value_.at) = std::move(v);
    at_ = At::kElem;
    return true;
  }
  bool binary(json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    if (at_ == At::kSkip) return ++skip_depth_, true;
    if (at_ == At::kStart) return at_ = At::kTop, true;
    if (at_ != At::kList) return false;
    at_ = At::kElem;
    elem_seen_ = 0;
    switch (top_) {
      case kRunning:
        elem_ = &out_.running.emplace_back();
        break;
      case kExits:
        elem_ = &out_.exits.emplace_back();
        break;
      case kCheckpoints:
        elem_ = &out_.checkpoints.emplace_back();
        break;
      case kStarted:
        elem_ = &out_.started.emplace_back();
        break;
      case kGpuUse:
        elem_ = &out_.gpu_use.emplace_back();
        break;
      default:
        return false;
    }
    return true;
  }
  bool key(std::string& k) {
    if (at_ == At::kSkip) return true;
    if (at_ == At::kTop) return top_key(k);
    if (at_ == At::kElem) return elem_key(k);
    return false;
  }
  bool end_object() {
    if (at_ == At::kSkip) return end_skipped();
    if (at_ == At::kTop) return at_ = At::kEnd, true;
    if (at_ == At::kElem) return at_ = At::kList, true;
    return false;
  }
  bool start_array(std::size_t) {
    if (at_ == At::kSkip) return ++skip_depth_, true;
    if (at_ != At::kTopValue || top_ == kAgentId || top_ == kWaitMs) return false;
    at_ = top_ == kGpuUtil ? At::kInts : At::kList;
    return true;
  }
  bool end_array() {
    if (at_ == At::kSkip) return end_skipped();
    if (at_ != At::kList && at_ != At::kInts) return false;
    at_ = At::kTop;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  // kTop: in the top object, before a key; kTopValue: after a top key; kList: in an array of
  // elements; kElem: in an element, before a key; kElemValue: after its key; kInts: in
  // gpu_utilization_pct; kSkip: inside an unknown key's value (skip_depth_ levels deep).
  enum class At { kStart, kTop, kTopValue, kList, kElem, kElemValue, kInts, kSkip, kEnd };
  enum Top { kAgentId, kRunning, kExits, kCheckpoints, kStarted, kWaitMs, kGpuUtil, kGpuUse };

  bool top_key(std::string_view k) {
    static constexpr std::pair<std::string_view, Top> kKeys[] = {{"agent_id", kAgentId},
                                                                 {"running", kRunning},
                                                                 {"exits", kExits},
                                                                 {"checkpoints", kCheckpoints},
                                                                 {"started", kStarted},
                                                                 {"wait_ms", kWaitMs},
                                                                 {"gpu_utilization_pct", kGpuUtil},
                                                                 {"gpu_use", kGpuUse}};
    for (const auto& [name, top] : kKeys) {
      if (name != k) continue;
      const uint32_t bit = 1u << top;
      if (top_seen_ & bit) return false;  // a repeated key: the old path keeps the last
      top_seen_ |= bit;
      top_ = top;
      at_ = At::kTopValue;
      return true;
    }
    return skip_from(At::kTop);
  }

  bool elem_key(std::string_view k) {
    std::pair<Slot, int> f;
    switch (top_) {
      case kRunning:
        f = field(*static_cast<proto::RunningPod*>(elem_), k);
        break;
      case kExits:
        f = field(*static_cast<proto::PodExit*>(elem_), k);
        break;
      case kCheckpoints:
        f = field(*static_cast<proto::CheckpointReport*>(elem_), k);
        break;
      case kStarted:
        f = field(*static_cast<proto::StartedPod*>(elem_), k);
        break;
      case kGpuUse:
        f = field(*static_cast<proto::PodGpuUse*>(elem_), k);
        break;
      default:
        return false;
    }
    if (f.second < 0) return skip_from(At::kElem);
    const uint32_t bit = 1u << f.second;
    if (elem_seen_ & bit) return false;
    elem_seen_ |= bit;
    value_ = f.first;
    at_ = At::kElemValue;
    return true;
  }

  template <class N>
  bool number(N v) {
    if (scalar_skipped()) return true;
    switch (at_) {
      case At::kTopValue:
        if (top_ != kWaitMs) return false;
        out_.wait_ms = static_cast<int64_t>(v);
        at_ = At::kTop;
        return true;
      case At::kInts:
        out_.gpu_utilization_pct.push_back(static_cast<int32_t>(v));
        return true;
      case At::kElemValue:
        if (!put_number(value_, v)) return false;
        at_ = At::kElem;
        return true;
      default:
        return false;
    }
  }

  // An unknown key's value: skipped, whatever it holds but a float (and the key's own position
  // is where the reader goes back to).
  bool skip_from(At back) {
    at_ = At::kSkip;
    skip_back_ = back;
    skip_depth_ = 0;
    return true;
  }
  // A scalar event: true when it was (part of) a skipped value.
  bool scalar_skipped() {
    if (at_ != At::kSkip) return false;
    if (skip_depth_ == 0) at_ = skip_back_;
    return true;
  }
  bool end_skipped() {
    if (--skip_depth_ == 0) at_ = skip_back_;
    return true;
  }

  proto::SyncRequest& out_;
  At at_ = At::kStart;
  Top top_ = kAgentId;
  uint32_t top_seen_ = 0;
  void* elem_ = nullptr;  // the element being read, of the type top_ names
  uint32_t elem_seen_ = 0;
  Slot value_;  // where the element's next value goes
  At skip_back_ = At::kTop;
  int skip_depth_ = 0;
};

// The JSON an agent writes, scanned without nlohmann's lexer (whose token buffer and strtoull
// were two thirds of the SAX path's time): events for `sax` from the plainest JSON only, every
// other text declined (false) so that the document path reads it. A string must be printable
// ASCII without escapes (its value is then its bytes); a number must be an integer that fits
// its nlohmann type (int64 when negative, else uint64: what nlohmann's lexer gives); nesting
// stops at kMaxDepth. Whatever it accepts, nlohmann's parser accepts as the same events.
class PlainJson {
 public:
  PlainJson(std::string_view text, Reader& sax)
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
    if (!sax_.start_object(static_cast<std::size_t>(-1))) return false;
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
    if (!sax_.start_array(static_cast<std::size_t>(-1))) return false;
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
    const bool zero = *p_ == '0';
    uint64_t v = 0;
    const char* first = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      const auto d = static_cast<uint64_t>(*p_ - '0');
      if (v > (UINT64_MAX - d) / 10) return false;  // nlohmann's lexer makes it a float
      v = v * 10 + d;
      ++p_;
    }
    if (zero && p_ - first > 1) return false;                                 // a leading zero
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;  // a float
    if (!negative) return sax_.number_unsigned(v);
    if (v > uint64_t{1} << 63) return false;
    return sax_.number_integer(static_cast<int64_t>(0 - v));
  }

  const char* p_;
  const char* end_;
  Reader& sax_;
};

}  // namespace

bool read_sync_request_fast(std::string_view body, proto::SyncRequest* out) {
  proto::SyncRequest req;
  Reader reader(req);
  if (!PlainJson(body, reader).scan() || !reader.done()) return false;
  *out = std::move(req);
  return true;
}

proto::SyncRequest parse_sync_request(std::string_view body) {
  proto::SyncRequest req;
  if (!read_sync_request_fast(body, &req)) req = json::parse(body).get<proto::SyncRequest>();
  return req;
}

}  // namespace sluice::server
