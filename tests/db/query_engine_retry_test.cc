// Retries of one request id through the engine, over the real store: twins of a request answered by
// two engines (two dpqd) on one database, and a debit whose connection is lost. A reply to a
// request id that is already charged says `replayed`, never `cached`; every failure whose retry is
// safe is UNAVAILABLE and names the request id to retry with, also when the server drew it.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/database_failure.h"
#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "tests/db/engine_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::Optional;

int64_t Units(double epsilon) {
  return *query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget);
}

// The result cache of the engine under test, with a twin of the request run just before its probe:
// what a second dpqd does when the same request id is retried on it at the same moment, landing
// between this engine's replay check and its cache probe.
class TwinBeforeProbe : public store::ResultCache {
 public:
  explicit TwinBeforeProbe(store::Database* db) : ResultCache(db) {}
  std::function<void()> twin;

  absl::StatusOr<absl::optional<store::CacheHit>> Probe(
      int64_t dataset_id, const std::string& fingerprint, int64_t dataset_version,
      int64_t principal_id, const std::string& own_request_id) override {
    if (twin) {
      std::function<void()> run = std::move(twin);
      twin = nullptr;
      run();
    }
    return ResultCache::Probe(dataset_id, fingerprint, dataset_version, principal_id,
                              own_request_id);
  }
};

class QueryEngineRetryTest : public ::dpq::testing::EngineTest {
 protected:
  QueryEngineRetryTest() : EngineTest(20261205), other_rng_(7) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset ds, CreateTinyDataset("people", 40));
    ds_id_ = ds.schema.population_id;
    ASSERT_THAT(ledger_->Set(ds_id_, Units(1000), 0), IsOk());
    ASSERT_OK_AND_ASSIGN(ann_, CreatePrincipal("ann"));
    ASSERT_OK(principals_->Grant("ann", "people"));
    // The second engine: another pool and other stores on the same database, like a second dpqd.
    ASSERT_OK_AND_ASSIGN(other_db_, store::Database::Open(url(), 4));
    other_datasets_ = std::make_unique<store::DatasetStore>(other_db_.get());
    other_principals_ = std::make_unique<store::PrincipalStore>(other_db_.get());
    other_ledger_ = std::make_unique<store::BudgetLedger>(other_db_.get());
    other_scanner_ = std::make_unique<store::AggregateScanner>(other_db_.get());
    twin_cache_ = std::make_unique<TwinBeforeProbe>(other_db_.get());
    other_ = std::make_unique<QueryEngine>(
        QueryEngine::Stores{other_datasets_.get(), other_principals_.get(), other_ledger_.get(),
                            other_scanner_.get(), twin_cache_.get()},
        &other_rng_);
  }

  static query::QuerySpec Sum(double epsilon) {
    query::QuerySpec s;
    s.dataset = "people";
    s.aggregate = query::AggregateKind::kSum;
    s.column = "x";
    s.lower = 0;
    s.upper = 10;
    s.epsilon = epsilon;
    return s;
  }

  int64_t AuditRowsOf(const std::string& request_id) {
    return std::stoll(
        Sql(absl::StrCat("SELECT count(*) FROM audit WHERE request_id = '", request_id, "'")));
  }
  int64_t Spent() {
    absl::StatusOr<store::BudgetState> b = ledger_->Get(ds_id_);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? b->epsilon_spent_units : -1;
  }

  int64_t ds_id_ = 0;
  store::Principal ann_;
  dp::SeededRandom other_rng_;
  std::unique_ptr<store::Database> other_db_;
  std::unique_ptr<store::DatasetStore> other_datasets_;
  std::unique_ptr<store::PrincipalStore> other_principals_;
  std::unique_ptr<store::BudgetLedger> other_ledger_;
  std::unique_ptr<store::AggregateScanner> other_scanner_;
  std::unique_ptr<TwinBeforeProbe> twin_cache_;
  std::unique_ptr<QueryEngine> other_;
};

// The race seen with two dpqd: the twin is charged and answered after this engine found no
// allocation for the id and before its cache probe, which then found the twin's answer. It used
// to come back `cached` (right value, right charge, wrong flag); it is a replay of the charge.
TEST_F(QueryEngineRetryTest, ATwinAnsweredBeforeTheCacheProbeMakesAReplayNotACacheHit) {
  absl::StatusOr<QueryOutcome> first = absl::UnknownError("twin not run");
  twin_cache_->twin = [&] { first = engine_->Run(ann_, Sum(0.5), "twin-1"); };
  ASSERT_OK_AND_ASSIGN(QueryOutcome second, other_->Run(ann_, Sum(0.5), "twin-1"));
  ASSERT_THAT(first, IsOk());
  EXPECT_FALSE(first->replayed);
  EXPECT_TRUE(second.replayed);
  EXPECT_FALSE(second.cached);
  EXPECT_EQ(second.allocation.value, first->allocation.value);
  EXPECT_EQ(second.allocation.request_id, "twin-1");
  EXPECT_EQ(AuditRowsOf("twin-1"), 1);
  EXPECT_EQ(Spent(), Units(0.5));
}

// The twin is charged but not yet answered (its scan is still running, or failed), while an
// earlier request of the same question by the same analyst is answered, so the cache holds that
// other answer. The reply to the charged id must be that id's own answer (a replay of its charge,
// which runs the scan it paid for), not the other request's cached one.
TEST_F(QueryEngineRetryTest, AChargedTwinWinsOverAnEarlierCachedAnswer) {
  ASSERT_OK_AND_ASSIGN(QueryOutcome earlier, engine_->Run(ann_, Sum(0.5), "earlier-1"));
  ASSERT_OK_AND_ASSIGN(absl::optional<store::Allocation> row,
                       ledger_->FindAllocation(ds_id_, "earlier-1"));
  ASSERT_TRUE(row.has_value());
  // The twin's charge, as its dpqd made it after its own cache probe (which ran before the earlier
  // answer was stored): the same question, so the same fingerprint and events.
  store::Allocation twin = *row;
  twin.request_id = "twin-2";
  twin.release.reset();
  twin_cache_->twin = [&] { ASSERT_THAT(ledger_->Debit(ds_id_, twin), IsOk()); };
  ASSERT_OK_AND_ASSIGN(QueryOutcome second, other_->Run(ann_, Sum(0.5), "twin-2"));
  EXPECT_TRUE(second.replayed);
  EXPECT_FALSE(second.cached);
  EXPECT_EQ(second.allocation.request_id, "twin-2");
  EXPECT_NE(second.allocation.value, earlier.allocation.value);  // its own scan, its own noise
  EXPECT_EQ(AuditRowsOf("twin-2"), 1);
  EXPECT_EQ(Spent(), 2 * Units(0.5));
  // The id's answer is fixed from now on.
  ASSERT_OK_AND_ASSIGN(QueryOutcome again, engine_->Run(ann_, Sum(0.5), "twin-2"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.allocation.value, second.allocation.value);
}

// Twins started together on two engines, many times: one is charged and answered, the other
// replays it; none is ever `cached`, and each id is charged once.
TEST_F(QueryEngineRetryTest, ConcurrentTwinsOnTwoEnginesAreOneChargeAndOneReplay) {
  constexpr int kRounds = 40;
  for (int i = 0; i < kRounds; ++i) {
    const std::string id = absl::StrCat("pair-", i);
    const query::QuerySpec spec = Sum(0.01 + i * 1e-4);  // a new question each round: no cache hit
    std::atomic<int> ready{0};
    absl::StatusOr<QueryOutcome> a = absl::UnknownError("not run"),
                                 b = absl::UnknownError("not run");
    const auto run = [&](QueryEngine* e, absl::StatusOr<QueryOutcome>* out) {
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();
      *out = e->Run(ann_, spec, id);
    };
    std::thread ta(run, engine_.get(), &a);
    std::thread tb(run, other_.get(), &b);
    ta.join();
    tb.join();
    ASSERT_THAT(a, IsOk()) << id;
    ASSERT_THAT(b, IsOk()) << id;
    EXPECT_FALSE(a->cached) << id;
    EXPECT_FALSE(b->cached) << id;
    EXPECT_NE(a->replayed, b->replayed) << id << ": exactly one of the twins is the charge";
    EXPECT_EQ(a->allocation.value, b->allocation.value) << id;
    EXPECT_EQ(AuditRowsOf(id), 1) << id;
  }
}

// A debit whose connection is lost while it waits for the ledger lock (what a PostgreSQL restart
// or pg_terminate_backend does). The client sent no request id, so the server drew one: the
// failure is UNAVAILABLE and names it, and a retry with it charges once.
TEST_F(QueryEngineRetryTest, ALostDebitNamesTheServerDrawnIdAndItsRetryChargesOnce) {
  absl::StatusOr<QueryOutcome> lost = absl::UnknownError("not run");
  ASSERT_TRUE(KillDebitWaitingForLedgerLock(ds_id_, [&] {
    lost = engine_->Run(ann_, Sum(0.25), "");
  })) << "the debit never waited for the lock";
  ASSERT_THAT(lost, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsRetryableDatabaseFailure(lost.status())) << lost.status();
  const absl::optional<std::string> drawn = RequestIdOf(lost.status());
  ASSERT_TRUE(drawn.has_value()) << lost.status();
  EXPECT_TRUE(absl::StartsWith(*drawn, "q-")) << *drawn;
  EXPECT_EQ(Spent(), 0);

  ASSERT_OK_AND_ASSIGN(QueryOutcome retry, engine_->Run(ann_, Sum(0.25), *drawn));
  EXPECT_FALSE(retry.replayed);  // nothing had committed
  EXPECT_EQ(retry.allocation.request_id, *drawn);
  ASSERT_OK_AND_ASSIGN(QueryOutcome again, other_->Run(ann_, Sum(0.25), *drawn));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.allocation.value, retry.allocation.value);
  EXPECT_EQ(AuditRowsOf(*drawn), 1);
  EXPECT_EQ(Spent(), Units(0.25));
}

}  // namespace
}  // namespace dpq::engine
