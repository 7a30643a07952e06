// A StoreTest with every store of the query path and a QueryEngine on a seeded generator, for the
// db tests of the engine (query_engine_test, aggregate_language_test, query_batch_test).
#ifndef DPQ_TESTS_DB_ENGINE_TEST_ENV_H_
#define DPQ_TESTS_DB_ENGINE_TEST_ENV_H_

#include <cstdint>
#include <memory>

#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "tests/db/store_test_env.h"

namespace dpq::testing {

class EngineTest : public StoreTest {
 protected:
  explicit EngineTest(uint64_t seed) : rng_(seed) {}

  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    datasets_ = std::make_unique<store::DatasetStore>(db());
    principals_ = std::make_unique<store::PrincipalStore>(db());
    ledger_ = std::make_unique<store::BudgetLedger>(db());
    scanner_ = std::make_unique<store::AggregateScanner>(db());
    cache_ = std::make_unique<store::ResultCache>(db());
    engine_ = std::make_unique<engine::QueryEngine>(
        engine::QueryEngine::Stores{datasets_.get(), principals_.get(), ledger_.get(),
                                    scanner_.get(), cache_.get()},
        &rng_);
  }

  dp::SeededRandom rng_;
  std::unique_ptr<store::DatasetStore> datasets_;
  std::unique_ptr<store::PrincipalStore> principals_;
  std::unique_ptr<store::BudgetLedger> ledger_;
  std::unique_ptr<store::AggregateScanner> scanner_;
  std::unique_ptr<store::ResultCache> cache_;
  std::unique_ptr<engine::QueryEngine> engine_;
};

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_ENGINE_TEST_ENV_H_
