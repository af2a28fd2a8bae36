#pragma once
// Secrets shared by the server and the agent: random credentials, their digests, and the
// comparison that does not leak where two strings differ. OpenSSL's libcrypto does the
// cryptography; nothing here is home-made.
#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::secret {

// `bytes` random bytes from the kernel (getrandom), as lowercase hex (2 * bytes characters).
// Throws std::runtime_error only if the kernel refuses randomness, which a running Linux
// never does after boot.
std::string random_hex(size_t bytes = 32);

// SHA-256 of `text`, lowercase hex: what the server keeps of a node's credential.
std::string sha256_hex(std::string_view text);

// HMAC-SHA-256 of `message` under `key`, lowercase hex: a pod's checkpoint token is derived
// from the agent's key and the pod, so the agent keeps no per-pod state for it.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// Equal strings, compared in time that depends on their lengths only.
bool same(std::string_view a, std::string_view b);

// The token of an `Authorization: Bearer <token>` header value; "" for anything else.
std::string bearer(std::string_view authorization_header);

}  // namespace sluice::secret
