#include "server/base/sha256.h"

#include "gtest/gtest.h"

namespace dpq {
namespace {

// Test vectors from FIPS 180-4 examples (NIST CSRC "SHA256.pdf").
TEST(Sha256Test, MatchesFipsVectors) {
  EXPECT_EQ(ToHex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, DigestIs32Bytes) { EXPECT_EQ(Sha256("x").size(), 32u); }

}  // namespace
}  // namespace dpq
