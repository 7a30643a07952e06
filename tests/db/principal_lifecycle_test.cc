// The admin lifecycle of principals and grants in the store: revoke, rotate, revoke a
// grant and grant again, list, and when a token was last used.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/db/store_test_env.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

class PrincipalLifecycleTest : public ::dpq::testing::StoreTest {
 protected:
  std::string TokenOf(const std::string& name) { return Sha256(absl::StrCat("token-of-", name)); }
};

TEST_F(PrincipalLifecycleTest, RevokedTokenStopsAuthenticatingAndHistoryStays) {
  PrincipalStore principals(db());
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_THAT(principals.FindByTokenHash(TokenOf("ann")), IsOk());
  ASSERT_THAT(principals.Revoke("ann"), IsOk());
  // One message for a revoked and for a wrong token.
  EXPECT_THAT(principals.FindByTokenHash(TokenOf("ann")),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("unknown or revoked token")));
  EXPECT_THAT(principals.Revoke("ann"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already revoked")));
  EXPECT_THAT(principals.Revoke("nobody"), StatusIs(absl::StatusCode::kNotFound));
  // The row stays (audit rows reference it), marked revoked.
  ASSERT_OK_AND_ASSIGN(std::vector<PrincipalRecord> list, principals.List());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].principal.id, ann.id);
  EXPECT_FALSE(list[0].revoked_at.empty());
  // A revoked analyst can be neither granted nor rotated.
  ASSERT_THAT(CreateTinyDataset("t"), IsOk());
  EXPECT_THAT(principals.Grant("ann", "t"), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(principals.RotateToken("ann", Sha256("new")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("revoked")));
}

TEST_F(PrincipalLifecycleTest, RotatedTokenReplacesTheOldOneAtOnce) {
  PrincipalStore principals(db());
  ASSERT_OK_AND_ASSIGN(Principal bob, CreatePrincipal("bob"));
  ASSERT_OK_AND_ASSIGN(Principal rotated, principals.RotateToken("bob", Sha256("fresh")));
  EXPECT_EQ(rotated.id, bob.id);
  EXPECT_THAT(principals.FindByTokenHash(TokenOf("bob")),
              StatusIs(absl::StatusCode::kUnauthenticated));
  ASSERT_OK_AND_ASSIGN(Principal found, principals.FindByTokenHash(Sha256("fresh")));
  EXPECT_EQ(found.id, bob.id);
  EXPECT_THAT(principals.RotateToken("nobody", Sha256("x")), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(PrincipalLifecycleTest, RevokedGrantGivesNoAccessAndGrantingAgainKeepsTheSpend) {
  PrincipalStore principals(db());
  ASSERT_OK_AND_ASSIGN(Principal cat, CreatePrincipal("cat"));
  ASSERT_OK_AND_ASSIGN(CreatedDataset d, CreateTinyDataset("d"));
  ASSERT_THAT(principals.Grant("cat", "d", dpq::testing::EpsU(1.0)), IsOk());
  Sql(absl::StrCat("UPDATE population_caps SET epsilon_spent_units = ", dpq::testing::EpsU(0.25),
                   " WHERE principal_id = ", cat.id));
  ASSERT_THAT(principals.RevokeGrant("cat", "d"), IsOk());
  EXPECT_THAT(principals.HasGrant(cat.id, d.schema.id), ::dpq::testing::IsOkAndHolds(false));
  DatasetStore datasets(db());
  ASSERT_OK_AND_ASSIGN(auto visible, datasets.List(cat.id));
  EXPECT_TRUE(visible.empty());
  EXPECT_THAT(principals.RevokeGrant("cat", "d"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("holds no grant")));

  ASSERT_OK_AND_ASSIGN(std::vector<GrantRecord> grants, principals.ListGrants(std::string("d")));
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_FALSE(grants[0].revoked_at.empty());
  EXPECT_EQ(grants[0].epsilon_spent_units, dpq::testing::EpsU(0.25));

  ASSERT_THAT(principals.Grant("cat", "d"), IsOk());
  EXPECT_THAT(principals.HasGrant(cat.id, d.schema.id), ::dpq::testing::IsOkAndHolds(true));
  ASSERT_OK_AND_ASSIGN(grants, principals.ListGrants(absl::nullopt));
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_TRUE(grants[0].revoked_at.empty());
  EXPECT_EQ(grants[0].epsilon_spent_units, dpq::testing::EpsU(0.25));  // not reset by re-granting
  EXPECT_EQ(grants[0].epsilon_cap_units, dpq::testing::EpsU(1.0));
  EXPECT_THAT(principals.ListGrants(std::string("nope")), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(PrincipalLifecycleTest, LastUseIsRecordedAtMostOncePerMinute) {
  PrincipalStore principals(db());
  ASSERT_OK_AND_ASSIGN(Principal dan, CreatePrincipal("dan"));
  EXPECT_EQ(Sql(absl::StrCat("SELECT last_used_at IS NULL FROM principals WHERE id = ", dan.id)),
            "t");
  ASSERT_THAT(principals.FindByTokenHash(TokenOf("dan")), IsOk());
  const std::string first =
      Sql(absl::StrCat("SELECT last_used_at FROM principals WHERE id = ", dan.id));
  EXPECT_FALSE(first.empty());
  ASSERT_THAT(principals.FindByTokenHash(TokenOf("dan")), IsOk());
  EXPECT_EQ(Sql(absl::StrCat("SELECT last_used_at FROM principals WHERE id = ", dan.id)), first);
  // An hour later (moved back by hand), the next use is recorded again.
  Sql(absl::StrCat("UPDATE principals SET last_used_at = now() - interval '1 hour' WHERE id = ",
                   dan.id));
  ASSERT_THAT(principals.FindByTokenHash(TokenOf("dan")), IsOk());
  EXPECT_EQ(Sql(absl::StrCat("SELECT last_used_at > now() - interval '1 minute' FROM principals "
                             "WHERE id = ",
                             dan.id)),
            "t");
}

TEST_F(PrincipalLifecycleTest, BootstrapAdminIsRestoredByItsTokenFile) {
  PrincipalStore principals(db());
  ASSERT_THAT(principals.UpsertAdmin("admin", Sha256("boot")), IsOk());
  ASSERT_THAT(principals.Revoke("admin"), IsOk());
  EXPECT_THAT(principals.FindByTokenHash(Sha256("boot")),
              StatusIs(absl::StatusCode::kUnauthenticated));
  // dpqd's start-up re-keys the bootstrap admin from the operator's token: that also un-revokes it.
  ASSERT_THAT(principals.UpsertAdmin("admin", Sha256("boot")), IsOk());
  EXPECT_THAT(principals.FindByTokenHash(Sha256("boot")), IsOk());
}

TEST_F(PrincipalLifecycleTest, SchemaVersionIsTheLatestMigration) {
  PrincipalStore principals(db());
  ASSERT_OK_AND_ASSIGN(std::vector<Migration> files, ReadMigrations(DPQ_TEST_MIGRATIONS_DIR));
  EXPECT_THAT(principals.SchemaVersion(),
              ::dpq::testing::IsOkAndHolds(static_cast<int64_t>(files.size())));
}

}  // namespace
}  // namespace dpq::store
