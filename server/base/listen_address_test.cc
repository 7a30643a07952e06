#include "server/base/listen_address.h"

#include "gtest/gtest.h"

namespace dpq {
namespace {

TEST(IsLoopbackAddressTest, LocalOnlyAddresses) {
  for (const char* a :
       {"127.0.0.1:7777", "127.1.2.3:1", "localhost:7777", "[::1]:7777", "unix:/run/dpq.sock"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
}

TEST(IsLoopbackAddressTest, EverythingElseIsNot) {
  for (const char* a :
       {"0.0.0.0:7777", "[::]:7777", "10.0.0.5:7777", "dpq.example.org:443", "128.0.0.1:7777",
        "127.0.0.1", "127.0.0:7777", "127.0.0.256:1", ":7777", "", "localhost.evil.org:7777"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

}  // namespace
}  // namespace dpq
