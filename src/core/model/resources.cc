#include "core/model/resources.h"

#include <cstdlib>
#include <limits>

namespace sluice {

std::optional<ResourceId> ResourceCatalog::intern(std::string_view name) {
  if (auto id = find(name)) return id;
  if (size() >= kMaxResources) return std::nullopt;
  names_.emplace_back(name);
  return static_cast<ResourceId>(names_.size() - 1);
}

std::optional<ResourceId> ResourceCatalog::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<ResourceId>(i);
  return std::nullopt;
}

namespace {

// Multiplies with overflow detection.
bool mul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
bool add(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

}  // namespace

std::optional<int64_t> parse_quantity_milli(std::string_view s) {
  // Grammar (Kubernetes resource.Quantity, subset): [+]digits[.digits][suffix], suffix one of
  // m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or e<int> / E<int>. Negative values are returned
  // as negative so the caller can say "must not be negative" rather than "not a quantity".
  if (s.empty()) return std::nullopt;
  bool negative = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
  }
  int64_t int_part = 0;
  int64_t frac = 0, frac_scale = 1;  // fractional digits kept exactly (up to 9)
  size_t digits = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits)
    if (!mul(int_part, 10, &int_part) || !add(int_part, s[i] - '0', &int_part)) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      if (frac_scale < 1'000'000'000) {
        frac = frac * 10 + (s[i] - '0');
        frac_scale *= 10;
      }
    }
  }
  if (digits == 0) return std::nullopt;
  std::string_view suffix = s.substr(i);
  // value = (int_part + frac/frac_scale) * num / den, in milli-units.
  int64_t num = 1000, den = 1;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    num = 1;
  } else if (suffix == "k") {
    num = 1000LL * 1000;
  } else if (suffix == "M") {
    num = 1000LL * 1000'000;
  } else if (suffix == "G") {
    num = 1000LL * 1000'000'000;
  } else if (suffix == "T") {
    num = 1000LL * 1000'000'000'000;
  } else if (suffix == "P") {
    num = 1000LL * 1000'000'000'000'000;
  } else if (suffix == "Ki") {
    num = 1000LL << 10;
  } else if (suffix == "Mi") {
    num = 1000LL << 20;
  } else if (suffix == "Gi") {
    num = 1000LL << 30;
  } else if (suffix == "Ti") {
    num = 1000LL << 40;
  } else if (suffix == "Pi") {
    num = 1000LL << 50;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string exp(suffix.substr(1));
    if (exp.empty() || exp.size() > 3) return std::nullopt;
    char* end = nullptr;
    long e = std::strtol(exp.c_str(), &end, 10);
    if (*end != '\0' || e < -3 || e > 15) return std::nullopt;
    for (long k = 0; k < e; ++k)
      if (!mul(num, 10, &num)) return std::nullopt;
    for (long k = 0; k > e; --k) den *= 10;
  } else {
    return std::nullopt;
  }
  int64_t whole = 0;
  if (!mul(int_part, num, &whole)) return std::nullopt;
  // Fractional part: frac * num / frac_scale, rounded up (Kubernetes rounds up to milli).
  __extension__ using Wide = __int128;  // frac * num may exceed int64 before the division
  Wide f = static_cast<Wide>(frac) * num;
  int64_t frac_milli = static_cast<int64_t>((f + frac_scale - 1) / frac_scale);
  int64_t total = 0;
  if (!add(whole, frac_milli, &total)) return std::nullopt;
  total = (total + den - 1) / den;
  return negative ? -total : total;
}

int64_t milli_to_canonical(ResourceId resource, int64_t milli) {
  if (resource != kMemory) return milli;
  // bytes = milli / 1000; MiB rounded up.
  constexpr int64_t kMilliPerMib = 1000LL << 20;
  if (milli <= 0) return milli / kMilliPerMib;
  return (milli + kMilliPerMib - 1) / kMilliPerMib;
}

std::string format_canonical(ResourceId resource, int64_t amount) {
  if (resource == kMemory) {
    if (amount != 0 && amount % 1024 == 0) return std::to_string(amount / 1024) + "Gi";
    return std::to_string(amount) + "Mi";
  }
  if (amount % 1000 == 0) return std::to_string(amount / 1000);
  return std::to_string(amount) + "m";
}

}  // namespace sluice
