// QueryEngine end to end over the real store (PostgreSQL) with seeded noise: authorisation, the
// budget pre-check, the released value and its audit row, idempotent replays, request id checks.
#include "server/engine/query_engine.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/testing/seeded_random.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "tests/db/engine_test_env.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

// Budget totals in ledger units (privacy_units.h).
int64_t Units(double epsilon) {
  return *query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget);
}

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using query::AggregateKind;
using query::MechanismKind;
using query::QuerySpec;
using store::Principal;
using ::testing::HasSubstr;

constexpr int kRows = 40;  // one row per unit: uid 1..40, x = (uid % 10) + 0.5

class QueryEngineTest : public ::dpq::testing::EngineTest {
 protected:
  QueryEngineTest() : EngineTest(20240601) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;

    ASSERT_OK_AND_ASSIGN(store::CreatedDataset ds, CreateTinyDataset("people", kRows));
    ds_id_ = ds.schema.population_id;
    table_id_ = ds.schema.id;
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset other, CreateTinyDataset("other", 5));
    ASSERT_THAT(ledger_->Set(ds_id_, Units(5e6), 1000000000000000), IsOk());
    ASSERT_THAT(ledger_->Set(other.schema.population_id, Units(5e6), 1000000000000000), IsOk());
    ASSERT_OK_AND_ASSIGN(admin_, CreatePrincipal("root", store::Role::kAdmin));
    ASSERT_OK_AND_ASSIGN(granted_, CreatePrincipal("ann"));
    ASSERT_OK_AND_ASSIGN(stranger_, CreatePrincipal("eve"));
    ASSERT_OK(principals_->Grant("ann", "people"));
    ASSERT_OK(principals_->Grant("eve", "other"));
  }

  static QuerySpec Count(double epsilon) {
    QuerySpec s;
    s.dataset = "people";
    s.aggregate = AggregateKind::kCount;
    s.epsilon = epsilon;
    return s;
  }

  int64_t AuditRows() {
    std::string n = Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", ds_id_));
    return n.empty() ? -1 : std::stoll(n);
  }
  store::BudgetState Budget() {
    auto b = ledger_->Get(ds_id_);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? *b : store::BudgetState{};
  }

  int64_t ds_id_ = 0;     // the population's (its ledger)
  int64_t table_id_ = 0;  // the dataset's (its data table)
  Principal admin_, granted_, stranger_;
};

TEST_F(QueryEngineTest, AnalystWithoutGrantIsPermissionDeniedAndChargedNothing) {
  EXPECT_THAT(engine_->Run(stranger_, Count(1), "r1"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("eve")));
  EXPECT_THAT(engine_->AuthorizedDataset(stranger_, "people"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(AuditRows(), 0);
  EXPECT_EQ(Budget().epsilon_spent(), 0);
  // Granted elsewhere does not help; granted here does.
  EXPECT_THAT(engine_->AuthorizedDataset(stranger_, "other"), IsOk());
  EXPECT_THAT(engine_->Run(granted_, Count(1), "r2"), IsOk());
}

TEST_F(QueryEngineTest, AdminMayQueryAnyDatasetWithoutGrant) {
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, engine_->Run(admin_, Count(1), "admin-1"));
  EXPECT_FALSE(out.replayed);
  EXPECT_EQ(out.allocation.analyst, "root");
  EXPECT_EQ(out.allocation.principal_id, admin_.id);
  EXPECT_EQ(AuditRows(), 1);
}

TEST_F(QueryEngineTest, UnknownDatasetIsNotFound) {
  QuerySpec s = Count(1);
  s.dataset = "missing";
  EXPECT_THAT(engine_->Run(admin_, s, "r"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(engine_->Run(granted_, s, "r"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(QueryEngineTest, OverBudgetIsRefusedBeforeScanningAndChargesNothing) {
  ASSERT_THAT(ledger_->Set(ds_id_, Units(1.0), 0), IsOk());
  ASSERT_THAT(engine_->Run(granted_, Count(0.75), "first"), IsOk());
  const store::BudgetState before = Budget();

  // Hide the data table: a scan would now fail with an SQL error, so RESOURCE_EXHAUSTED proves
  // the query was refused before any scan.
  const std::string table = store::DataTableName(table_id_);
  Sql(absl::StrCat("ALTER TABLE ", table, " RENAME TO hidden_", table_id_));
  EXPECT_THAT(engine_->Run(granted_, Count(0.5), "second"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("people")));
  Sql(absl::StrCat("ALTER TABLE dpq_data.hidden_", table_id_, " RENAME TO ds_", table_id_));

  EXPECT_EQ(AuditRows(), 1);
  const store::BudgetState after = Budget();
  EXPECT_EQ(after.epsilon_spent(), before.epsilon_spent());
  EXPECT_EQ(after.delta_spent(), before.delta_spent());
  ASSERT_OK_AND_ASSIGN(auto found, ledger_->FindAllocation(ds_id_, "second"));
  EXPECT_FALSE(found.has_value());
  // What still fits is answered.
  EXPECT_THAT(engine_->Run(granted_, Count(0.25), "third"), IsOk());
}

TEST_F(QueryEngineTest, HugeEpsilonReleasesTheExactCountInsideItsInterval) {
  const store::BudgetState before = Budget();
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, engine_->Run(granted_, Count(1e6), "exact"));
  const store::Allocation& a = out.allocation;
  EXPECT_FALSE(out.replayed);
  EXPECT_EQ(std::llround(a.value), kRows);
  EXPECT_NEAR(a.value, kRows, 1e-3);
  EXPECT_LE(a.ci_lower, a.value);
  EXPECT_GE(a.ci_upper, a.value);
  EXPECT_LE(a.ci_lower, kRows);  // the interval holds the true count
  EXPECT_GE(a.ci_upper, kRows);
  EXPECT_EQ(a.aggregate, "count");
  EXPECT_EQ(a.mechanism, "laplace");
  EXPECT_EQ(a.sensitivity, 1);
  // Laplace b = sensitivity / epsilon, slightly inflated for the release grid (additive_mechanism.h).
  EXPECT_GE(a.noise_scale, 1e-6);
  EXPECT_LE(a.noise_scale, 1e-6 * (1 + 1e-5));
  EXPECT_EQ(a.epsilon(), 1e6);
  EXPECT_EQ(a.seq, 1);
  EXPECT_EQ(out.budget.epsilon_spent(), before.epsilon_spent() + 1e6);
  EXPECT_EQ(Budget().epsilon_spent(), before.epsilon_spent() + 1e6);

  // The audit row was committed before the scan (no value in it); its release carries exactly the
  // released answer, bound to the row by hash.
  ASSERT_OK_AND_ASSIGN(auto stored, ledger_->FindAllocation(ds_id_, "exact"));
  ASSERT_TRUE(stored.has_value());
  EXPECT_TRUE(stored->release_deferred);
  EXPECT_EQ(stored->value, 0);
  EXPECT_EQ(stored->hash, store::ChainHash(store::GenesisHash(), ds_id_, *stored));
  ASSERT_TRUE(stored->release.has_value());
  EXPECT_EQ(stored->release->value, a.value);
  EXPECT_EQ(stored->release->hash, store::ReleaseHash(stored->hash, ds_id_, 1, a.value, a.ci_lower,
                                                      a.ci_upper, stored->release->result));
  EXPECT_EQ(stored->hash, a.hash);
  EXPECT_EQ(stored->fingerprint, a.fingerprint);
}

TEST_F(QueryEngineTest, HugeEpsilonSumAndMeanMatchTheData) {
  double exact_sum = 0;
  for (int uid = 1; uid <= kRows; ++uid) exact_sum += (uid % 10) + 0.5;  // inside [0, 10]
  QuerySpec sum = Count(1e6);
  sum.aggregate = AggregateKind::kSum;
  sum.column = "x";
  ASSERT_OK_AND_ASSIGN(QueryOutcome s, engine_->Run(granted_, sum, "sum"));
  EXPECT_NEAR(s.allocation.value, exact_sum, 1e-2);
  EXPECT_EQ(s.spec.lower, absl::optional<double>(0.0));  // declared bounds resolved
  EXPECT_EQ(s.spec.upper, absl::optional<double>(10.0));
  EXPECT_EQ(s.allocation.clamp_upper, absl::optional<double>(10.0));
  EXPECT_LE(s.allocation.ci_lower, s.allocation.value);
  EXPECT_GE(s.allocation.ci_upper, s.allocation.value);

  QuerySpec mean = sum;
  mean.aggregate = AggregateKind::kMean;
  mean.lower = 2.0;  // clamps the 0.5s and 1.5s up to 2
  mean.upper = 8.0;
  double exact_clamped = 0;
  for (int uid = 1; uid <= kRows; ++uid)
    exact_clamped += std::min(8.0, std::max(2.0, (uid % 10) + 0.5));
  ASSERT_OK_AND_ASSIGN(QueryOutcome m, engine_->Run(granted_, mean, "mean"));
  EXPECT_NEAR(m.allocation.value, exact_clamped / kRows, 1e-3);
  EXPECT_LE(m.allocation.ci_lower, exact_clamped / kRows);
  EXPECT_GE(m.allocation.ci_upper, exact_clamped / kRows);
  EXPECT_EQ(Budget().epsilon_spent(), 2e6);
}

// Defence in depth (store/scan_arithmetic.h): should a float8 scan raise a data exception after
// the charge, the analyst still gets the answer (from the numeric fallback) with the same status
// and charge, and the engine reports the dataset to the hook dpqd wires to
// dpq_scan_data_errors_total.
TEST_F(QueryEngineTest, AScanDataErrorIsAnsweredByTheFallbackAndReported) {
  std::vector<std::string> reported;
  engine_->OnScanDataError(
      [&reported](const std::string& dataset) { reported.push_back(dataset); });
  scanner_->FailFloat8ScansForTesting(true);
  QuerySpec sum = Count(1e6);
  sum.aggregate = AggregateKind::kSum;
  sum.column = "x";
  double exact_sum = 0;
  for (int uid = 1; uid <= kRows; ++uid) exact_sum += (uid % 10) + 0.5;
  ASSERT_OK_AND_ASSIGN(QueryOutcome s, engine_->Run(granted_, sum, "fallback"));
  EXPECT_NEAR(s.allocation.value, exact_sum, 1e-2);
  EXPECT_EQ(Budget().epsilon_spent(), 1e6);
  EXPECT_EQ(reported, std::vector<std::string>{"people"});
  scanner_->FailFloat8ScansForTesting(false);
  ASSERT_OK(engine_->Run(granted_, Count(1e6), "no-fallback").status());
  EXPECT_EQ(reported.size(), 1u) << "a scan that answered in float8 is not reported";
}

TEST_F(QueryEngineTest, SameRequestIdReplaysTheStoredAnswerWithoutCharging) {
  ASSERT_OK_AND_ASSIGN(QueryOutcome first, engine_->Run(granted_, Count(0.5), "idem"));
  ASSERT_FALSE(first.replayed);
  const double spent = Budget().epsilon_spent();

  // The replay must not scan either: hide the table.
  Sql(absl::StrCat("ALTER TABLE ", store::DataTableName(table_id_), " RENAME TO hidden_",
                   table_id_));
  ASSERT_OK_AND_ASSIGN(QueryOutcome again, engine_->Run(granted_, Count(0.5), "idem"));
  Sql(absl::StrCat("ALTER TABLE dpq_data.hidden_", table_id_, " RENAME TO ds_", table_id_));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.allocation.value, first.allocation.value);  // not a fresh draw
  EXPECT_EQ(again.allocation.seq, first.allocation.seq);
  EXPECT_EQ(again.allocation.hash, first.allocation.hash);
  EXPECT_EQ(again.budget.epsilon_spent(), spent);
  EXPECT_EQ(Budget().epsilon_spent(), spent);
  EXPECT_EQ(AuditRows(), 1);

  // Same id, different question: ALREADY_EXISTS, nothing charged.
  EXPECT_THAT(engine_->Run(granted_, Count(0.25), "idem"),
              StatusIs(absl::StatusCode::kAlreadyExists));
  // Same id and question from another principal: not theirs to replay.
  EXPECT_THAT(engine_->Run(admin_, Count(0.5), "idem"), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(Budget().epsilon_spent(), spent);
  EXPECT_EQ(AuditRows(), 1);
}

TEST_F(QueryEngineTest, RequestIdIsValidated) {
  EXPECT_THAT(engine_->Run(granted_, Count(0.1), std::string(129, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id")));
  EXPECT_THAT(engine_->Run(granted_, Count(0.1), "has space"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id")));
  EXPECT_THAT(engine_->Run(granted_, Count(0.1), "caf\xc3\xa9"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id")));
  EXPECT_EQ(AuditRows(), 0);
  // 128 characters is the limit, inclusive.
  ASSERT_OK_AND_ASSIGN(QueryOutcome max, engine_->Run(granted_, Count(0.1), std::string(128, 'b')));
  EXPECT_EQ(max.allocation.request_id, std::string(128, 'b'));
  // Empty: the server assigns a fresh id, different every time (other epsilons: not cache hits).
  ASSERT_OK_AND_ASSIGN(QueryOutcome a1, engine_->Run(granted_, Count(0.2), ""));
  ASSERT_OK_AND_ASSIGN(QueryOutcome a2, engine_->Run(granted_, Count(0.3), ""));
  EXPECT_THAT(a1.allocation.request_id, HasSubstr("q-"));
  EXPECT_NE(a1.allocation.request_id, a2.allocation.request_id);
  EXPECT_FALSE(a2.replayed);
  EXPECT_EQ(AuditRows(), 3);
}

TEST_F(QueryEngineTest, InvalidQueryIsRejectedWithoutCharge) {
  QuerySpec bad = Count(-1);
  EXPECT_THAT(engine_->Run(granted_, bad, "neg"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epsilon")));
  QuerySpec wide = Count(1);
  wide.aggregate = AggregateKind::kSum;
  wide.column = "x";
  wide.lower = -5.0;  // wider than the declared [0, 10]
  wide.upper = 10.0;
  EXPECT_THAT(engine_->Run(granted_, wide, "wide"), StatusIs(absl::StatusCode::kInvalidArgument));
  QuerySpec nocol = Count(1);
  nocol.aggregate = AggregateKind::kMean;
  nocol.column = "nope";
  EXPECT_THAT(engine_->Run(granted_, nocol, "nocol"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nope")));
  EXPECT_EQ(AuditRows(), 0);
  EXPECT_EQ(Budget().epsilon_spent(), 0);
}

}  // namespace
}  // namespace dpq::engine
