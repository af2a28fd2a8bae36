#include "server/http/kube_protobuf.h"

namespace sluice::server::kube {

namespace {

using nlohmann::json;

// One message's bytes, read field by field (protobuf's wire format).
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool done() const { return s_.empty(); }
  bool varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (s_.empty()) return false;
      const auto b = static_cast<uint8_t>(s_.front());
      s_.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;  // longer than 10 bytes
  }
  bool bytes(std::string_view* out) {
    uint64_t n = 0;
    if (!varint(&n) || n > s_.size()) return false;
    *out = s_.substr(0, n);
    s_.remove_prefix(n);
    return true;
  }
  bool skip(size_t n) {
    if (n > s_.size()) return false;
    s_.remove_prefix(n);
    return true;
  }

 private:
  std::string_view s_;
};

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
      return false;
    i += n;
  }
  return true;
}

// The fields of `schema` in message `m`; false (with *why) when malformed.
bool read_message(std::string_view m, const ProtoSchema& schema, json* out, std::string* why) {
  *out = json::object();
  Reader r(m);
  while (!r.done()) {
    uint64_t key = 0;
    if (!r.varint(&key)) return *why = "a field's key is cut short", false;
    const auto wire = static_cast<uint32_t>(key & 7);
    const uint64_t number = key >> 3;
    const ProtoField* f = nullptr;
    for (const auto& x : schema)
      if (x.number == number) f = &x;
    uint64_t v = 0;
    std::string_view b;
    switch (wire) {
      case 0:
        if (!r.varint(&v)) return *why = "a varint is cut short", false;
        break;
      case 1:
        if (!r.skip(8)) return *why = "a fixed64 is cut short", false;
        break;
      case 2:
        if (!r.bytes(&b)) return *why = "a length-delimited field is cut short", false;
        break;
      case 5:
        if (!r.skip(4)) return *why = "a fixed32 is cut short", false;
        break;
      default:
        return *why = "wire type " + std::to_string(wire) + " is not read", false;
    }
    if (!f) continue;  // a field sluice does not read
    using T = ProtoField::Type;
    const bool want_bytes =
        f->type == T::kString || f->type == T::kStrings || f->type == T::kMessage;
    if (want_bytes != (wire == 2) || (!want_bytes && wire != 0))
      return *why = "field " + f->name + " has the wrong wire type", false;
    switch (f->type) {
      case T::kString:
      case T::kStrings:
        if (!valid_utf8(b)) return *why = "field " + f->name + " is not UTF-8", false;
        if (f->type == T::kString)
          (*out)[f->name] = std::string(b);
        else
          (*out)[f->name].push_back(std::string(b));
        break;
      case T::kInt64:
        (*out)[f->name] = static_cast<int64_t>(v);
        break;
      case T::kBool:
        (*out)[f->name] = v != 0;
        break;
      case T::kMessage: {
        json sub;
        if (!read_message(b, *f->message, &sub, why)) return false;
        (*out)[f->name] = std::move(sub);
        break;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<json> protobuf_object(std::string_view body, const ProtoSchema& schema,
                                    std::string* why) {
  static const ProtoSchema type_meta = {{1, "apiVersion"}, {2, "kind"}};
  static const ProtoSchema unknown = {{1, "typeMeta", ProtoField::Type::kMessage, &type_meta},
                                      {3, "contentEncoding"},
                                      {4, "contentType"}};
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (!body.starts_with(kMagic)) {
    *why = "not Kubernetes' protobuf encoding (no k8s\\0 prefix)";
    return std::nullopt;
  }
  body.remove_prefix(kMagic.size());
  json envelope;
  if (!read_message(body, unknown, &envelope, why)) return std::nullopt;
  if (!envelope.value("contentEncoding", "").empty()) {
    *why = "content encoding " + envelope["contentEncoding"].get<std::string>() + " is not read";
    return std::nullopt;
  }
  // raw (field 2): read again, as bytes, and then as the object.
  std::string_view raw;
  Reader r(body);
  while (!r.done()) {
    uint64_t key = 0, v = 0;
    std::string_view b;
    if (!r.varint(&key)) return std::nullopt;
    const auto wire = key & 7;
    const bool ok = wire == 0   ? r.varint(&v)
                    : wire == 1 ? r.skip(8)
                    : wire == 2 ? r.bytes(&b)
                    : wire == 5 ? r.skip(4)
                                : false;
    if (!ok) return std::nullopt;  // read_message accepted it: cannot happen
    if (key >> 3 == 2 && wire == 2) raw = b;
  }
  json out;
  if (!read_message(raw, schema, &out, why)) return std::nullopt;
  const json& tm = envelope.value("typeMeta", json::object());
  if (tm.contains("apiVersion")) out["apiVersion"] = tm["apiVersion"];
  if (tm.contains("kind")) out["kind"] = tm["kind"];
  return out;
}

}  // namespace sluice::server::kube
