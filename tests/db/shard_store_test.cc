// The shard registry (store/shard_store.h) against two real clusters: the coordinator (this test's
// migrated database) and a second throwaway cluster as the shard, whose user logs in with a
// password (scram-sha-256), as postgres_fdw requires for a role that is not a superuser (dpq_scan).
#include "server/store/shard_store.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/admin_log.h"
#include "tests/db/shard_clusters.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::StatusIs;
using ::dpq::testing::TestPostgres;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

using ::dpq::testing::kShardPassword;
constexpr const char* kPassword = kShardPassword;

class ShardStoreTest : public ::dpq::testing::StoreTest {
 protected:
  static void SetUpTestSuite() {
    StoreTest::SetUpTestSuite();
    if (pg_ == nullptr) return;
    auto shard = ::dpq::testing::StartShardCluster();
    ASSERT_TRUE(shard.ok()) << shard.status();
    shard_ = std::move(shard).value().release();
  }
  static void TearDownTestSuite() {
    delete shard_;
    shard_ = nullptr;
    StoreTest::TearDownTestSuite();
  }

  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NE(shard_, nullptr) << "the shard cluster did not start";
    // One session: the probes share its postgres_fdw connection cache, as a pooled session does.
    ASSERT_OK_AND_ASSIGN(one_session_, Database::Open(url(), 1));
  }

  static std::string ShardUrl(const std::string& user, const std::string& password) {
    return ::dpq::testing::ShardClusterUrl(*shard_, user, password);
  }

  // The coordinator's postgres_fdw objects and shard rows, for "nothing half-created".
  std::string CoordinatorObjects() {
    return Sql(
        "SELECT (SELECT count(*) FROM pg_foreign_server) || '/' || "
        "(SELECT count(*) FROM pg_user_mappings) || '/' || "
        "(SELECT count(*) FROM pg_foreign_table) || '/' || "
        "(SELECT count(*) FROM shards WHERE removed_at IS NULL)");
  }

  static TestPostgres* shard_;
  std::unique_ptr<Database> one_session_;
};

TestPostgres* ShardStoreTest::shard_ = nullptr;

TEST_F(ShardStoreTest, AddListProbeRemove) {
  ShardStore shards(one_session_.get());
  const AdminAction log{"root", "shard.add", "east", "user=shard_user"};
  ASSERT_OK_AND_ASSIGN(Shard added, shards.Add("east", ShardUrl("shard_user", kPassword), &log));
  EXPECT_EQ(added.name, "east");
  EXPECT_EQ(added.host, shard_->server().socket_dir());
  EXPECT_EQ(added.port, 5432);
  EXPECT_EQ(added.dbname, "dpq");
  EXPECT_EQ(added.user, "shard_user");
  EXPECT_GE(added.server_version_num, 150000);
  EXPECT_EQ(CoordinatorObjects(), "1/2/2/1");
  // The password is only in the user mappings: not in the shards row.
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT count(*) FROM shards WHERE shards::text LIKE '%", kPassword, "%'")),
      "0");
  EXPECT_EQ(Sql("SELECT srvoptions::text FROM pg_foreign_server"),
            absl::StrCat("{host=", shard_->server().socket_dir(),
                         ",port=5432,dbname=dpq,async_capable=true,fetch_size=10000,"
                         "connect_timeout=2}"));
  EXPECT_EQ(Sql("SELECT string_agg(usename, ',' ORDER BY usename) FROM pg_user_mappings"),
            "dpq_scan,postgres");
  // The view on the shard.
  EXPECT_EQ(*shard_->Query("SELECT version_num >= 150000 FROM dpq_shard.health"), "t");

  ASSERT_OK_AND_ASSIGN(std::vector<Shard> listed, shards.List());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "east");
  EXPECT_EQ(listed[0].server_version_num, added.server_version_num);

  ASSERT_OK_AND_ASSIGN(ShardProbe probe, shards.Probe("east"));
  EXPECT_TRUE(probe.up) << probe.error;
  EXPECT_EQ(probe.version_num, added.server_version_num);
  EXPECT_GT(probe.seconds, 0);

  ASSERT_OK_AND_ASSIGN(std::vector<AdminLogEntry> entries, AdminLog(db()).List());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].action.action, "shard.add");

  ASSERT_OK(shards.Remove("east"));
  EXPECT_EQ(CoordinatorObjects(), "0/0/0/0");
  EXPECT_EQ(Sql("SELECT count(*) FROM shards WHERE removed_at IS NOT NULL"), "1");
  EXPECT_THAT(shards.Probe("east").status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(shards.Remove("east"), StatusIs(absl::StatusCode::kNotFound));
  // The name is free again.
  ASSERT_OK(shards.Add("east", ShardUrl("shard_user", kPassword)).status());
  EXPECT_EQ(CoordinatorObjects(), "1/2/2/1");
}

TEST_F(ShardStoreTest, AStoppedShardIsDownWithinTheTimeoutAndUpAgainOnceRestarted) {
  ShardStore shards(one_session_.get());
  ASSERT_OK(shards.Add("west", ShardUrl("shard_user", kPassword)).status());
  ASSERT_OK_AND_ASSIGN(ShardProbe before, shards.Probe("west"));
  ASSERT_TRUE(before.up) << before.error;  // this session now caches a connection to the shard

  ASSERT_OK(shard_->server().Stop());
  ASSERT_OK_AND_ASSIGN(std::vector<ShardProbe> down, shards.ProbeAll());
  ASSERT_EQ(down.size(), 1u);
  EXPECT_FALSE(down[0].up);
  EXPECT_THAT(down[0].error, StatusIs(absl::StatusCode::kUnavailable,
                                      AllOf(HasSubstr("SQLSTATE"), Not(HasSubstr(kPassword)))));
  EXPECT_LT(down[0].seconds, absl::ToDoubleSeconds(ShardStore::kProbeTimeout) + 0.5);
  // Still down on the next probe of the same session.
  ASSERT_OK_AND_ASSIGN(ShardProbe still, shards.Probe("west"));
  EXPECT_FALSE(still.up);

  ASSERT_OK(shard_->Restart());
  ASSERT_OK_AND_ASSIGN(ShardProbe after, shards.Probe("west"));
  EXPECT_TRUE(after.up) << after.error;
  EXPECT_EQ(after.version_num, before.version_num);

  // Restarted between two probes: the session's cached connection is broken, never seen failing.
  ASSERT_OK(shard_->Restart());
  ASSERT_OK_AND_ASSIGN(ShardProbe again, shards.Probe("west"));
  EXPECT_TRUE(again.up) << again.error;
}

TEST_F(ShardStoreTest, AWrongPasswordIsFailedPreconditionWithoutThePassword) {
  ShardStore shards(db());
  const std::string wrong = "not-the-Password-90210";
  absl::StatusOr<Shard> added = shards.Add("north", ShardUrl("shard_user", wrong));
  EXPECT_THAT(added.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       AllOf(HasSubstr(shard_->server().socket_dir() + ":5432"),
                                             HasSubstr("password"), Not(HasSubstr(wrong)))));
  EXPECT_EQ(CoordinatorObjects(), "0/0/0/0");
}

TEST_F(ShardStoreTest, AnUnreachableShardNamesItsAddress) {
  ShardStore shards(db());
  absl::StatusOr<Shard> added =
      shards.Add("south", "postgresql://shard_user:x@/dpq?host=/nonexistent/run&port=5999");
  EXPECT_THAT(added.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/nonexistent/run:5999")));
  EXPECT_EQ(CoordinatorObjects(), "0/0/0/0");
}

TEST_F(ShardStoreTest, DuplicateNamesBadNamesAndBadUrlsAreRefused) {
  ShardStore shards(db());
  ASSERT_OK(shards.Add("east", ShardUrl("shard_user", kPassword)).status());
  EXPECT_THAT(shards.Add("east", ShardUrl("shard_user", kPassword)).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("east")));
  for (const std::string& name :
       std::vector<std::string>{"", "East", "1east", "e-ast", std::string(41, 'a')}) {
    EXPECT_THAT(shards.Add(name, ShardUrl("shard_user", kPassword)).status(),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << name;
  }
  EXPECT_THAT(shards.Add("west", absl::StrCat("mysql://u:", kPassword, "@h/d")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, Not(HasSubstr(kPassword))));
  EXPECT_EQ(CoordinatorObjects(), "1/2/2/1");
}

TEST_F(ShardStoreTest, AFailureOnTheCoordinatorLeavesNothingHalfCreated) {
  ShardStore shards(db());
  const int64_t log_before = AdminLog(db()).List()->size();
  // postgres logs in without a password (trust): dpqd's superuser mapping works, but dpq_scan's
  // cannot (postgres_fdw requires a password for a role that is not a superuser). The check runs
  // after every coordinator object was created, in their transaction.
  const AdminAction log{"root", "shard.add", "trusty", ""};
  EXPECT_THAT(shards.Add("trusty", ShardUrl("postgres", ""), &log).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("dpq_scan"), HasSubstr("password"))));
  EXPECT_EQ(CoordinatorObjects(), "0/0/0/0");
  EXPECT_EQ(Sql("SELECT count(*) FROM shards"), "0");
  EXPECT_EQ(static_cast<int64_t>(AdminLog(db()).List()->size()), log_before);
}

}  // namespace
}  // namespace dpq::store
