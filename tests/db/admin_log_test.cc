// The admin log (migration 0009): each admin action appends one row in its own
// transaction, the chain links every row, tampering is found, a refused action leaves no row, and
// concurrent admins get consecutive seqs.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/store/admin_log.h"
#include "server/store/budget_ledger.h"
#include "tests/db/store_test_env.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;

class AdminLogTest : public ::dpq::testing::StoreTest {
 protected:
  static AdminAction Act(const std::string& action, const std::string& target) {
    return AdminAction{"root", action, target, "k=v"};
  }
  int64_t Rows() { return std::stoll(Sql("SELECT count(*) FROM admin_log")); }
};

TEST_F(AdminLogTest, EachActionAppendsOneLinkedRowAndVerifies) {
  PrincipalStore principals(db());
  AdminLog log(db());
  const AdminAction create = Act("analyst.create", "ann");
  ASSERT_THAT(principals.Create("ann", Role::kAnalyst, Sha256("t-ann"), &create), IsOk());
  ASSERT_OK_AND_ASSIGN(CreatedDataset d, CreateTinyDataset("d"));
  const AdminAction grant = Act("grant", "ann/d");
  ASSERT_THAT(principals.Grant("ann", "d", absl::nullopt, absl::nullopt, &grant), IsOk());
  BudgetLedger ledger(db());
  const AdminAction budget = Act("budget.set", "d");
  ASSERT_THAT(
      ledger.Set(d.schema.population_id, dpq::testing::EpsU(1), 0, "", absl::nullopt, &budget),
      IsOk());

  ASSERT_OK_AND_ASSIGN(std::vector<AdminLogEntry> entries, log.List());
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].action.action, "analyst.create");
  EXPECT_EQ(entries[1].action.target, "ann/d");
  EXPECT_EQ(entries[2].action.action, "budget.set");
  EXPECT_EQ(entries[0].prev_hash, GenesisHash());
  EXPECT_EQ(entries[1].prev_hash, entries[0].hash);
  ASSERT_OK_AND_ASSIGN(AdminLog::Verification v, log.Verify());
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, 3);
}

TEST_F(AdminLogTest, ARefusedActionWritesNoRow) {
  PrincipalStore principals(db());
  ASSERT_THAT(CreatePrincipal("ann"), IsOk());
  const AdminAction again = Act("analyst.create", "ann");
  EXPECT_THAT(principals.Create("ann", Role::kAnalyst, Sha256("other"), &again),
              StatusIs(absl::StatusCode::kAlreadyExists));
  const AdminAction grant = Act("grant", "ann/nope");
  EXPECT_THAT(principals.Grant("ann", "nope", absl::nullopt, absl::nullopt, &grant),
              StatusIs(absl::StatusCode::kNotFound));
  const AdminAction revoke = Act("grant.revoke", "ann/nope");
  EXPECT_THAT(principals.RevokeGrant("ann", "nope", &revoke),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(Rows(), 0);
}

TEST_F(AdminLogTest, TamperingIsFoundAtTheAlteredRow) {
  PrincipalStore principals(db());
  AdminLog log(db());
  for (const char* name : {"a1", "a2", "a3"}) {
    const AdminAction act = Act("analyst.create", name);
    ASSERT_THAT(principals.Create(name, Role::kAnalyst, Sha256(name), &act), IsOk());
  }
  // The table refuses changes...
  EXPECT_FALSE(TrySql("UPDATE admin_log SET target = 'x' WHERE seq = 2").ok());
  EXPECT_FALSE(TrySql("DELETE FROM admin_log WHERE seq = 3").ok());
  EXPECT_FALSE(TrySql("TRUNCATE admin_log").ok());
  // ...and the owner who disables the trigger is found out by the chain.
  Sql("ALTER TABLE admin_log DISABLE TRIGGER admin_log_append_only; "
      "UPDATE admin_log SET target = 'someone_else' WHERE seq = 2; "
      "ALTER TABLE admin_log ENABLE TRIGGER admin_log_append_only");
  ASSERT_OK_AND_ASSIGN(AdminLog::Verification v, log.Verify());
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 2);
  EXPECT_EQ(v.reason, "hash does not match the row's content");
  // Removing a row in the middle breaks the sequence.
  Sql("ALTER TABLE admin_log DISABLE TRIGGER admin_log_append_only; "
      "DELETE FROM admin_log WHERE seq = 1; "
      "ALTER TABLE admin_log ENABLE TRIGGER admin_log_append_only");
  ASSERT_OK_AND_ASSIGN(v, log.Verify());
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 1);
}

TEST_F(AdminLogTest, ConcurrentAdminsGetConsecutiveSeqs) {
  constexpr int kThreads = 8, kEach = 5;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      PrincipalStore principals(db());
      for (int i = 0; i < kEach; ++i) {
        const std::string name = absl::StrCat("u", t, "_", i);
        const AdminAction act = Act("analyst.create", name);
        EXPECT_THAT(principals.Create(name, Role::kAnalyst, Sha256(name), &act), IsOk());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  AdminLog log(db());
  ASSERT_OK_AND_ASSIGN(AdminLog::Verification v, log.Verify());
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, kThreads * kEach);
}

}  // namespace
}  // namespace dpq::store
