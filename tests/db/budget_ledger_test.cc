// The debit transaction of the privacy ledger against a real PostgreSQL: budget checks, the audit
// hash chain, idempotent replays, budget changes, the append-only audit table, and concurrent
// debits on one hot dataset.
#include "server/store/budget_ledger.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/query/privacy_units.h"
#include "server/store/audit_chain.h"
#include "server/store/spend_tally.h"
#include "tests/db/ledger_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::dpq::testing::SumAllocation;
using ::testing::HasSubstr;

// Walks a dataset's audit chain as a future `dpqctl audit verify` will: seqs 1, 2, ... without
// gaps, each prev_hash equal to the previous row's hash (genesis for the first), each hash equal to
// ChainHash recomputed from the row's content. Returns the seq of the first broken row, or 0.
int64_t FirstBrokenLink(int64_t population_id, const std::vector<Allocation>& rows) {
  std::string prev = GenesisHash();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Allocation& a = rows[i];
    if (a.seq != static_cast<int64_t>(i) + 1 || a.prev_hash != prev ||
        a.hash != ChainHash(a.prev_hash, population_id, a)) {
      return static_cast<int64_t>(i) + 1;
    }
    prev = a.hash;
  }
  return 0;
}

class BudgetLedgerTest : public ::dpq::testing::LedgerTest {
 protected:
  static int64_t EpsU(double e) { return dpq::testing::EpsU(e); }
  static int64_t DelU(double d) { return dpq::testing::DelU(d); }

  absl::StatusOr<BudgetState> SetBudget(int64_t ds, double epsilon_total, double delta_total) {
    return ledger_->Set(ds, EpsU(epsilon_total), DelU(delta_total));
  }

  // An allocation as the engine would fill it in, charged to the fixture's analyst.
  Allocation Alloc(const std::string& request_id, double epsilon, double delta = 0,
                   const std::string& fingerprint = "") const {
    return SumAllocation(analyst_, request_id, epsilon, delta, fingerprint);
  }

  int64_t AuditRows(int64_t population_id) {
    std::string n =
        Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", population_id));
    return n.empty() ? -1 : std::stoll(n);
  }
};

TEST_F(BudgetLedgerTest, DebitWithinBudgetAppendsHashChainedAuditRows) {
  const int64_t ds = NewDataset("chain", 10, 1e-5);
  const std::vector<std::pair<double, double>> charges = {
      {0.5, 0}, {0.1, 2e-6}, {1.0 / 3.0, 0}, {0.7, 3e-6}};
  std::vector<DebitResult> results;
  for (size_t i = 0; i < charges.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(
        DebitResult r,
        ledger_->Debit(ds, Alloc(absl::StrCat("r", i), charges[i].first, charges[i].second)));
    EXPECT_FALSE(r.replayed);
    EXPECT_EQ(r.allocation.seq, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(r.allocation.hash, ChainHash(r.allocation.prev_hash, ds, r.allocation));
    EXPECT_EQ(r.allocation.prev_hash, i == 0 ? GenesisHash() : results.back().allocation.hash);
    EXPECT_FALSE(r.allocation.created_at.empty());
    results.push_back(r);
  }

  ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger_->ListAllocations(ds));
  ASSERT_EQ(rows.size(), charges.size());
  EXPECT_EQ(FirstBrokenLink(ds, rows), 0);
  int64_t eps_sum = 0, delta_sum = 0;  // exact integer units, as the ledger adds them
  for (size_t i = 0; i < rows.size(); ++i) {
    const Allocation& stored = rows[i];
    const Allocation& returned = results[i].allocation;
    // What Debit returned is exactly what was committed (doubles round-trip bit for bit).
    EXPECT_EQ(stored.request_id, returned.request_id);
    EXPECT_EQ(stored.hash, returned.hash);
    EXPECT_EQ(stored.prev_hash, returned.prev_hash);
    EXPECT_EQ(stored.created_at, returned.created_at);
    EXPECT_EQ(stored.value, returned.value);
    EXPECT_EQ(stored.ci_lower, returned.ci_lower);
    EXPECT_EQ(stored.epsilon_units, EpsU(charges[i].first));
    EXPECT_EQ(stored.delta_units, DelU(charges[i].second));
    EXPECT_EQ(stored.clamp_lower, absl::optional<double>(0.0));
    EXPECT_EQ(stored.principal_id, analyst_.id);
    EXPECT_EQ(stored.analyst, "alice");
    EXPECT_EQ(stored.hash.size(), 32u);
    eps_sum += stored.epsilon_units;
    delta_sum += stored.delta_units;
  }
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent_units, eps_sum);
  EXPECT_EQ(b.delta_spent_units, delta_sum);
  EXPECT_EQ(b.epsilon_total(), 10);
  EXPECT_EQ(b.delta_total(), 1e-5);
  EXPECT_EQ(b.population, "chain");
  EXPECT_EQ(results.back().budget.epsilon_spent_units, eps_sum);
  EXPECT_EQ(results.back().budget.delta_spent_units, delta_sum);
  // The ledger's head points at the last row, so the next debit extends the chain in O(1).
  EXPECT_EQ(Sql(absl::StrCat("SELECT audit_head_seq, encode(audit_head_hash, 'hex') FROM ledgers "
                             "WHERE population_id = ",
                             ds)),
            absl::StrCat(rows.size(), "|", ToHex(rows.back().hash)));
}

TEST_F(BudgetLedgerTest, ChainsOfDifferentDatasetsAreIndependent) {
  const int64_t a = NewDataset("first", 10, 0);
  const int64_t b = NewDataset("second", 10, 0);
  ASSERT_THAT(ledger_->Debit(a, Alloc("x", 1)), IsOk());
  ASSERT_OK_AND_ASSIGN(DebitResult rb, ledger_->Debit(b, Alloc("x", 1)));  // same id, other dataset
  EXPECT_FALSE(rb.replayed);
  EXPECT_EQ(rb.allocation.seq, 1);
  EXPECT_EQ(rb.allocation.prev_hash, GenesisHash());
  ASSERT_OK_AND_ASSIGN(DebitResult ra, ledger_->Debit(a, Alloc("y", 1)));
  EXPECT_EQ(ra.allocation.seq, 2);
  // The dataset id is part of the hashed content: identical rows hash differently per dataset.
  ASSERT_OK_AND_ASSIGN(auto rows_a, ledger_->ListAllocations(a));
  EXPECT_NE(rows_a[0].hash, rb.allocation.hash);
}

// Refusals say what to do next: who can fix it, and with which command.
TEST_F(BudgetLedgerTest, RefusalsNameTheCommandThatHelps) {
  auto unset = CreateTinyDataset("unset");
  ASSERT_THAT(unset, IsOk());
  EXPECT_THAT(ledger_->Debit(unset->schema.population_id, Alloc("a", 0.1)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("population unset has no privacy budget yet: ask an admin to run "
                                 "`dpqctl budget set unset --epsilon E [--delta D]`")));
  const int64_t ds = NewDataset("small", 1.0, 0);
  EXPECT_THAT(ledger_->Debit(ds, Alloc("b", 2)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("ask an admin to raise the total (`dpqctl budget set small")));
}

TEST_F(BudgetLedgerTest, DebitOverBudgetIsResourceExhaustedAndChangesNothing) {
  const int64_t ds = NewDataset("over", 1.0, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("ok", 0.6)), IsOk());
  const std::string before = Sql(absl::StrCat(
      "SELECT epsilon_spent_units, delta_spent_units, audit_head_seq, encode(audit_head_hash, 'hex'), updated_at "
      "FROM ledgers WHERE population_id = ",
      ds));

  EXPECT_THAT(ledger_->Debit(ds, Alloc("too-much", 0.5)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("exhausted")));
  EXPECT_EQ(
      Sql(absl::StrCat(
          "SELECT epsilon_spent_units, delta_spent_units, audit_head_seq, encode(audit_head_hash, 'hex'), "
          "updated_at FROM ledgers WHERE population_id = ",
          ds)),
      before);
  EXPECT_EQ(AuditRows(ds), 1);
  ASSERT_OK_AND_ASSIGN(auto found, ledger_->FindAllocation(ds, "too-much"));
  EXPECT_FALSE(found.has_value());

  // A refused request id is not burnt: it can be used later for a charge that fits.
  ASSERT_OK_AND_ASSIGN(DebitResult r, ledger_->Debit(ds, Alloc("too-much", 0.25)));
  EXPECT_EQ(r.allocation.seq, 2);
  EXPECT_FALSE(r.replayed);
}

TEST_F(BudgetLedgerTest, ChargeExactlyEqualToTheBudgetIsAllowed) {
  const int64_t whole = NewDataset("whole", 1.0, 0);
  ASSERT_OK_AND_ASSIGN(DebitResult r, ledger_->Debit(whole, Alloc("all", 1.0)));
  EXPECT_EQ(r.budget.epsilon_spent(), 1.0);
  EXPECT_EQ(r.budget.epsilon_remaining(), 0.0);

  // Exactly to the budget after earlier charges (sums exact in binary).
  const int64_t parts = NewDataset("parts", 0.75, 0);
  ASSERT_THAT(ledger_->Debit(parts, Alloc("a", 0.5)), IsOk());
  ASSERT_OK_AND_ASSIGN(DebitResult last, ledger_->Debit(parts, Alloc("b", 0.25)));
  EXPECT_EQ(last.budget.epsilon_spent(), 0.75);
  // Then nothing more fits.
  EXPECT_THAT(ledger_->Debit(parts, Alloc("c", 0.125)),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(BudgetLedgerTest, ChargeOneUnitOverAFreshBudgetIsRefused) {
  const int64_t ds = NewDataset("unit_over", 1.0, 0);
  EXPECT_THAT(ledger_->Debit(ds, Alloc("over", 1.0 + 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(AuditRows(ds), 0);
  EXPECT_THAT(ledger_->Debit(ds, Alloc("exact", 1.0)), IsOk());
}

// Sums are exact integers: a charge that exceeds what remains by one unit (1e-12) is refused,
// where double arithmetic (0.5 + (0.5 + 2^-53) rounds to 1.0) would have admitted it.
TEST_F(BudgetLedgerTest, ChargeOneUnitOverTheRemainingBudgetIsRefused) {
  const int64_t ds = NewDataset("unit_rest", 1.0, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("half", 0.5)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds, Alloc("over", 0.5 + 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(AuditRows(ds), 1);
}

TEST_F(BudgetLedgerTest, ExhaustedBudgetRefusesEvenTheSmallestCharge) {
  const int64_t ds = NewDataset("tiny", 1.0, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("all", 1.0)), IsOk());
  EXPECT_THAT(ledger_->Debit(ds, Alloc("tiny", 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(AuditRows(ds), 1);
}

// Three charges of 0.1 spend a budget of 0.3 exactly (in doubles 0.1 + 0.1 + 0.1 > 0.3).
TEST_F(BudgetLedgerTest, DecimalChargesSpendADecimalBudgetExactly) {
  const int64_t ds = NewDataset("decimal", 0.3, 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_THAT(ledger_->Debit(ds, Alloc(absl::StrCat("d", i), 0.1)), IsOk());
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent(), 0.3);
  EXPECT_EQ(b.epsilon_remaining_units(), 0);
  EXPECT_THAT(ledger_->Debit(ds, Alloc("more", 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(BudgetLedgerTest, DeltaBudgetIsEnforcedIndependentlyOfEpsilon) {
  const int64_t ds = NewDataset("delta", 100, 1e-5);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("g1", 0.1, 6e-6)), IsOk());
  // Plenty of epsilon left, but delta would reach 1.1e-5 > 1e-5.
  EXPECT_THAT(ledger_->Debit(ds, Alloc("g2", 0.1, 5e-6)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("delta")));
  ASSERT_THAT(ledger_->Debit(ds, Alloc("g3", 0.1, 3e-6)), IsOk());
  // Pure-DP (delta 0) charges still fit while delta is nearly gone.
  ASSERT_THAT(ledger_->Debit(ds, Alloc("l1", 0.1, 0)), IsOk());
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.delta_spent_units, DelU(9e-6));
  EXPECT_EQ(AuditRows(ds), 3);

  // A zero delta budget admits pure-DP charges and refuses any approximate-DP one.
  const int64_t pure = NewDataset("pure", 1, 0);
  EXPECT_THAT(ledger_->Debit(pure, Alloc("l", 0.5, 0)), IsOk());
  EXPECT_THAT(ledger_->Debit(pure, Alloc("g", 0.1, 1e-12)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  // Epsilon exhausted with delta to spare is refused too.
  const int64_t eps_only = NewDataset("eps_gone", 0.5, 0.5);
  EXPECT_THAT(ledger_->Debit(eps_only, Alloc("g", 0.6, 1e-9)),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(BudgetLedgerTest, ReplaySameRequestIdAndFingerprintReturnsStoredAnswerWithoutCharging) {
  const int64_t ds = NewDataset("replay", 1.0, 0);
  ASSERT_OK_AND_ASSIGN(DebitResult first, ledger_->Debit(ds, Alloc("req-1", 0.75)));
  ASSERT_FALSE(first.replayed);

  // The retry carries a different noisy value (a fresh draw); the stored answer must win.
  Allocation retry = Alloc("req-1", 0.75);
  retry.value = 12345;
  ASSERT_OK_AND_ASSIGN(DebitResult second, ledger_->Debit(ds, retry));
  EXPECT_TRUE(second.replayed);
  EXPECT_EQ(second.allocation.value, first.allocation.value);
  EXPECT_EQ(second.allocation.seq, first.allocation.seq);
  EXPECT_EQ(second.allocation.hash, first.allocation.hash);
  EXPECT_EQ(second.allocation.created_at, first.allocation.created_at);
  EXPECT_EQ(second.budget.epsilon_spent(), 0.75);
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent(), 0.75);
  EXPECT_EQ(AuditRows(ds), 1);

  // A replay must succeed even when the charge would no longer fit (0.75 + 0.75 > 1).
  ASSERT_OK_AND_ASSIGN(DebitResult third, ledger_->Debit(ds, Alloc("req-1", 0.75)));
  EXPECT_TRUE(third.replayed);
  EXPECT_EQ(AuditRows(ds), 1);
}

// StoreRelease from the paid allocation (the query path's one autocommitted INSERT): the first
// release stored is the answer for ever, whichever call returns it; a paid allocation whose hash is
// not its row's stores nothing by that INSERT, and the checked path binds the release to the row's
// real hash; a row without a deferred answer, or no row, is refused as by seq.
TEST_F(BudgetLedgerTest, StoreReleaseOfThePaidAllocationKeepsTheFirstReleaseBoundToItsRow) {
  const int64_t ds = NewDataset("releases", 10, 0);
  Allocation deferred = Alloc("r-1", 1);
  deferred.release_deferred = true;
  ASSERT_OK_AND_ASSIGN(DebitResult paid, ledger_->Debit(ds, deferred));
  Allocation::Release first{41.5, 40.0, 43.0, "", ""};
  ASSERT_OK_AND_ASSIGN(Allocation out, ledger_->StoreRelease(ds, paid.allocation, first));
  ASSERT_TRUE(out.release.has_value());
  EXPECT_EQ(out.release->value, 41.5);
  EXPECT_EQ(out.release->hash,
            ReleaseHash(paid.allocation.hash, ds, paid.allocation.seq, 41.5, 40.0, 43.0, ""));
  ASSERT_OK_AND_ASSIGN(absl::optional<Allocation> stored, ledger_->FindAllocation(ds, "r-1"));
  ASSERT_TRUE(stored.has_value() && stored->release.has_value());
  // What the fast path returns is exactly what a re-read returns.
  EXPECT_EQ(stored->release->hash, out.release->hash);
  EXPECT_EQ(stored->release->value, out.release->value);
  EXPECT_EQ(stored->release->ci_upper, out.release->ci_upper);
  EXPECT_EQ(stored->created_at, out.created_at);
  EXPECT_EQ(stored->hash, out.hash);
  EXPECT_EQ(stored->seq, out.seq);

  // A second release (a retry's fresh draw) loses to the first, by either path.
  Allocation::Release second{99, 98, 100, "", ""};
  ASSERT_OK_AND_ASSIGN(Allocation again, ledger_->StoreRelease(ds, paid.allocation, second));
  ASSERT_TRUE(again.release.has_value());
  EXPECT_EQ(again.release->value, 41.5);
  EXPECT_EQ(again.release->hash, out.release->hash);

  // A stale or forged hash in the caller's copy: nothing is stored under it.
  ASSERT_OK_AND_ASSIGN(DebitResult paid2, ledger_->Debit(ds, [&] {
    Allocation a = Alloc("r-2", 1);
    a.release_deferred = true;
    return a;
  }()));
  Allocation forged = paid2.allocation;
  forged.hash = std::string(32, 'x');
  ASSERT_OK_AND_ASSIGN(Allocation bound, ledger_->StoreRelease(ds, forged, first));
  ASSERT_TRUE(bound.release.has_value());
  EXPECT_EQ(bound.hash, paid2.allocation.hash);
  EXPECT_EQ(bound.release->hash,
            ReleaseHash(paid2.allocation.hash, ds, paid2.allocation.seq, 41.5, 40.0, 43.0, ""));

  // An answer carried inline (not deferred), and a seq that does not exist.
  ASSERT_OK_AND_ASSIGN(DebitResult inline_answer, ledger_->Debit(ds, Alloc("r-3", 1)));
  EXPECT_THAT(ledger_->StoreRelease(ds, inline_answer.allocation, first),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  Allocation missing = paid2.allocation;
  missing.seq = 1000;
  EXPECT_THAT(ledger_->StoreRelease(ds, missing, first), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger_->Verify(ds));
  EXPECT_TRUE(v.ok) << v.reason;
}

TEST_F(BudgetLedgerTest, SameRequestIdWithDifferentFingerprintIsAlreadyExists) {
  const int64_t ds = NewDataset("conflict", 10, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("req", 1, 0, "fp-A")), IsOk());
  EXPECT_THAT(ledger_->Debit(ds, Alloc("req", 1, 0, "fp-B")),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("req")));
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent(), 1);
  EXPECT_EQ(AuditRows(ds), 1);
}

TEST_F(BudgetLedgerTest, SetRaisesAndLowersTotalsButNeverBelowSpent) {
  const int64_t ds = NewDataset("set", 2.0, 1e-5);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("a", 1.5, 4e-6)), IsOk());

  EXPECT_THAT(SetBudget(ds, 1.25, 1e-5),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("spent")));
  EXPECT_THAT(SetBudget(ds, 5, 3e-6), StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(BudgetState unchanged, ledger_->Get(ds));
  EXPECT_EQ(unchanged.epsilon_total(), 2.0);
  EXPECT_EQ(unchanged.delta_total(), 1e-5);

  // Raise: the extra budget is usable at once.
  ASSERT_OK_AND_ASSIGN(BudgetState raised, SetBudget(ds, 4.0, 2e-5));
  EXPECT_EQ(raised.epsilon_total(), 4.0);
  EXPECT_EQ(raised.epsilon_spent(), 1.5);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("b", 2.0)), IsOk());

  // Lower, down to exactly what is spent: allowed, and then nothing more fits.
  ASSERT_OK_AND_ASSIGN(BudgetState lowered, SetBudget(ds, 3.5, 4e-6));
  EXPECT_EQ(lowered.epsilon_total(), 3.5);
  EXPECT_EQ(lowered.delta_total(), 4e-6);
  ASSERT_OK_AND_ASSIGN(BudgetState got, ledger_->Get(ds));
  EXPECT_EQ(got.epsilon_total(), 3.5);
  EXPECT_EQ(got.delta_total(), 4e-6);
  EXPECT_EQ(got.epsilon_spent(), 3.5);
  EXPECT_EQ(got.epsilon_remaining(), 0);
  EXPECT_THAT(ledger_->Debit(ds, Alloc("c", 0.01)), StatusIs(absl::StatusCode::kResourceExhausted));
  // Set never touches the audit chain.
  EXPECT_EQ(AuditRows(ds), 2);
}

TEST_F(BudgetLedgerTest, UnknownDatasetIsNotFound) {
  NewDataset("exists", 1, 0);
  const int64_t unknown = 987654;
  EXPECT_THAT(ledger_->Get(unknown), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(SetBudget(unknown, 1, 0), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(ledger_->Debit(unknown, Alloc("r", 0.1)), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(Sql("SELECT count(*) FROM audit"), "0");
}

TEST_F(BudgetLedgerTest, AuditTableRefusesUpdateDeleteAndTruncate) {
  const int64_t ds = NewDataset("append_only", 10, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("a", 1)), IsOk());
  ASSERT_THAT(ledger_->Debit(ds, Alloc("b", 2)), IsOk());
  const std::string snapshot =
      Sql("SELECT seq, epsilon_units, encode(hash, 'hex') FROM audit ORDER BY seq");

  EXPECT_THAT(TrySql("UPDATE audit SET epsilon_units = 1 WHERE seq = 1"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("append-only")));
  EXPECT_THAT(TrySql("DELETE FROM audit WHERE seq = 2"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("append-only")));
  // `releases` references audit (migration 0007): a lone TRUNCATE is refused by the foreign key,
  // and one that takes both tables by their triggers.
  EXPECT_THAT(TrySql("TRUNCATE audit"), StatusIs(absl::StatusCode::kInternal));
  EXPECT_THAT(TrySql("TRUNCATE audit, releases"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("append-only")));
  EXPECT_THAT(TrySql("TRUNCATE audit CASCADE"), StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(Sql("SELECT seq, epsilon_units, encode(hash, 'hex') FROM audit ORDER BY seq"),
            snapshot);
  ASSERT_OK_AND_ASSIGN(auto rows, ledger_->ListAllocations(ds));
  EXPECT_EQ(FirstBrokenLink(ds, rows), 0);
}

TEST_F(BudgetLedgerTest, TamperingWithTriggerDisabledBreaksTheHashChain) {
  const int64_t ds = NewDataset("tamper", 10, 0);
  for (int i = 0; i < 4; ++i)
    ASSERT_THAT(ledger_->Debit(ds, Alloc(absl::StrCat("r", i), 1)), IsOk());
  ASSERT_OK_AND_ASSIGN(auto clean, ledger_->ListAllocations(ds));
  ASSERT_EQ(FirstBrokenLink(ds, clean), 0);

  // The table owner hides part of a charge: content changes, the stored hash does not.
  Sql(
      absl::StrCat("ALTER TABLE audit DISABLE TRIGGER audit_append_only; "
                   "UPDATE audit SET epsilon_units = 500000000000 WHERE population_id = ",
                   ds,
                   " AND seq = 2; "
                   "ALTER TABLE audit ENABLE TRIGGER audit_append_only"));
  ASSERT_OK_AND_ASSIGN(auto tampered, ledger_->ListAllocations(ds));
  ASSERT_EQ(tampered.size(), 4u);
  EXPECT_EQ(tampered[1].epsilon(), 0.5);
  EXPECT_EQ(tampered[1].hash, clean[1].hash);
  EXPECT_NE(ChainHash(tampered[1].prev_hash, ds, tampered[1]), tampered[1].hash);
  EXPECT_EQ(FirstBrokenLink(ds, tampered), 2);

  // Re-hashing the altered row as well only moves the break to the next link.
  Sql(absl::StrCat(
      "ALTER TABLE audit DISABLE TRIGGER audit_append_only; "
      "UPDATE audit SET hash = '\\x",
      ToHex(ChainHash(tampered[1].prev_hash, ds, tampered[1])), "' WHERE population_id = ", ds,
      " AND seq = 2; "
      "ALTER TABLE audit ENABLE TRIGGER audit_append_only"));
  ASSERT_OK_AND_ASSIGN(auto rehashed, ledger_->ListAllocations(ds));
  EXPECT_EQ(FirstBrokenLink(ds, rehashed), 3);

  // The trigger is back on: the table refuses changes again.
  EXPECT_THAT(TrySql("UPDATE audit SET epsilon_units = 1 WHERE seq = 2"),
              StatusIs(absl::StatusCode::kInternal));
}

TEST_F(BudgetLedgerTest, ConcurrentDebitsOnOneDatasetKeepLedgerAndAuditConsistent) {
  constexpr int kThreads = 8;
  constexpr int kDebitsPerThread = 50;
  // Expected demand about 400 * 0.055 = 22: the budget runs out around a third of the way in.
  const double kBudget = 7.5;
  const int64_t ds = NewDataset("hot", kBudget, 1e-4);

  struct Outcome {
    std::string request_id;
    double epsilon = 0, delta = 0;
    absl::StatusCode code = absl::StatusCode::kUnknown;
    std::string message;
    int64_t seq = 0;
  };
  std::vector<std::vector<Outcome>> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      BudgetLedger ledger(db());  // one per thread, sharing the pool
      std::mt19937_64 gen(1000 + t);
      std::uniform_real_distribution<double> eps(0.01, 0.1);
      std::bernoulli_distribution gaussian(0.25);
      for (int i = 0; i < kDebitsPerThread; ++i) {
        Outcome o;
        o.request_id = absl::StrCat("t", t, "-", i);
        o.epsilon = eps(gen);
        o.delta = gaussian(gen) ? 1e-7 : 0;
        auto r = ledger.Debit(ds, Alloc(o.request_id, o.epsilon, o.delta));
        o.code = r.status().code();
        o.message = std::string(r.status().message());
        if (r.ok()) o.seq = r->allocation.seq;
        outcomes[t].push_back(o);
      }
    });
  }
  for (auto& th : threads) th.join();

  ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger_->ListAllocations(ds));
  ASSERT_OK_AND_ASSIGN(BudgetState budget, ledger_->Get(ds));
  std::map<std::string, const Allocation*> by_id;
  for (const Allocation& a : rows) {
    EXPECT_TRUE(by_id.emplace(a.request_id, &a).second) << "two audit rows for " << a.request_id;
  }

  // Seqs 1..N without gaps, chain intact.
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i].seq, static_cast<int64_t>(i) + 1);
  EXPECT_EQ(FirstBrokenLink(ds, rows), 0);

  // Ledger == sum of audit rows, added in seq order exactly as the ledger does.
  int64_t eps_sum = 0, delta_sum = 0;
  for (const Allocation& a : rows) {
    eps_sum += a.epsilon_units;
    delta_sum += a.delta_units;
  }
  EXPECT_EQ(budget.epsilon_spent_units, eps_sum);
  EXPECT_EQ(budget.delta_spent_units, delta_sum);
  EXPECT_LE(budget.epsilon_spent_units, EpsU(kBudget));
  EXPECT_LE(budget.delta_spent_units, DelU(1e-4));

  int ok = 0, refused = 0;
  for (const auto& per_thread : outcomes) {
    for (const Outcome& o : per_thread) {
      auto it = by_id.find(o.request_id);
      if (o.code == absl::StatusCode::kOk) {
        ++ok;
        ASSERT_NE(it, by_id.end()) << o.request_id << " returned OK without an audit row";
        EXPECT_EQ(it->second->epsilon_units, EpsU(o.epsilon));
        EXPECT_EQ(it->second->delta_units, DelU(o.delta));
        EXPECT_EQ(it->second->seq, o.seq);
      } else if (o.code == absl::StatusCode::kResourceExhausted) {
        ++refused;
        EXPECT_EQ(it, by_id.end()) << o.request_id << " was refused but has an audit row";
        // Spent only grows, so a refused charge does not fit the final state either: no refusal
        // was spurious.
        EXPECT_TRUE(budget.epsilon_spent_units + EpsU(o.epsilon) > EpsU(kBudget) ||
                    budget.delta_spent_units + DelU(o.delta) > DelU(1e-4))
            << o.request_id;
      } else {
        ADD_FAILURE() << o.request_id << ": unexpected status " << absl::StatusCodeToString(o.code)
                      << ": " << o.message;
      }
    }
  }
  EXPECT_EQ(ok, static_cast<int>(rows.size()));
  EXPECT_EQ(ok + refused, kThreads * kDebitsPerThread);
  EXPECT_GT(ok, 20);        // the budget was really used
  EXPECT_GT(refused, 100);  // and really ran out
}

// Two threads racing with one request id: exactly one charge, the other gets the stored answer.
TEST_F(BudgetLedgerTest, ConcurrentRetriesOfOneRequestIdChargeOnce) {
  const int64_t ds = NewDataset("twins", 100, 0);
  constexpr int kRounds = 20;
  constexpr int kThreads = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::string id = absl::StrCat("dup-", round);
    std::vector<absl::StatusOr<DebitResult>> results(kThreads, absl::UnknownError("not run"));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        BudgetLedger ledger(db());
        results[t] = ledger.Debit(ds, Alloc(id, 1));
      });
    }
    for (auto& th : threads) th.join();
    int fresh = 0;
    for (const auto& r : results) {
      ASSERT_THAT(r, IsOk());
      if (!r->replayed) ++fresh;
      EXPECT_EQ(r->allocation.seq, round + 1);
    }
    EXPECT_EQ(fresh, 1) << id;
  }
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent(), kRounds);
  EXPECT_EQ(AuditRows(ds), kRounds);
}

// A debit whose connection dies while it waits for the ledger lock: UNAVAILABLE, nothing charged,
// and a retry with the same request id charges exactly once.
TEST_F(BudgetLedgerTest, ConnectionLostDuringDebitIsUnavailableAndChargesNothing) {
  const int64_t ds = NewDataset("lost", 10, 0);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("before", 1)), IsOk());

  absl::StatusOr<DebitResult> blocked = absl::UnknownError("not run");
  ASSERT_TRUE(KillDebitWaitingForLedgerLock(ds, [&] {
    blocked = ledger_->Debit(ds, Alloc("victim", 2));
  })) << "the debit never waited for the lock";
  EXPECT_THAT(blocked, StatusIs(absl::StatusCode::kUnavailable));

  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));  // the pool reconnects
  EXPECT_EQ(b.epsilon_spent(), 1);
  EXPECT_EQ(AuditRows(ds), 1);
  ASSERT_OK_AND_ASSIGN(DebitResult retry, ledger_->Debit(ds, Alloc("victim", 2)));
  EXPECT_FALSE(retry.replayed);
  EXPECT_EQ(retry.allocation.seq, 2);
  EXPECT_EQ(retry.budget.epsilon_spent(), 3);
}

// Idle pooled connections killed between calls (what a Postgres restart does to them): the pool
// notices the server closed them and reconnects, so the next calls succeed at the first attempt
// and nothing is charged twice.
TEST_F(BudgetLedgerTest, KilledIdleConnectionsAreReplacedBeforeTheNextRequest) {
  const int64_t ds = NewDataset("idle", 10, 0);
  // Fill the pool with several idle connections.
  std::vector<std::thread> warm;
  for (int i = 0; i < 4; ++i) warm.emplace_back([&] { EXPECT_THAT(ledger_->Get(ds), IsOk()); });
  for (std::thread& t : warm) t.join();
  ASSERT_THAT(ledger_->Debit(ds, Alloc("a", 1)), IsOk());
  // pg_terminate_backend(pid, timeout) waits until each backend has exited.
  ASSERT_EQ(Sql("SELECT bool_and(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend'"),
            "t");
  ASSERT_THAT(ledger_->Debit(ds, Alloc("b", 1)), IsOk());
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(ds));
  EXPECT_EQ(b.epsilon_spent(), 2);
  EXPECT_EQ(AuditRows(ds), 2);
}

// (dataset, analyst, epsilon, delta) of a tally, for whole-vector comparisons.
using SpendRow = std::tuple<std::string, std::string, double, double>;
std::vector<SpendRow> Rows(const std::vector<AnalystSpend>& spend) {
  std::vector<SpendRow> out;
  for (const AnalystSpend& s : spend) out.emplace_back(s.population, s.analyst, s.epsilon, s.delta);
  return out;
}

TEST_F(BudgetLedgerTest, SpendTallyAndListBudgetsSummariseEveryDataset) {
  ASSERT_OK_AND_ASSIGN(Principal bob, CreatePrincipal("bob"));
  const int64_t b_ds = NewDataset("beta", 10, 1e-6);
  const int64_t a_ds = NewDataset("alpha", 5, 1e-6);
  SpendTally tally(db());
  ASSERT_OK_AND_ASSIGN(auto empty, tally.Refresh());
  EXPECT_TRUE(empty.empty());
  ASSERT_THAT(ledger_->Debit(b_ds, Alloc("1", 1.5)), IsOk());
  ASSERT_THAT(ledger_->Debit(b_ds, Alloc("2", 0.25)), IsOk());
  Allocation by_bob = Alloc("3", 2, 1e-7);
  by_bob.principal_id = bob.id;
  by_bob.analyst = "bob";
  ASSERT_THAT(ledger_->Debit(b_ds, by_bob), IsOk());
  ASSERT_THAT(ledger_->Debit(a_ds, Alloc("1", 0.5)), IsOk());

  ASSERT_OK_AND_ASSIGN(auto spend, tally.Refresh());
  EXPECT_EQ(Rows(spend),
            (std::vector<SpendRow>{
                {"alpha", "alice", 0.5, 0}, {"beta", "alice", 1.75, 0}, {"beta", "bob", 2, 1e-7}}));
  EXPECT_EQ(tally.rows_folded(), 4);

  // Incremental: a second scrape reads only the two new rows, and adds them to what it had.
  ASSERT_THAT(ledger_->Debit(a_ds, Alloc("2", 0.125)), IsOk());
  by_bob.request_id = "4";
  ASSERT_THAT(ledger_->Debit(a_ds, by_bob), IsOk());
  ASSERT_OK_AND_ASSIGN(spend, tally.Refresh());
  EXPECT_EQ(tally.rows_folded(), 6);
  const std::vector<SpendRow> want = {{"alpha", "alice", 0.625, 0},
                                      {"alpha", "bob", 2, 1e-7},
                                      {"beta", "alice", 1.75, 0},
                                      {"beta", "bob", 2, 1e-7}};
  EXPECT_EQ(Rows(spend), want);
  ASSERT_OK_AND_ASSIGN(auto again, tally.Refresh());
  EXPECT_EQ(tally.rows_folded(), 6);  // nothing new: nothing read
  EXPECT_EQ(Rows(again), want);

  // A fresh tally (a restarted dpqd) reads the whole history once and agrees with the running one.
  SpendTally fresh(db());
  ASSERT_OK_AND_ASSIGN(auto from_scratch, fresh.Refresh());
  EXPECT_EQ(Rows(from_scratch), want);
  EXPECT_EQ(fresh.rows_folded(), 6);

  ASSERT_OK_AND_ASSIGN(auto budgets, ledger_->ListBudgets());
  ASSERT_EQ(budgets.size(), 2u);
  EXPECT_EQ(budgets[0].population, "alpha");
  EXPECT_EQ(budgets[0].epsilon_total(), 5);
  EXPECT_EQ(budgets[0].delta_total(), 1e-6);
  EXPECT_EQ(budgets[0].epsilon_spent(), 2.625);
  EXPECT_EQ(budgets[1].population, "beta");
  EXPECT_EQ(budgets[1].epsilon_spent(), 3.75);
  EXPECT_EQ(budgets[1].delta_spent(), 1e-7);
}

TEST_F(BudgetLedgerTest, SpendTallyHistoryCountsRowsAndEpsilonPerWindow) {
  const int64_t ds = NewDataset("hist", 10, 1e-6);
  ASSERT_THAT(ledger_->Debit(ds, Alloc("1", 1)), IsOk());
  ASSERT_THAT(ledger_->Debit(ds, Alloc("2", 0.5)), IsOk());
  ASSERT_THAT(ledger_->Debit(ds, Alloc("3", 0.25)), IsOk());
  // Backdate the first two rows by 2 hours and 3 days; only a test may (append-only trigger off).
  Sql(absl::StrCat(
      "ALTER TABLE audit DISABLE TRIGGER audit_append_only; "
      "UPDATE audit SET created_at = now() - interval '2 hours' WHERE population_id = ",
      ds,
      " AND seq = 1; UPDATE audit SET created_at = now() - interval '3 days' "
      "WHERE population_id = ",
      ds,
      " AND seq = 2; "
      "ALTER TABLE audit ENABLE TRIGGER audit_append_only"));
  const std::vector<int64_t> windows = {3600, 86400, 7 * 86400};
  SpendTally tally(db());
  ASSERT_THAT(tally.Refresh().status(), IsOk());
  std::vector<PopulationHistory> h = tally.History(windows);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].population, "hist");
  EXPECT_EQ(h[0].audit_rows, 3);
  EXPECT_EQ(h[0].epsilon_recent, (std::vector<double>{0.25, 1.25, 1.75}));

  // Incremental: the next refresh folds in only the new row.
  ASSERT_THAT(ledger_->Debit(ds, Alloc("4", 0.125)), IsOk());
  ASSERT_THAT(tally.Refresh().status(), IsOk());
  EXPECT_EQ(tally.rows_folded(), 4);
  h = tally.History(windows);
  EXPECT_EQ(h[0].audit_rows, 4);
  EXPECT_EQ(h[0].epsilon_recent, (std::vector<double>{0.375, 1.375, 1.875}));
}

}  // namespace
}  // namespace dpq::store
