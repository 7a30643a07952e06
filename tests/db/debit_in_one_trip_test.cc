// The debit in one round trip (server/store/known_ledgers.h, debit_write.h): a group whose rows
// this process remembers is written by one autocommitted statement that checks, under the locks,
// that every row it was decided on is unchanged. Whatever changed those rows meanwhile (an admin's
// budget or cap, another dpqd's debits), nothing is written on a stale decision: the group runs
// the locked path and gets the answer the locked path alone would have given.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/store/budget_ledger.h"
#include "server/store/known_ledgers.h"
#include "server/store/principal_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::dpq::testing::SumAllocation;

class DebitInOneTripTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    ASSERT_OK_AND_ASSIGN(bob_, CreatePrincipal("bob"));
    ledger_ = std::make_unique<BudgetLedger>(db());
  }

  int64_t NewDataset(const std::string& name, double epsilon) {
    auto created = CreateTinyDataset(name);
    EXPECT_THAT(created, IsOk());
    if (!created.ok()) return -1;
    const int64_t population = created->schema.population_id;
    EXPECT_THAT(ledger_->Set(population, EpsU(epsilon), 0, ""), IsOk());
    PrincipalStore principals(db());
    EXPECT_THAT(principals.Grant("alice", name), IsOk());
    EXPECT_THAT(principals.Grant("bob", name), IsOk());
    return population;
  }

  // A debit as the engine makes it for a request without a caller's id: a fresh, server-drawn id.
  static Allocation Fresh(const Principal& who, double epsilon) {
    static std::atomic<int> next{0};
    Allocation a = SumAllocation(who, absl::StrCat("fresh-", next++), epsilon);
    a.request_id_is_fresh = true;
    return a;
  }

  static KnownLedgers::Stats Stats() { return KnownLedgers::Shared().stats(); }

  int64_t Count(const std::string& sql) {
    const std::string n = Sql(sql);
    return n.empty() ? -1 : std::stoll(n);
  }
  int64_t AuditRows(int64_t population) {
    return Count(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", population));
  }
  // The ledger's spend, the sum of its audit rows and a verified chain of `rows` entries.
  void ExpectLedgerMatchesAudit(int64_t population, int64_t rows) {
    EXPECT_EQ(AuditRows(population), rows);
    ASSERT_OK_AND_ASSIGN(BudgetState b, ledger_->Get(population));
    EXPECT_EQ(b.epsilon_spent_units,
              Count(absl::StrCat("SELECT coalesce(sum(epsilon_units), 0) FROM audit WHERE "
                                 "population_id = ",
                                 population)));
    EXPECT_LE(b.epsilon_spent_units, b.epsilon_total_units);
    EXPECT_EQ(Count(absl::StrCat("SELECT sum(epsilon_spent_units) FROM population_caps WHERE "
                                 "population_id = ",
                                 population)),
              b.epsilon_spent_units);
    ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger_->Verify(population));
    EXPECT_TRUE(v.ok) << v.reason;
    EXPECT_EQ(v.entries, rows);
  }

  Principal alice_, bob_;
  std::unique_ptr<BudgetLedger> ledger_;
};

// The first debit of a population runs the locked path and remembers its rows; the next ones are
// written in one trip, chained onto the head the first left, and the ledger adds up.
TEST_F(DebitInOneTripTest, DebitsAfterTheFirstAreWrittenInOneTripAndChainOntoIt) {
  const int64_t pop = NewDataset("warm", 10);
  const KnownLedgers::Stats before = Stats();
  ASSERT_OK_AND_ASSIGN(DebitResult first, ledger_->Debit(pop, Fresh(alice_, 1)));
  EXPECT_EQ(Stats().one_trip, before.one_trip);
  ASSERT_OK_AND_ASSIGN(DebitResult second, ledger_->Debit(pop, Fresh(alice_, 1)));
  ASSERT_OK_AND_ASSIGN(DebitResult third, ledger_->Debit(pop, Fresh(bob_, 2)));  // bob: locked
  ASSERT_OK_AND_ASSIGN(DebitResult fourth, ledger_->Debit(pop, Fresh(bob_, 2)));
  EXPECT_EQ(Stats().one_trip, before.one_trip + 2) << "alice's second and bob's second";
  EXPECT_EQ(Stats().changed, before.changed);
  EXPECT_EQ(second.allocation.seq, first.allocation.seq + 1);
  EXPECT_EQ(second.allocation.prev_hash, first.allocation.hash);
  EXPECT_EQ(fourth.allocation.prev_hash, third.allocation.hash);
  EXPECT_FALSE(second.allocation.created_at.empty());
  EXPECT_EQ(fourth.budget.epsilon_spent_units, EpsU(6));
  ExpectLedgerMatchesAudit(pop, 4);
}

// An admin lowers the budget behind this process's back: the remembered ledger row no longer
// matches, so the one-trip write writes nothing, and the locked path refuses the debit.
TEST_F(DebitInOneTripTest, ABudgetLoweredElsewhereRefusesTheNextDebitAndWritesNothing) {
  const int64_t pop = NewDataset("lowered", 10);
  ASSERT_THAT(ledger_->Debit(pop, Fresh(alice_, 1)), IsOk());
  Sql(absl::StrCat("UPDATE ledgers SET epsilon_total_units = ", EpsU(1.5),
                   " WHERE population_id = ", pop));
  const KnownLedgers::Stats before = Stats();
  EXPECT_THAT(ledger_->Debit(pop, Fresh(alice_, 1)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Stats().changed, before.changed + 1);
  ExpectLedgerMatchesAudit(pop, 1);
  // The locked path refreshed what is remembered: the next debit that fits goes in one trip.
  ASSERT_THAT(ledger_->Debit(pop, Fresh(alice_, 0.5)), IsOk());
  EXPECT_EQ(Stats().one_trip, before.one_trip + 1);
  ExpectLedgerMatchesAudit(pop, 2);
}

// A cap set on the analyst meanwhile (another session's `dpqctl grant --epsilon-cap`): the
// remembered grant row no longer matches, and the locked path refuses what the cap forbids.
TEST_F(DebitInOneTripTest, ACapSetElsewhereRefusesTheNextDebitAndWritesNothing) {
  const int64_t pop = NewDataset("capped", 10);
  ASSERT_THAT(ledger_->Debit(pop, Fresh(alice_, 1)), IsOk());
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> admin, Database::Open(url(), 1));
    PrincipalStore principals(admin.get());
    ASSERT_THAT(principals.Grant("alice", "capped", EpsU(1.5)), IsOk());
  }
  const KnownLedgers::Stats before = Stats();
  EXPECT_THAT(ledger_->Debit(pop, Fresh(alice_, 1)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Stats().changed, before.changed + 1);
  ExpectLedgerMatchesAudit(pop, 1);
}

// Two dpqd processes (two Databases: their own batchers' keys and remembered rows) debit one
// population by turns: each finds the ledger moved by the other, writes nothing on its stale
// rows, and decides again under the lock. The chain stays whole and the ledger adds up.
TEST_F(DebitInOneTripTest, AnotherProcessDebitingByTurnsNeverBreaksTheChain) {
  const int64_t pop = NewDataset("shared", 100);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> other_db, Database::Open(url(), 2));
  BudgetLedger other(other_db.get());
  const KnownLedgers::Stats before = Stats();
  constexpr int kTurns = 6;
  for (int i = 0; i < kTurns; ++i) {
    ASSERT_THAT(ledger_->Debit(pop, Fresh(alice_, 1)), IsOk());
    ASSERT_THAT(other.Debit(pop, Fresh(bob_, 1)), IsOk());
  }
  // Each process's first debit runs locked; every later one first tries its stale rows.
  EXPECT_EQ(Stats().changed, before.changed + 2 * (kTurns - 1));
  EXPECT_EQ(Stats().one_trip, before.one_trip);
  ExpectLedgerMatchesAudit(pop, 2 * kTurns);
}

// Many threads of two processes at once, until the budget runs out: never over budget, one audit
// row per OK, every refusal RESOURCE_EXHAUSTED, the chain whole.
TEST_F(DebitInOneTripTest, TwoProcessesUnderLoadSpendTheBudgetExactly) {
  constexpr int kThreads = 16, kPerThread = 12;
  constexpr double kBudget = 100;  // 192 debits of 1: 100 fit
  const int64_t pop = NewDataset("load", kBudget);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> other_db, Database::Open(url(), 4));
  std::atomic<int> ok{0}, refused{0}, other_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      BudgetLedger ledger(t % 2 == 0 ? db() : other_db.get());
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<DebitResult> r = ledger.Debit(pop, Fresh(t % 3 == 0 ? bob_ : alice_, 1));
        if (r.ok()) {
          ++ok;
        } else if (r.status().code() == absl::StatusCode::kResourceExhausted) {
          ++refused;
        } else {
          ++other_errors;
          ADD_FAILURE() << r.status();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(ok.load(), static_cast<int>(kBudget));
  EXPECT_EQ(refused.load(), kThreads * kPerThread - static_cast<int>(kBudget));
  ExpectLedgerMatchesAudit(pop, static_cast<int64_t>(kBudget));
}

}  // namespace
}  // namespace dpq::store
