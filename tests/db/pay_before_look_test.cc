// Through the engine on a real PostgreSQL: nothing an analyst observes may depend on the
// data except the noisy values (docs/threat-model.md). The overflow probe answers alike on
// neighbouring datasets; scans do not fail on hostile values; a query is charged before its scan,
// a failed scan keeps its charge, and a retry answers exactly once without charging again.
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/query_engine.h"
#include "server/store/dataset_store.h"
#include "tests/db/engine_test_env.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using query::AggregateKind;
using query::QuerySpec;
using ::testing::HasSubstr;

int64_t Units(double epsilon) {
  return *query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget);
}

class PayBeforeLookTest : public ::dpq::testing::EngineTest {
 protected:
  PayBeforeLookTest() : EngineTest(11) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(ann_, CreatePrincipal("ann"));
  }

  // A dataset of `rows` units (uid 1..rows, x = uid % 10 + 0.5 in [0, 10]) granted to ann, with a
  // budget large enough for anything below.
  query::DatasetSchema Dataset(const std::string& name, int rows) {
    absl::StatusOr<store::CreatedDataset> ds = CreateTinyDataset(name, rows);
    EXPECT_THAT(ds, IsOk());
    if (!ds.ok()) return {};
    EXPECT_THAT(ledger_->Set(ds->schema.population_id, Units(9e6), 500000000000000000), IsOk());
    EXPECT_OK(principals_->Grant("ann", name));
    return ds->schema;
  }

  store::BudgetState Budget(int64_t id) {
    absl::StatusOr<store::BudgetState> b = ledger_->Get(id);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? *b : store::BudgetState{};
  }
  int64_t Count(const std::string& sql) { return std::stoll(Sql(sql)); }

  static QuerySpec Sum(const std::string& dataset, const std::string& column, double lower,
                       double upper, double epsilon = 1) {
    QuerySpec s;
    s.dataset = dataset;
    s.aggregate = AggregateKind::kSum;
    s.column = column;
    s.lower = lower;
    s.upper = upper;
    s.epsilon = epsilon;
    return s;
  }

  store::Principal ann_;
};

// Regression: with --lower L --upper L' near DBL_MAX / (n - 1/2) on a column without
// declared bounds, the float8 sum failed (INTERNAL) exactly when n rows were kept, before any
// charge: a free exact-count oracle. Now bounds beyond 1e15 are refused before anything is read,
// with the same status and message and no charge on both neighbours; at the largest allowed bound
// both answer and are charged alike.
TEST_F(PayBeforeLookTest, OverflowProbeAnswersAlikeOnNeighbours) {
  constexpr int n = 40;
  const query::DatasetSchema small = Dataset("small", n - 1);
  const query::DatasetSchema large = Dataset("large", n);
  const double l = std::numeric_limits<double>::max() / (n - 0.5);
  std::string messages[2];
  int i = 0;
  for (const std::string name : {"small", "large"}) {
    absl::StatusOr<QueryOutcome> out =
        engine_->Run(ann_, Sum(name, "uid", l, std::nextafter(l, 1e308)), "probe-" + name);
    ASSERT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1e15")));
    messages[i++] = std::string(out.status().message());
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_EQ(Budget(small.population_id).epsilon_spent_units, 0);
  EXPECT_EQ(Budget(large.population_id).epsilon_spent_units, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 0);

  // The largest public bound: both scans succeed, with identical charges and noise.
  ASSERT_OK_AND_ASSIGN(QueryOutcome a,
                       engine_->Run(ann_, Sum("small", "uid", 1e15 - 1, 1e15), "a"));
  ASSERT_OK_AND_ASSIGN(QueryOutcome b,
                       engine_->Run(ann_, Sum("large", "uid", 1e15 - 1, 1e15), "b"));
  EXPECT_EQ(a.allocation.epsilon_units, b.allocation.epsilon_units);
  EXPECT_EQ(a.allocation.noise_scale, b.allocation.noise_scale);
  EXPECT_EQ(a.allocation.sensitivity, b.allocation.sensitivity);
  EXPECT_EQ(a.allocation.events, b.allocation.events);
  EXPECT_TRUE(std::isfinite(a.allocation.value) && std::isfinite(b.allocation.value));
}

// NaN, +-inf and +-1e308 in a double column (written by SQL, as an external database may hold
// them) are clamped like any value: every aggregate answers, near-exactly at epsilon 1e6.
TEST_F(PayBeforeLookTest, HostileDoublesAreClampedNeverAnError) {
  const query::DatasetSchema ds = Dataset("hostile", 4);  // x = 1.5, 2.5, 3.5, 4.5
  Sql(absl::StrCat(
      "INSERT INTO ", store::DataTableName(ds.id), " (uid, x, _dpq_rank) VALUES ",
      "(101, 'NaN', 1), (102, 'Infinity', 1), (103, '-Infinity', 1), (104, 1e308, 1), ",
      "(105, -1e308, 1)"));
  // NaN sorts above every number in PostgreSQL, so it clamps to the upper bound like +inf.
  const double want_sum = 1.5 + 2.5 + 3.5 + 4.5 + 10 + 10 + 0 + 10 + 0;
  for (AggregateKind agg :
       {AggregateKind::kSum, AggregateKind::kMean, AggregateKind::kVariance, AggregateKind::kStddev,
        AggregateKind::kQuantile, AggregateKind::kHistogram, AggregateKind::kCount}) {
    QuerySpec s = Sum("hostile", "x", 0, 10, 1e6);
    s.aggregate = agg;
    if (agg == AggregateKind::kQuantile) s.quantiles = {0.5};
    if (agg == AggregateKind::kHistogram) {
      s.lower.reset();
      s.upper.reset();
      s.bins = {0, 5, 10};
    }
    absl::StatusOr<QueryOutcome> out =
        engine_->Run(ann_, s, absl::StrCat("hostile-", query::AggregateName(agg)));
    ASSERT_THAT(out, IsOk()) << query::AggregateName(agg);
    for (const ReleasedRow& r : out->rows) EXPECT_TRUE(std::isfinite(r.value)) << r.label;
    if (agg == AggregateKind::kSum) {
      EXPECT_NEAR(out->allocation.value, want_sum, 1e-3);
    }
    if (agg == AggregateKind::kCount) {
      EXPECT_NEAR(out->allocation.value, 9, 1e-3);
    }
  }
}

// A query is charged before its scan. A scan that cannot run (here: the deadline has passed, and
// then the table is unreadable) keeps the charge and says how to get the answer; the retry with
// the same request id answers once, without a second charge, and the answer is then fixed.
TEST_F(PayBeforeLookTest, AFailedScanKeepsItsChargeAndTheRetryAnswersOnce) {
  const query::DatasetSchema ds = Dataset("people", 10);
  const QuerySpec s = Sum("people", "x", 0, 10, 0.5);
  absl::StatusOr<QueryOutcome> late =
      engine_->Run(ann_, s, "late-1", absl::Now() - absl::Seconds(1));
  EXPECT_THAT(late, StatusIs(absl::StatusCode::kDeadlineExceeded,
                             HasSubstr("late-1 was charged but not answered")));
  EXPECT_THAT(late.status().message(), HasSubstr("retry with the same request_id"));
  const int64_t charged = Budget(ds.population_id).epsilon_spent_units;
  EXPECT_EQ(charged, Units(0.5));
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM releases"), 0);

  // The database fails during the scan: UNAVAILABLE, the same fixed message shape, still charged.
  const std::string table = store::DataTableName(ds.id);
  Sql(absl::StrCat("ALTER TABLE ", table, " RENAME TO hidden"));
  EXPECT_THAT(engine_->Run(ann_, s, "late-1"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("the database failed")));
  Sql(absl::StrCat("ALTER TABLE dpq_data.hidden RENAME TO ", table.substr(table.find('.') + 1)));
  EXPECT_EQ(Budget(ds.population_id).epsilon_spent_units, charged);

  ASSERT_OK_AND_ASSIGN(QueryOutcome answered, engine_->Run(ann_, s, "late-1"));
  EXPECT_TRUE(answered.replayed);
  EXPECT_EQ(Budget(ds.population_id).epsilon_spent_units, charged);
  EXPECT_EQ(Count("SELECT count(*) FROM releases"), 1);
  ASSERT_OK_AND_ASSIGN(QueryOutcome again, engine_->Run(ann_, s, "late-1"));
  EXPECT_EQ(again.allocation.value, answered.allocation.value);  // no second release
  EXPECT_EQ(Count("SELECT count(*) FROM releases"), 1);
  EXPECT_EQ(Budget(ds.population_id).epsilon_spent_units, charged);

  // The chain, the release's binding and the spent budget all verify.
  ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification v, ledger_->Verify(ds.population_id));
  EXPECT_TRUE(v.ok) << v.reason;
}

// An altered release breaks `audit verify`, like an altered audit row.
TEST_F(PayBeforeLookTest, VerifyDetectsAnAlteredRelease) {
  const query::DatasetSchema ds = Dataset("people", 10);
  ASSERT_THAT(engine_->Run(ann_, Sum("people", "x", 0, 10), "v-1"), IsOk());
  ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification ok, ledger_->Verify(ds.population_id));
  EXPECT_TRUE(ok.ok) << ok.reason;
  Sql("ALTER TABLE releases DISABLE TRIGGER releases_append_only");
  Sql("UPDATE releases SET released_value = released_value + 1");
  ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification broken, ledger_->Verify(ds.population_id));
  EXPECT_FALSE(broken.ok);
  EXPECT_THAT(broken.reason, HasSubstr("release does not match"));
}

// The cache is per analyst: a second analyst asking the same question pays for a fresh release
// (a shared answer would bypass their cap and tell them someone asked); the first analyst asking
// again gets their own release for free.
TEST_F(PayBeforeLookTest, TheResultCacheIsPerAnalyst) {
  const query::DatasetSchema ds = Dataset("people", 10);
  ASSERT_OK_AND_ASSIGN(store::Principal bob, CreatePrincipal("bob"));
  ASSERT_OK(principals_->Grant("bob", "people"));
  const QuerySpec s = Sum("people", "x", 0, 10, 0.25);
  ASSERT_OK_AND_ASSIGN(QueryOutcome first, engine_->Run(ann_, s, "ann-1"));
  ASSERT_OK_AND_ASSIGN(QueryOutcome bobs, engine_->Run(bob, s, "bob-1"));
  EXPECT_FALSE(bobs.cached);
  EXPECT_EQ(Budget(ds.population_id).epsilon_spent_units, 2 * Units(0.25));
  ASSERT_OK_AND_ASSIGN(QueryOutcome cached, engine_->Run(ann_, s, "ann-2"));
  EXPECT_TRUE(cached.cached);
  EXPECT_EQ(cached.allocation.value, first.allocation.value);
  EXPECT_EQ(cached.allocation.request_id, "ann-2");
  EXPECT_EQ(Budget(ds.population_id).epsilon_spent_units, 2 * Units(0.25));
}

// Every check that can refuse runs before the scan: an epsilon too small for the Laplace grid is
// refused with nothing charged, and identically on an empty and a full dataset.
TEST_F(PayBeforeLookTest, CalibrationErrorsComeBeforeTheScanAndChargeNothing) {
  Dataset("empty", 0);
  Dataset("full", 30);
  std::string messages[2];
  int i = 0;
  for (const std::string name : {"empty", "full"}) {
    QuerySpec s = Sum(name, "x", 0, 10, 1e-12);
    s.aggregate = AggregateKind::kQuantile;
    s.quantiles = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
    s.max_contributions = 1000;  // 1000 changed buckets: the grid's integer scale exceeds 2^42
    absl::StatusOr<QueryOutcome> out = engine_->Run(ann_, s, "tiny-" + name);
    ASSERT_FALSE(out.ok());
    messages[i++] = absl::StrCat(out.status().code(), ":", out.status().message());
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 0);
}

}  // namespace
}  // namespace dpq::engine
