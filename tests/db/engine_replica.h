// What one dpqd holds, for db tests that run several against one database (two dpqd behind one
// load balancer): its own connection pool, stores, result cache, random source and engine.
#ifndef DPQ_TESTS_DB_ENGINE_REPLICA_H_
#define DPQ_TESTS_DB_ENGINE_REPLICA_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"

namespace dpq::testing {

// SeededRandom is not thread-safe; a dpqd's random source is shared by its request threads.
class LockedRandom final : public dp::RandomSource {
 public:
  explicit LockedRandom(uint64_t seed) : rng_(seed) {}
  uint64_t NextUint64() override {
    std::lock_guard<std::mutex> lock(mu_);
    return rng_.NextUint64();
  }

 private:
  std::mutex mu_;
  dp::SeededRandom rng_;
};

struct EngineReplica {
  explicit EngineReplica(uint64_t seed) : rng(seed) {}
  LockedRandom rng;
  std::unique_ptr<store::Database> db;
  std::unique_ptr<store::DatasetStore> datasets;
  std::unique_ptr<store::PrincipalStore> principals;
  std::unique_ptr<store::BudgetLedger> ledger;
  std::unique_ptr<store::AggregateScanner> scanner;
  std::unique_ptr<store::ResultCache> cache;
  std::unique_ptr<engine::QueryEngine> engine;
};

// A replica on `url` with a pool of `pool_size` connections and a random source seeded `seed`.
inline absl::StatusOr<std::unique_ptr<EngineReplica>> OpenEngineReplica(const std::string& url,
                                                                        int pool_size,
                                                                        uint64_t seed) {
  auto r = std::make_unique<EngineReplica>(seed);
  absl::StatusOr<std::unique_ptr<store::Database>> db = store::Database::Open(url, pool_size);
  if (!db.ok()) return db.status();
  r->db = std::move(*db);
  r->datasets = std::make_unique<store::DatasetStore>(r->db.get());
  r->principals = std::make_unique<store::PrincipalStore>(r->db.get());
  r->ledger = std::make_unique<store::BudgetLedger>(r->db.get());
  r->scanner = std::make_unique<store::AggregateScanner>(r->db.get());
  r->cache = std::make_unique<store::ResultCache>(r->db.get());
  r->engine = std::make_unique<engine::QueryEngine>(
      engine::QueryEngine::Stores{r->datasets.get(), r->principals.get(), r->ledger.get(),
                                  r->scanner.get(), r->cache.get()},
      &r->rng);
  return r;
}

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_ENGINE_REPLICA_H_
