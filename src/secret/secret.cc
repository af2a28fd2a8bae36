#include "secret/secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <vector>

namespace sluice::secret {
namespace {

std::string to_hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0xf];
  }
  return out;
}

// SHA-256 fetched once. With EVP_sha256() OpenSSL 3 fetches the implementation again on every
// digest, and HMAC() fetches both the MAC and the digest: lookups under a lock that cost more
// than hashing a token (one a sync on the server, one a pod on the agents).
const EVP_MD* sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md ? md : EVP_sha256();
}

bool digest(EVP_MD_CTX* ctx, std::initializer_list<std::string_view> parts, unsigned char* md,
            unsigned int* len) {
  if (EVP_DigestInit_ex(ctx, sha256(), nullptr) != 1) return false;
  for (std::string_view p : parts)
    if (EVP_DigestUpdate(ctx, p.data(), p.size()) != 1) return false;
  return EVP_DigestFinal_ex(ctx, md, len) == 1;
}

std::string_view as_text(const unsigned char* p, size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

}  // namespace

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return to_hex(buf.data(), bytes);
}

std::string sha256_hex(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), md, &len, sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed");
  return to_hex(md, len);
}

// HMAC (RFC 2104) over the digest fetched once: H((K ^ opad) || H((K ^ ipad) || message)), the
// key hashed first when longer than the block. Checked against RFC 4231's vectors.
std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  constexpr size_t kBlock = 64;
  unsigned char k[kBlock] = {};
  unsigned char pad[kBlock];
  unsigned char inner[EVP_MAX_MD_SIZE], md[EVP_MAX_MD_SIZE];
  unsigned int key_len = 0, inner_len = 0, len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr;
  if (ok && key.size() > kBlock)
    ok = digest(ctx, {key}, k, &key_len);
  else if (ok)
    std::memcpy(k, key.data(), key.size());
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ 0x36;
  ok = ok && digest(ctx, {as_text(pad, kBlock), message}, inner, &inner_len);
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ 0x5c;
  ok = ok && digest(ctx, {as_text(pad, kBlock), as_text(inner, inner_len)}, md, &len);
  EVP_MD_CTX_free(ctx);
  OPENSSL_cleanse(k, sizeof k);
  OPENSSL_cleanse(pad, sizeof pad);
  if (!ok) throw std::runtime_error("HMAC-SHA-256 failed");
  return to_hex(md, len);
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string bearer(std::string_view header) {
  // The scheme is case-insensitive (RFC 7235 2.1: "bearer", "BEARER"); one or more spaces
  // follow it (RFC 7235's 1*SP).
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() + 1) return {};
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return {};
  size_t at = kScheme.size();
  if (header[at] != ' ') return {};
  while (at < header.size() && header[at] == ' ') ++at;
  return std::string(header.substr(at));
}

}  // namespace sluice::secret
