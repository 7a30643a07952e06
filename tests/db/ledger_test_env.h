// Shared set-up of the ledger db tests: a migrated database (StoreTest), one analyst "alice" and a
// BudgetLedger over the test's pool, and tiny datasets with or without a budget.
//
//   class AuditTest : public dpq::testing::LedgerTest {};
//   TEST_F(AuditTest, X) { const int64_t ds = NewDataset("d", 10); ledger_->Debit(ds, ...); }
#ifndef DPQ_TESTS_DB_LEDGER_TEST_ENV_H_
#define DPQ_TESTS_DB_LEDGER_TEST_ENV_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/store/budget_ledger.h"
#include "server/store/principal_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::testing {

class LedgerTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(analyst_, CreatePrincipal("alice"));
    ledger_ = std::make_unique<store::BudgetLedger>(db());
  }

  // A new tiny dataset (a population of its own) with the budget a new one gets; returns its
  // population's id, the ledger's key (-1 on failure).
  int64_t NewDataset(const std::string& name) {
    auto created = CreateTinyDataset(name);
    EXPECT_THAT(created, IsOk());
    return created.ok() ? created->schema.population_id : -1;
  }

  // A new tiny dataset with budget (epsilon_total, delta_total) on `accountant` (empty: the
  // default); returns its id (-1 on failure).
  int64_t NewDataset(const std::string& name, double epsilon_total, double delta_total = 0,
                     const std::string& accountant = "") {
    const int64_t id = NewDataset(name);
    if (id < 0) return -1;
    EXPECT_THAT(ledger_->Set(id, EpsU(epsilon_total), DelU(delta_total), accountant), IsOk());
    return id;
  }

  store::Principal analyst_;
  std::unique_ptr<store::BudgetLedger> ledger_;
};

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_LEDGER_TEST_ENV_H_
