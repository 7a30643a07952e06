// Per-analyst caps: a debit must fit the dataset's ledger AND the analyst's cap, in one transaction.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/privacy_units.h"
#include "server/store/budget_ledger.h"
#include "server/store/principal_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;

class GrantCapsTest : public dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    ASSERT_OK_AND_ASSIGN(bob_, CreatePrincipal("bob"));
    auto created = CreateTinyDataset("capped");
    ASSERT_THAT(created, IsOk());
    ds_ = created->schema.population_id;
    ledger_ = std::make_unique<BudgetLedger>(db());
    principals_ = std::make_unique<PrincipalStore>(db());
    ASSERT_THAT(ledger_->Set(ds_, EpsU(10), DelU(1e-5)), IsOk());
  }

  Allocation Charge(const Principal& who, const std::string& id, double epsilon, double delta = 0) {
    Allocation a;
    a.request_id = id;
    a.principal_id = who.id;
    a.analyst = who.name;
    a.fingerprint = "fp-" + id;
    a.aggregate = "count";
    a.mechanism = delta > 0 ? "gaussian" : "laplace";
    a.epsilon_units = EpsU(epsilon);
    a.delta_units = DelU(delta);
    a.confidence = 0.95;
    return a;
  }

  std::string GrantRow(const Principal& who) {
    return Sql(absl::StrCat(
        "SELECT epsilon_cap_units, epsilon_spent_units, delta_spent_units FROM population_caps "
        "WHERE principal_id = ",
        who.id, " AND population_id = ", ds_));
  }

  Principal alice_, bob_;
  int64_t ds_ = 0;
  std::unique_ptr<BudgetLedger> ledger_;
  std::unique_ptr<PrincipalStore> principals_;
};

TEST_F(GrantCapsTest, DebitBeyondTheAnalystCapIsRefusedAndChargesNothing) {
  ASSERT_THAT(principals_->Grant("alice", "capped", EpsU(1)), IsOk());
  ASSERT_THAT(principals_->Grant("bob", "capped"), IsOk());
  ASSERT_THAT(ledger_->Debit(ds_, Charge(alice_, "a1", 0.6)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "a2", 0.5)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("alice's cap")));
  // Nothing of the refused debit was written: ledger, grant and audit as before it.
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds_));
  EXPECT_EQ(b.epsilon_spent_units, EpsU(0.6));
  EXPECT_EQ(GrantRow(alice_), absl::StrCat(EpsU(1), "|", EpsU(0.6), "|0"));
  EXPECT_EQ(Sql("SELECT count(*) FROM audit"), "1");
  // Exactly to the cap is allowed; bob (no cap) is limited only by the dataset budget.
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "a3", 0.4)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds_, Charge(bob_, "b1", 5)), IsOk());
  EXPECT_EQ(GrantRow(bob_), absl::StrCat("|", EpsU(5), "|0"));
}

TEST_F(GrantCapsTest, DeltaCapIsEnforcedIndependently) {
  ASSERT_THAT(principals_->Grant("alice", "capped", absl::nullopt, DelU(1e-6)), IsOk());
  ASSERT_THAT(ledger_->Debit(ds_, Charge(alice_, "g1", 0.1, 6e-7)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "g2", 0.1, 6e-7)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("cap")));
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "l1", 0.1)), IsOk());  // pure DP still fits
}

TEST_F(GrantCapsTest, CapCannotBeLoweredBelowWhatWasSpentButCanBeRaised) {
  ASSERT_THAT(principals_->Grant("alice", "capped", EpsU(2)), IsOk());
  ASSERT_THAT(ledger_->Debit(ds_, Charge(alice_, "a", 1.5)), IsOk());
  EXPECT_THAT(principals_->Grant("alice", "capped", EpsU(1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already spent")));
  ASSERT_THAT(principals_->Grant("alice", "capped", EpsU(1.5)), IsOk());  // down to exactly spent
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "b", 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_THAT(principals_->Grant("alice", "capped", EpsU(3)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds_, Charge(alice_, "c", 1.5)), IsOk());
  // Granting again without caps keeps the stored cap.
  ASSERT_THAT(principals_->Grant("alice", "capped"), IsOk());
  EXPECT_EQ(GrantRow(alice_), absl::StrCat(EpsU(3), "|", EpsU(3), "|0"));
}

TEST_F(GrantCapsTest, ReplayOfACommittedRequestChargesTheCapNothing) {
  ASSERT_THAT(principals_->Grant("alice", "capped", EpsU(1)), IsOk());
  ASSERT_OK_AND_ASSIGN(DebitResult first, ledger_->Debit(ds_, Charge(alice_, "r", 0.8)));
  ASSERT_OK_AND_ASSIGN(DebitResult again, ledger_->Debit(ds_, Charge(alice_, "r", 0.8)));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(GrantRow(alice_), absl::StrCat(EpsU(1), "|", EpsU(0.8), "|0"));
}

}  // namespace
}  // namespace dpq::store
