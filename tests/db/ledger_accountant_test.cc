// The ledger with a non-basic accountant (rdp, zcdp): each debit composes the allocation's privacy
// events onto the stored state and is accepted iff the converted epsilon fits the budget.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/query/privacy_units.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "tests/db/ledger_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;

class LedgerAccountantTest : public ::dpq::testing::LedgerTest {
 protected:
  // A Gaussian release of sigma 10 for sensitivity 1 (about eps 0.5 at delta 1e-6 by itself).
  Allocation Gaussian(const std::string& id) const {
    Allocation a;
    a.request_id = id;
    a.principal_id = analyst_.id;
    a.analyst = analyst_.name;
    a.fingerprint = "fp-" + id;
    a.aggregate = "count";
    a.mechanism = "gaussian";
    a.epsilon_units = EpsU(0.5);
    a.delta_units = DelU(1e-7);
    a.sensitivity = 1;
    a.noise_scale = 10;
    a.confidence = 0.95;
    a.events = dp::accounting::PrivacyEvent::Gaussian(10, 1).ToSpec();
    return a;
  }
};

TEST_F(LedgerAccountantTest, RdpLedgerComposesGaussiansFarBelowBasicComposition) {
  const int64_t ds = NewDataset("rdp");
  ASSERT_THAT(ledger_->Set(ds, EpsU(3), DelU(1e-6), "rdp"), IsOk());
  // Basic composition would allow 3 / 0.5 = 6 such queries; RDP composes 20 Gaussians of
  // noise multiplier 10 to about eps 2.4 at delta 1e-6.
  for (int i = 0; i < 20; ++i)
    ASSERT_THAT(ledger_->Debit(ds, Gaussian(absl::StrCat("q", i))), IsOk()) << i;
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(dp::accounting::AccountantName(b.accountant), "rdp");

  // The ledger's spent epsilon is the RDP bound of exactly these events, rounded up to a unit.
  ASSERT_OK_AND_ASSIGN(auto reference, dp::accounting::CreateAccountant("rdp"));
  ASSERT_THAT(reference->Compose(dp::accounting::PrivacyEvent::Gaussian(10, 1, 20)), IsOk());
  ASSERT_OK_AND_ASSIGN(double eps, reference->Epsilon(query::MechanismDelta(DelU(1e-6))));
  EXPECT_GT(b.epsilon_spent(), 3 * 0.5);  // more than six queries' worth under basic...
  EXPECT_LE(b.epsilon_spent(), 3.0);      // ...yet within the budget
  EXPECT_NEAR(b.epsilon_spent(), eps, 1e-11);
  EXPECT_GE(b.epsilon_spent(), eps);
  EXPECT_EQ(b.delta_spent_units, DelU(1e-6));
}

TEST_F(LedgerAccountantTest, RdpLedgerRefusesTheChargeThatWouldExceedTheBudgetAndKeepsState) {
  const int64_t ds = NewDataset("rdp_full");
  ASSERT_THAT(ledger_->Set(ds, EpsU(1), DelU(1e-6), "rdp"), IsOk());
  int accepted = 0;
  absl::Status last;
  for (int i = 0; i < 50 && last.ok(); ++i) {
    auto r = ledger_->Debit(ds, Gaussian(absl::StrCat("q", i)));
    last = r.status();
    if (r.ok()) ++accepted;
  }
  EXPECT_THAT(last, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("rdp")));
  EXPECT_GT(accepted, 2);
  const std::string state_before =
      Sql(absl::StrCat("SELECT md5(accountant_state) FROM ledgers WHERE population_id = ", ds));
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_LE(b.epsilon_spent(), 1.0);
  EXPECT_THAT(ledger_->Debit(ds, Gaussian("again")),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT md5(accountant_state) FROM ledgers WHERE population_id = ", ds)),
      state_before);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", ds)),
            std::to_string(accepted));
  // Every audit row keeps its events, so the state can be recomputed from the chain.
  ASSERT_OK_AND_ASSIGN(auto rows, ledger_->ListAllocations(ds));
  for (const Allocation& a : rows) {
    EXPECT_EQ(a.events, Gaussian("x").events);
    EXPECT_EQ(a.hash, ChainHash(a.prev_hash, ds, a));
  }
}

TEST_F(LedgerAccountantTest, AccountantCannotChangeOnceBudgetIsSpent) {
  const int64_t ds = NewDataset("switch");
  ASSERT_THAT(ledger_->Set(ds, EpsU(5), DelU(1e-6), "zcdp"), IsOk());
  ASSERT_THAT(ledger_->Set(ds, EpsU(5), DelU(1e-6), "rdp"), IsOk());  // nothing spent yet: allowed
  ASSERT_THAT(ledger_->Debit(ds, Gaussian("q")), IsOk());
  EXPECT_THAT(ledger_->Set(ds, EpsU(5), DelU(1e-6), "basic"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cannot change")));
  EXPECT_THAT(ledger_->Set(ds, EpsU(6), DelU(1e-6), ""), IsOk());  // same accountant, new total
}

TEST_F(LedgerAccountantTest, PldLedgerComposesAdaptiveQueriesWithTheRdpFilter) {
  const int64_t pld = NewDataset("pld_ledger");
  const int64_t rdp = NewDataset("rdp_ledger");
  ASSERT_THAT(ledger_->Set(pld, EpsU(5), DelU(1e-6), "pld"), IsOk());
  ASSERT_THAT(ledger_->Set(rdp, EpsU(5), DelU(1e-6), "rdp"), IsOk());
  for (int i = 0; i < 4; ++i) {
    ASSERT_THAT(ledger_->Debit(pld, Gaussian(absl::StrCat("q", i))), IsOk());
    ASSERT_THAT(ledger_->Debit(rdp, Gaussian(absl::StrCat("q", i))), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(BudgetState p, ledger_->Get(pld));
  ASSERT_OK_AND_ASSIGN(BudgetState r, ledger_->Get(rdp));
  EXPECT_EQ(dp::accounting::AccountantName(p.accountant), "pld");
  EXPECT_EQ(p.epsilon_spent_units, r.epsilon_spent_units);
  ASSERT_OK_AND_ASSIGN(auto verification, ledger_->Verify(pld));
  EXPECT_TRUE(verification.ok) << verification.reason;
}

TEST_F(LedgerAccountantTest, RefusesUnknownNamesAndZeroDeltaForConvertedAccountants) {
  const int64_t ds = NewDataset("names");
  EXPECT_THAT(ledger_->Set(ds, EpsU(1), DelU(1e-6), "magic"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("accountant")));
  EXPECT_THAT(ledger_->Set(ds, EpsU(1), 0, "rdp"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delta")));
}

TEST_F(LedgerAccountantTest, LoweringDeltaRecomputesSpentAndNeverGoesBelowIt) {
  const int64_t ds = NewDataset("delta_move");
  ASSERT_THAT(ledger_->Set(ds, EpsU(10), DelU(1e-3), "rdp"), IsOk());
  for (int i = 0; i < 5; ++i)
    ASSERT_THAT(ledger_->Debit(ds, Gaussian(absl::StrCat("q", i))), IsOk());
  ASSERT_OK_AND_ASSIGN(BudgetState loose, ledger_->Get(ds));
  // A smaller delta converts the same RDP curve to a larger epsilon.
  ASSERT_OK_AND_ASSIGN(BudgetState tight, ledger_->Set(ds, EpsU(10), DelU(1e-9), ""));
  EXPECT_GT(tight.epsilon_spent_units, loose.epsilon_spent_units);
  // An epsilon total below that recomputed spend is refused.
  EXPECT_THAT(ledger_->Set(ds, tight.epsilon_spent_units - 1, DelU(1e-9), ""),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace dpq::store
