// QueryEngine::RunBatch over the real store (PostgreSQL): a declared list of queries priced jointly
// (RDP / PLD at the batch delta, or the plain sum when that is smaller or the batch delta is 0),
// charged as ONE audit row, replayed by request id, refused as a whole; and
// QueryEngine::PlanAccuracy against what a real query reports.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "tests/db/engine_test_env.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using query::AggregateKind;
using query::QuerySpec;
using ::testing::HasSubstr;

constexpr int kRows = 40;  // CreateTinyDataset: uid 1..40, x = (uid % 10) + 0.5 in [0, 10]

class QueryBatchTest : public ::dpq::testing::EngineTest {
 protected:
  QueryBatchTest() : EngineTest(20241103) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset ds, CreateTinyDataset("people", kRows));
    ds_id_ = ds.schema.population_id;
    ASSERT_OK_AND_ASSIGN(analyst_, CreatePrincipal("ann"));
    ASSERT_OK(principals_->Grant("ann", "people"));
  }

  // 100 Laplace queries at epsilon 0.1: counts and sums of x alternating.
  static std::vector<QuerySpec> HundredQueries() {
    std::vector<QuerySpec> specs;
    for (int i = 0; i < 100; ++i) {
      QuerySpec s;
      s.aggregate = i % 2 == 0 ? AggregateKind::kCount : AggregateKind::kSum;
      s.column = i % 2 == 0 ? "" : "x";
      s.epsilon = 0.1;
      specs.push_back(s);
    }
    return specs;
  }

  int64_t AuditRows() {
    const std::string n =
        Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", ds_id_));
    return n.empty() ? -1 : std::stoll(n);
  }
  store::BudgetState Budget() {
    auto b = ledger_->Get(ds_id_);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? *b : store::BudgetState{};
  }
  void ExpectVerified() {
    ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification v, ledger_->Verify(ds_id_));
    EXPECT_TRUE(v.ok) << v.reason;
    EXPECT_EQ(v.first_broken_seq, 0);
    EXPECT_EQ(v.epsilon_spent_recomputed_units, v.epsilon_spent_ledger_units);
    EXPECT_EQ(v.delta_spent_recomputed_units, v.delta_spent_ledger_units);
    EXPECT_EQ(v.epsilon_spent_ledger_units, Budget().epsilon_spent_units);
  }

  int64_t ds_id_ = 0;
  store::Principal analyst_;
};

TEST_F(QueryBatchTest, HundredQueriesAreChargedJointlyAsOneAuditRow) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3)));
  ASSERT_OK_AND_ASSIGN(BatchOutcome out,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "batch-1"));
  EXPECT_FALSE(out.replayed);
  ASSERT_EQ(out.answers.size(), 100u);
  // Basic composition would charge 100 x 0.1 = 10; composing the 100 discrete Laplace releases
  // by PLD at delta 1e-5 proves about 4.
  EXPECT_EQ(out.epsilon_sum_units, EpsU(10));
  EXPECT_LE(out.allocation.epsilon(), 4.25);
  EXPECT_GT(out.allocation.epsilon(), 1.0);  // and not absurdly little
  EXPECT_EQ(out.allocation.delta_units, DelU(1e-5));
  EXPECT_EQ(out.allocation.aggregate, "batch");
  RecordProperty("joint_epsilon", absl::StrCat(out.allocation.epsilon()));
  EXPECT_EQ(AuditRows(), 1);
  const store::BudgetState after = Budget();
  EXPECT_EQ(after.epsilon_spent_units, out.allocation.epsilon_units);
  EXPECT_EQ(after.delta_spent_units, DelU(1e-5));
  EXPECT_EQ(out.budget.epsilon_spent_units, after.epsilon_spent_units);

  double x_sum = 0;
  for (int uid = 1; uid <= kRows; ++uid) x_sum += (uid % 10) + 0.5;
  for (size_t i = 0; i < out.answers.size(); ++i) {
    const QueryOutcome& a = out.answers[i];
    ASSERT_EQ(a.rows.size(), 1u) << i;
    EXPECT_EQ(a.allocation.aggregate, i % 2 == 0 ? "count" : "sum") << i;
    EXPECT_EQ(a.allocation.epsilon_units, EpsU(0.1)) << i;  // each query's own nominal charge
    EXPECT_EQ(a.allocation.request_id, absl::StrCat("batch-1#", i));
    // Laplace with b = 1 / 0.1 (count) or 10 / 0.1 (sum): within 20 b of the truth.
    EXPECT_NEAR(a.rows[0].value, i % 2 == 0 ? kRows : x_sum, i % 2 == 0 ? 200 : 2000) << i;
    EXPECT_LE(a.rows[0].ci_lower, a.rows[0].value);
    EXPECT_GE(a.rows[0].ci_upper, a.rows[0].value);
  }
  ExpectVerified();

  // The same request id and batch: the stored answers, nothing charged.
  ASSERT_OK_AND_ASSIGN(BatchOutcome again,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "batch-1"));
  EXPECT_TRUE(again.replayed);
  ASSERT_EQ(again.answers.size(), out.answers.size());
  for (size_t i = 0; i < out.answers.size(); ++i) {
    ASSERT_EQ(again.answers[i].rows.size(), 1u);
    EXPECT_EQ(again.answers[i].rows[0].value, out.answers[i].rows[0].value) << i;
    EXPECT_EQ(again.answers[i].rows[0].ci_lower, out.answers[i].rows[0].ci_lower) << i;
    EXPECT_TRUE(again.answers[i].replayed);
  }
  EXPECT_EQ(again.allocation.seq, out.allocation.seq);
  EXPECT_EQ(Budget().epsilon_spent_units, after.epsilon_spent_units);
  EXPECT_EQ(AuditRows(), 1);

  // The same id for another batch (one query fewer; another batch delta): ALREADY_EXISTS.
  std::vector<QuerySpec> fewer = HundredQueries();
  fewer.pop_back();
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", fewer, 1e-5, "batch-1"),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", HundredQueries(), 2e-5, "batch-1"),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(Budget().epsilon_spent_units, after.epsilon_spent_units);
  EXPECT_EQ(AuditRows(), 1);
  ExpectVerified();
}

TEST_F(QueryBatchTest, BatchDeltaZeroChargesTheSumAndABatchThatDoesNotFitChargesNothing) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3)));
  // Without a batch delta there is no joint pricing: basic composition, exactly 100 x 0.1.
  ASSERT_OK_AND_ASSIGN(BatchOutcome out,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 0, "sum"));
  EXPECT_EQ(out.allocation.epsilon_units, EpsU(10));
  EXPECT_EQ(out.allocation.delta_units, 0);
  EXPECT_EQ(Budget().epsilon_spent_units, EpsU(10));
  EXPECT_EQ(AuditRows(), 1);

  // Nothing is left: even the jointly priced batch does not fit.
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "no-room"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Budget().epsilon_spent_units, EpsU(10));
  EXPECT_EQ(Budget().delta_spent_units, 0);
  EXPECT_EQ(AuditRows(), 1);
  ASSERT_OK_AND_ASSIGN(auto missing, ledger_->FindAllocation(ds_id_, "no-room"));
  EXPECT_FALSE(missing.has_value());
  ExpectVerified();
}

TEST_F(QueryBatchTest, BatchBeyondAFreshBudgetIsRefusedWhole) {
  // The joint price (about 4) exceeds a budget of 3: nothing of the batch is charged or stored.
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(3), DelU(1e-3)));
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "too-big"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Budget().epsilon_spent_units, 0);
  EXPECT_EQ(AuditRows(), 0);
  // Ten of them (basic sum 1, joint price not lower) fit.
  std::vector<QuerySpec> ten = HundredQueries();
  ten.resize(10);
  ASSERT_OK_AND_ASSIGN(BatchOutcome small, engine_->RunBatch(analyst_, "people", ten, 1e-5, "ten"));
  EXPECT_LE(small.allocation.epsilon_units, EpsU(1));
  EXPECT_EQ(Budget().epsilon_spent_units, small.allocation.epsilon_units);
  ExpectVerified();
}

TEST_F(QueryBatchTest, BadQueryInsideIsInvalidArgumentNamingItsIndex) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3)));
  std::vector<QuerySpec> specs = HundredQueries();
  specs[37].epsilon = -1;
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", specs, 1e-5, "bad-eps"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queries[37]")));
  specs = HundredQueries();
  specs[5].column = "nope";
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", specs, 1e-5, "bad-col"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queries[5]")));
  specs = HundredQueries();
  specs[99].dataset = "elsewhere";
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", specs, 1e-5, "bad-ds"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queries[99]")));
  EXPECT_THAT(engine_->RunBatch(analyst_, "people", {}, 1e-5, "empty"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queries")));
  EXPECT_EQ(AuditRows(), 0);
  EXPECT_EQ(Budget().epsilon_spent_units, 0);
}

TEST_F(QueryBatchTest, RdpLedgerComposesTheBatchAndVerifyRecomputesIt) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3), "rdp"));
  ASSERT_OK_AND_ASSIGN(BatchOutcome first,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "rdp-1"));
  ASSERT_EQ(first.answers.size(), 100u);
  const store::BudgetState b1 = Budget();
  EXPECT_EQ(dp::accounting::AccountantName(b1.accountant), "rdp");
  EXPECT_GT(b1.epsilon_spent_units, 0);
  EXPECT_LE(b1.epsilon_spent(), 4.25);  // far below the basic sum of 10
  RecordProperty("rdp_ledger_epsilon", absl::StrCat(b1.epsilon_spent()));
  ExpectVerified();

  // A second batch composes onto the ledger's state (a new id: not a replay).
  ASSERT_OK_AND_ASSIGN(BatchOutcome second,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "rdp-2"));
  EXPECT_FALSE(second.replayed);
  const store::BudgetState b2 = Budget();
  EXPECT_GT(b2.epsilon_spent_units, b1.epsilon_spent_units);
  EXPECT_LE(b2.epsilon_spent(), 10.0);
  EXPECT_EQ(AuditRows(), 2);
  ExpectVerified();
  // Replays stay free on this ledger too.
  ASSERT_OK_AND_ASSIGN(BatchOutcome replay,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "rdp-1"));
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(Budget().epsilon_spent_units, b2.epsilon_spent_units);
}

TEST_F(QueryBatchTest, PriceBatchIsExactlyWhatRunBatchChargesAndChargesNothing) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3)));
  ASSERT_OK_AND_ASSIGN(BatchPrice price,
                       engine_->PriceBatch(analyst_, "people", HundredQueries(), 1e-5));
  EXPECT_EQ(Budget().epsilon_spent_units, 0);
  EXPECT_EQ(AuditRows(), 0);
  EXPECT_EQ(price.epsilon_sum_units, EpsU(10));
  EXPECT_LT(price.epsilon_units, price.epsilon_sum_units);
  ASSERT_OK_AND_ASSIGN(BatchOutcome out,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "priced-1"));
  EXPECT_EQ(out.allocation.epsilon_units, price.epsilon_units);
  EXPECT_EQ(out.allocation.delta_units, price.delta_units);
  EXPECT_EQ(out.allocation.events, price.events);
  // A refusal RunBatch would give, PriceBatch gives too (queries[i] named).
  std::vector<query::QuerySpec> bad = HundredQueries();
  bad[7].epsilon = -1;
  EXPECT_THAT(engine_->PriceBatch(analyst_, "people", bad, 1e-5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queries[7]")));
}

TEST_F(QueryBatchTest, WithTheCacheAnIdenticalBatchIsAnsweredAgainForFree) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(10), DelU(1e-3)));
  using Cache = QueryEngine::BatchCache;
  const absl::Time never = absl::InfiniteFuture();
  ASSERT_OK_AND_ASSIGN(BatchOutcome first, engine_->RunBatch(analyst_, "people", HundredQueries(),
                                                             1e-5, "cache-1", never, Cache::kUse));
  EXPECT_FALSE(first.cached);
  const store::BudgetState spent = Budget();
  ASSERT_OK_AND_ASSIGN(BatchOutcome hit, engine_->RunBatch(analyst_, "people", HundredQueries(),
                                                           1e-5, "cache-2", never, Cache::kUse));
  EXPECT_TRUE(hit.cached);
  EXPECT_FALSE(hit.replayed);
  EXPECT_EQ(hit.allocation.request_id, "cache-2");  // the caller's own id
  ASSERT_EQ(hit.answers.size(), first.answers.size());
  for (size_t i = 0; i < hit.answers.size(); ++i) {
    EXPECT_TRUE(hit.answers[i].cached);
    EXPECT_EQ(hit.answers[i].rows[0].value, first.answers[i].rows[0].value) << i;
  }
  EXPECT_EQ(Budget().epsilon_spent_units, spent.epsilon_spent_units);
  EXPECT_EQ(AuditRows(), 1);
  // Without the cache (query-batch) the same batch is charged and answered afresh.
  ASSERT_OK_AND_ASSIGN(BatchOutcome fresh,
                       engine_->RunBatch(analyst_, "people", HundredQueries(), 1e-5, "cache-3",
                                         never, Cache::kBypass));
  EXPECT_FALSE(fresh.cached);
  EXPECT_GT(Budget().epsilon_spent_units, spent.epsilon_spent_units);
  EXPECT_EQ(AuditRows(), 2);
  ExpectVerified();
}

// ---------------------------------------------------------------------------------------------
// PlanAccuracy.

TEST_F(QueryBatchTest, PlanAccuracyMatchesTheIntervalARealQueryReports) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(100), DelU(1e-3)));
  QuerySpec count;
  count.dataset = "people";
  count.aggregate = AggregateKind::kCount;
  count.max_contributions = 3;
  for (double epsilon : {0.05, 0.5, 2.0}) {
    count.epsilon = epsilon;
    ASSERT_OK_AND_ASSIGN(AccuracyPlan plan, engine_->PlanAccuracy(analyst_, count, 0, 0));
    ASSERT_OK_AND_ASSIGN(QueryOutcome real,
                         engine_->Run(analyst_, count, absl::StrCat("acc-", epsilon)));
    EXPECT_EQ(plan.epsilon, epsilon);
    EXPECT_EQ(plan.sensitivity, real.allocation.sensitivity);
    EXPECT_EQ(plan.noise_scale, real.allocation.noise_scale);
    EXPECT_EQ(plan.error, (real.allocation.ci_upper - real.allocation.ci_lower) / 2) << epsilon;
    EXPECT_EQ(plan.error, real.allocation.value - real.allocation.ci_lower) << epsilon;
  }
  EXPECT_EQ(AuditRows(), 3);  // planning charges nothing

  // With a target error: the epsilon returned meets it, and 1% less does not.
  for (double target : {3.0, 25.0}) {
    count.epsilon = 0;
    ASSERT_OK_AND_ASSIGN(AccuracyPlan plan, engine_->PlanAccuracy(analyst_, count, target, 0));
    EXPECT_LE(plan.error, target);
    count.epsilon = plan.epsilon;
    ASSERT_OK_AND_ASSIGN(AccuracyPlan at, engine_->PlanAccuracy(analyst_, count, 0, 0));
    EXPECT_LE(at.error, target);
    count.epsilon = plan.epsilon * 0.99;
    ASSERT_OK_AND_ASSIGN(AccuracyPlan below, engine_->PlanAccuracy(analyst_, count, 0, 0));
    EXPECT_GT(below.error, target) << "epsilon " << plan.epsilon << " is not the smallest";
    // The real query at the planned epsilon reports an interval no wider than the target.
    count.epsilon = plan.epsilon;
    ASSERT_OK_AND_ASSIGN(QueryOutcome real,
                         engine_->Run(analyst_, count, absl::StrCat("tgt-", target)));
    EXPECT_LE(real.allocation.ci_upper - real.allocation.value, target);
  }
  EXPECT_EQ(AuditRows(), 5);
}

// Explain states what the run uses: a variance's every component at the run's scales (its summary
// scale and sensitivity the sum of squares'), a quantile's method and its histogram's scale.
TEST_F(QueryBatchTest, PlanReportIsWhatTheRunUses) {
  ASSERT_OK(ledger_->Set(ds_id_, EpsU(100), DelU(1e-3)));
  QuerySpec variance;
  variance.dataset = "people";
  variance.aggregate = AggregateKind::kVariance;
  variance.column = "x";
  variance.epsilon = 1;
  ASSERT_OK_AND_ASSIGN(AccuracyPlan plan, engine_->PlanAccuracy(analyst_, variance, 0, 0));
  ASSERT_OK_AND_ASSIGN(QueryOutcome real, engine_->Run(analyst_, variance, "report-var"));
  ASSERT_EQ(plan.report.components.size(), 3u);
  ASSERT_EQ(real.components.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(plan.report.components[i].statistic, real.components[i].statistic);
    EXPECT_EQ(plan.report.components[i].noise_scale, real.components[i].noise_scale) << i;
    EXPECT_EQ(plan.report.components[i].sensitivity, real.components[i].sensitivity) << i;
  }
  EXPECT_EQ(plan.noise_scale, real.allocation.noise_scale);
  EXPECT_EQ(plan.sensitivity, real.allocation.sensitivity);
  EXPECT_EQ(real.allocation.noise_scale, real.components[1].noise_scale);
  EXPECT_EQ(real.allocation.sensitivity, real.components[1].sensitivity);

  QuerySpec quantile = variance;
  quantile.aggregate = AggregateKind::kQuantile;
  for (const std::vector<double>& levels :
       {std::vector<double>{0.5}, std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}}) {
    quantile.quantiles = levels;
    ASSERT_OK_AND_ASSIGN(AccuracyPlan q, engine_->PlanAccuracy(analyst_, quantile, 0, 0));
    ASSERT_OK_AND_ASSIGN(QueryOutcome run,
                         engine_->Run(analyst_, quantile, absl::StrCat("report-q", levels.size())));
    const bool selected = levels.size() <= static_cast<size_t>(query::kMaxSelectedQuantiles);
    EXPECT_EQ(q.report.quantile.exponential, selected);
    EXPECT_EQ(run.allocation.mechanism, selected ? "exponential" : "laplace");
    ASSERT_FALSE(run.rows.empty());
    EXPECT_GT(q.noise_scale, 0);
    EXPECT_EQ(q.noise_scale, run.rows[0].noise_scale);
    EXPECT_EQ(q.noise_scale, run.allocation.noise_scale);
  }
}

}  // namespace
}  // namespace dpq::engine
