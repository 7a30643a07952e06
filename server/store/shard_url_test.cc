// Shard URLs as libpq's PQconninfoParse reads them (no database), and messages that never carry
// the password.
#include "server/store/shard_url.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::store {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ShardUrlTest, ReadsEveryPartOfATcpUrl) {
  absl::StatusOr<ShardUrl> u =
      ParseShardUrl("postgresql://shard_user:s%40cret@db1.example.org:6432/rows?sslmode=require");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "db1.example.org");
  EXPECT_EQ(u->port, 6432);
  EXPECT_EQ(u->dbname, "rows");
  EXPECT_EQ(u->user, "shard_user");
  EXPECT_EQ(u->password, "s@cret");  // percent-decoded by libpq
  EXPECT_EQ(u->sslmode, "require");
}

TEST(ShardUrlTest, ASocketDirectoryInTheQueryAndTheDefaultPort) {
  absl::StatusOr<ShardUrl> u = ParseShardUrl("postgresql://u@/d?host=/tmp/pg/run");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "/tmp/pg/run");
  EXPECT_EQ(u->port, 5432);
  EXPECT_EQ(u->password, "");
  EXPECT_EQ(ShardAddress(u->host, u->port), "/tmp/pg/run:5432");
}

TEST(ShardUrlTest, RefusesWhatAShardCannotUseWithoutQuotingTheUrl) {
  const std::string secret = "hunter2xyz";
  for (const std::string& url : {
           std::string("host=h dbname=d user=u password=") + secret,    // not a URL
           "postgresql://u:" + secret + "@/d",                          // no host
           "postgresql://u:" + secret + "@h/",                          // no database
           "postgresql://:" + secret + "@h/d",                          // no user
           "postgresql://u:" + secret + "@h1,h2/d",                     // several hosts
           "postgresql://u:" + secret + "@h:70000/d",                   // bad port
           "postgresql://u:" + secret + "@h/d?options=-cwork_mem%3D1",  // other option
           "postgresql://u:" + secret + "%zz@h/d",                      // bad percent-encoding
       }) {
    absl::StatusOr<ShardUrl> u = ParseShardUrl(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(std::string(u.status().message()), Not(HasSubstr(secret))) << url;
    EXPECT_THAT(std::string(u.status().message()), HasSubstr("postgresql://USER")) << url;
  }
}

TEST(ShardUrlTest, AnIpv6AddressIsBracketedAndSecretsAreBlanked) {
  EXPECT_EQ(ShardAddress("::1", 5432), "[::1]:5432");
  EXPECT_EQ(ShardAddress("10.0.0.7", 5433), "10.0.0.7:5433");
  EXPECT_EQ(WithoutSecret("auth failed for pw9 (pw9)", "pw9"), "auth failed for *** (***)");
  EXPECT_EQ(WithoutSecret("unchanged", ""), "unchanged");
}

}  // namespace
}  // namespace dpq::store
