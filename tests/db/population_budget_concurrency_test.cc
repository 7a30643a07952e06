// Two dpqd debiting one population at once: two engines, each with its own connection pool and
// stores on the same database (as two dpqd behind one load balancer), run concurrent queries from
// several threads, one engine on dataset A and the other on dataset B of ONE population. The
// population's one ledger must never be overspent, whichever dpqd and dataset a debit came
// through: what is spent is exactly what the answers were charged, the audit chain verifies with
// one row per answer, and every refusal is RESOURCE_EXHAUSTED naming the population. The same for
// an analyst's cap on the population (which covers both datasets).
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/population_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "tests/db/engine_replica.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::testing::HasSubstr;

constexpr double kEpsilon = 0.25;  // every query's charge: budgets below are multiples of it
constexpr int kThreadsPerEngine = 3;
constexpr int kMaxQueriesPerThread = 100;  // bounds a loop whose refusal never comes

// What the threads of one run saw, by request id.
struct Tally {
  std::mutex mu;
  std::set<std::string> answered;
  std::vector<std::string> refusals;    // RESOURCE_EXHAUSTED messages
  std::vector<std::string> unexpected;  // anything else, with its request id
  std::vector<int> refused_by_engine = std::vector<int>(2, 0);
};

class PopulationBudgetConcurrencyTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    store::PopulationStore populations(db());
    ASSERT_OK_AND_ASSIGN(store::Population clinic,
                         populations.Create("clinic", query::ColumnType::kInteger));
    for (const char* name : {"visits_a", "visits_b"}) {
      query::DatasetSchema schema;
      schema.name = name;
      schema.population = "clinic";
      schema.privacy_unit = "uid";
      schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                        {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
      std::string csv = "uid,x\n";
      for (int i = 1; i <= 30; ++i) absl::StrAppend(&csv, i, ",", i % 10, ".5\n");
      ASSERT_OK_AND_ASSIGN(store::CreatedDataset created, CreateFromCsv(schema, csv));
      ASSERT_EQ(created.schema.population_id, clinic.id) << name;
    }
    population_id_ = clinic.id;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    ASSERT_OK_AND_ASSIGN(bob_, CreatePrincipal("bob"));
    store::PrincipalStore principals(db());
    for (const char* who : {"alice", "bob"}) {
      for (const char* d : {"visits_a", "visits_b"}) ASSERT_OK(principals.Grant(who, d));
    }
    for (int i = 0; i < 2; ++i) {
      ASSERT_OK_AND_ASSIGN(
          std::unique_ptr<::dpq::testing::EngineReplica> r,
          ::dpq::testing::OpenEngineReplica(url(), kThreadsPerEngine + 1, 1000 + i));
      replicas_.push_back(std::move(r));
    }
  }

  // A new question each time (its own filter), so no answer comes from the result cache free.
  static query::QuerySpec Count(const std::string& dataset, int n) {
    query::QuerySpec s;
    s.dataset = dataset;
    s.aggregate = query::AggregateKind::kCount;
    s.epsilon = kEpsilon;
    s.where = absl::StrCat("uid <> ", n);
    return s;
  }

  // `who` queries from kThreadsPerEngine threads on each engine (engine 0 on visits_a, engine 1
  // on visits_b), all started together; each thread stops at its first refusal or error.
  void RunConcurrently(const store::Principal& who, const std::string& tag, Tally* tally) {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int e = 0; e < 2; ++e) {
      for (int t = 0; t < kThreadsPerEngine; ++t) {
        threads.emplace_back([&, e, t] {
          const std::string dataset = e == 0 ? "visits_a" : "visits_b";
          ready.fetch_add(1);
          while (ready.load() < 2 * kThreadsPerEngine) std::this_thread::yield();
          for (int i = 0; i < kMaxQueriesPerThread; ++i) {
            const std::string id = absl::StrCat(tag, "-", e, "-", t, "-", i);
            absl::StatusOr<QueryOutcome> r =
                replicas_[e]->engine->Run(who, Count(dataset, 1000 * (10 * e + t) + i), id);
            std::lock_guard<std::mutex> lock(tally->mu);
            if (r.ok()) {
              tally->answered.insert(id);
              continue;
            }
            if (r.status().code() == absl::StatusCode::kResourceExhausted) {
              tally->refusals.push_back(std::string(r.status().message()));
              ++tally->refused_by_engine[e];
            } else {
              tally->unexpected.push_back(absl::StrCat(id, ": ", r.status().ToString()));
            }
            return;
          }
          std::lock_guard<std::mutex> lock(tally->mu);
          tally->unexpected.push_back(absl::StrCat(tag, "-", e, "-", t, ": never refused"));
        });
      }
    }
    for (std::thread& th : threads) th.join();
  }

  int64_t PopulationSpent() {
    store::BudgetLedger ledger(db());
    absl::StatusOr<store::BudgetState> b = ledger.Get(population_id_);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? b->epsilon_spent_units : -1;
  }

  // The request ids of the population's audit rows (by `who` when given), one per row.
  std::multiset<std::string> AuditRequestIds(const std::string& who = "") {
    std::string sql =
        absl::StrCat("SELECT request_id FROM audit WHERE population_id = ", population_id_);
    if (!who.empty()) absl::StrAppend(&sql, " AND analyst = '", who, "'");
    std::multiset<std::string> ids;
    for (absl::string_view line : absl::StrSplit(Sql(sql), '\n', absl::SkipEmpty())) {
      ids.emplace(line);
    }
    return ids;
  }

  // The chain verifies, covers `rows` rows, and recomputes the spend the ledger holds.
  void ExpectChainVerifies(int64_t rows) {
    store::BudgetLedger ledger(db());
    ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification v, ledger.Verify(population_id_));
    EXPECT_TRUE(v.ok) << v.reason << " at seq " << v.first_broken_seq;
    EXPECT_EQ(v.entries, rows);
    EXPECT_EQ(v.epsilon_spent_recomputed_units, v.epsilon_spent_ledger_units);
    EXPECT_EQ(v.epsilon_spent_ledger_units, PopulationSpent());
  }

  int64_t population_id_ = 0;
  store::Principal alice_, bob_;
  std::vector<std::unique_ptr<::dpq::testing::EngineReplica>> replicas_;
};

// Budget 12 at 0.25 a query: exactly 48 answers, whichever dpqd and dataset they came through;
// every thread then stops at a refusal naming the population.
TEST_F(PopulationBudgetConcurrencyTest, TwoEnginesOnTwoDatasetsSpendTheBudgetExactlyOnce) {
  store::BudgetLedger ledger(db());
  ASSERT_OK(ledger.Set(population_id_, EpsU(12), 0));
  Tally tally;
  RunConcurrently(alice_, "b", &tally);
  EXPECT_THAT(tally.unexpected, ::testing::IsEmpty());
  EXPECT_EQ(tally.answered.size(), 48u);
  EXPECT_EQ(static_cast<int64_t>(tally.answered.size()) * EpsU(kEpsilon), PopulationSpent());
  EXPECT_EQ(PopulationSpent(), EpsU(12)) << "no overspend, and nothing left unspent";
  // Both dpqd debited the one ledger: every thread of each ended at its refusal. (How the 48
  // answers split between them is up to the scheduler: one engine may win them all.)
  EXPECT_EQ(tally.refused_by_engine, std::vector<int>(2, kThreadsPerEngine));
  ASSERT_EQ(tally.refusals.size(), static_cast<size_t>(2 * kThreadsPerEngine));
  for (const std::string& m : tally.refusals) {
    EXPECT_THAT(m, HasSubstr("privacy budget of population clinic exhausted"));
  }
  const std::multiset<std::string> audited = AuditRequestIds();
  EXPECT_EQ(audited, std::multiset<std::string>(tally.answered.begin(), tally.answered.end()))
      << "one audit row per answered query, none for a refusal";
  ExpectChainVerifies(48);
}

// alice is capped at 3 on the population (granted on visits_a; the cap covers visits_b too):
// querying both datasets through both dpqd she gets exactly 12 answers; bob, uncapped, shares the
// ledger meanwhile and is not held back by her cap.
TEST_F(PopulationBudgetConcurrencyTest, AnAnalystCapOnThePopulationHoldsAcrossDatasetsAndEngines) {
  store::BudgetLedger ledger(db());
  ASSERT_OK(ledger.Set(population_id_, EpsU(100), 0));
  store::PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("alice", "visits_a", EpsU(3)));
  Tally alice;
  std::atomic<int> bob_answered{0};
  std::vector<std::string> bob_errors;
  std::thread bob([&] {
    for (int i = 0; i < 10; ++i) {
      const int e = i % 2;
      absl::StatusOr<QueryOutcome> r = replicas_[e]->engine->Run(
          bob_, Count(e == 0 ? "visits_a" : "visits_b", 90000 + i), absl::StrCat("bob-", i));
      if (r.ok()) {
        bob_answered.fetch_add(1);
      } else {
        bob_errors.push_back(r.status().ToString());
      }
    }
  });
  RunConcurrently(alice_, "a", &alice);
  bob.join();
  EXPECT_THAT(alice.unexpected, ::testing::IsEmpty());
  EXPECT_THAT(bob_errors, ::testing::IsEmpty());
  EXPECT_EQ(alice.answered.size(), 12u);
  EXPECT_EQ(bob_answered.load(), 10);
  EXPECT_EQ(alice.refused_by_engine, std::vector<int>(2, kThreadsPerEngine));
  EXPECT_EQ(Sql(absl::StrCat("SELECT epsilon_cap_units, epsilon_spent_units FROM population_caps "
                             "WHERE population_id = ",
                             population_id_, " AND principal_id = ", alice_.id)),
            absl::StrCat(EpsU(3), "|", EpsU(3)))
      << "alice's spend on the population is exactly her cap";
  ASSERT_EQ(alice.refusals.size(), static_cast<size_t>(2 * kThreadsPerEngine));
  for (const std::string& m : alice.refusals) {
    EXPECT_THAT(m, HasSubstr("analyst alice's cap on population clinic exhausted"));
  }
  EXPECT_EQ(PopulationSpent(), (12 + 10) * EpsU(kEpsilon));
  EXPECT_EQ(AuditRequestIds("alice"),
            std::multiset<std::string>(alice.answered.begin(), alice.answered.end()));
  EXPECT_EQ(AuditRequestIds("bob").size(), 10u);
  ExpectChainVerifies(22);
}

}  // namespace
}  // namespace dpq::engine
