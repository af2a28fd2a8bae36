#include "secret/secret.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>

#include <string>

namespace sluice::secret {
namespace {

TEST(Sha256, KnownAnswers) {  // FIPS 180-2's examples
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// RFC 4231's test cases 1, 2, 3, 4, 6 and 7 (5 truncates the output, which sluice never does).
TEST(HmacSha256, Rfc4231Vectors) {
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  EXPECT_EQ(hmac_sha256_hex(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Keys longer than the block: hashed first.
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'),
                            "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'),
                            "This is a test using a larger than block-size key and a larger than "
                            "block-size data. The key needs to be hashed before being used by the "
                            "HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

// Every key length around the block size (64), against OpenSSL's own HMAC().
TEST(HmacSha256, AgreesWithOpenSslAroundTheBlockSize) {
  for (size_t n : {0, 1, 31, 32, 63, 64, 65, 127, 128, 129, 300}) {
    std::string key;
    for (size_t i = 0; i < n; ++i) key.push_back(static_cast<char>(i * 37 + 11));
    const std::string message = "checkpoint/" + std::to_string(n) + "/0";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), md, &len);
    std::string want;
    for (unsigned int i = 0; i < len; ++i) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", md[i]);
      want += b;
    }
    EXPECT_EQ(hmac_sha256_hex(key, message), want) << "key of " << n << " bytes";
  }
}

}  // namespace
}  // namespace sluice::secret
