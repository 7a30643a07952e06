#include "server/query/planner.h"

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/aggregate_plans.h"
#include "server/query/privacy_units.h"
#include "server/query/sensitivity.h"

namespace dpq::query {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Statistic = NoiseComponent::Statistic;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A dataset with one bounded numeric column, one unbounded numeric column and one text column.
DatasetSchema TestSchema() {
  DatasetSchema schema;
  schema.id = 42;
  schema.name = "visits";
  schema.privacy_unit = "user_id";
  schema.columns = {
      {"user_id", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"amount", ColumnType::kDouble, 0.0, 100.0, {}},
      {"age", ColumnType::kInteger, 18.0, 90.0, {}},
      {"score", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},  // no declared bounds
      {"city", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"huge", ColumnType::kDouble, -1e303, 1e303, {}},
  };
  return schema;
}

QuerySpec CountSpec() {
  QuerySpec spec;
  spec.dataset = "visits";
  spec.aggregate = AggregateKind::kCount;
  spec.epsilon = 1.0;
  return spec;
}

QuerySpec SumSpec(const std::string& column = "amount") {
  QuerySpec spec = CountSpec();
  spec.aggregate = AggregateKind::kSum;
  spec.column = column;
  return spec;
}

QuerySpec MeanSpec(const std::string& column = "amount") {
  QuerySpec spec = SumSpec(column);
  spec.aggregate = AggregateKind::kMean;
  return spec;
}

// Plans `spec` and checks it fails with INVALID_ARGUMENT whose message names `field`.
void ExpectRejectedNaming(const QuerySpec& spec, const std::string& field) {
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_FALSE(plan.ok()) << "expected an error naming " << field << "; fingerprint "
                          << plan->fingerprint;
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(field));
}

QueryPlan PlanOrDie(const QuerySpec& spec) {
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *std::move(plan) : QueryPlan{};
}

// --- privacy parameters ---

TEST(PlannerTest, RejectsNanEpsilon) {
  QuerySpec spec = CountSpec();
  spec.epsilon = kNaN;
  ExpectRejectedNaming(spec, "epsilon");
}

TEST(PlannerTest, RejectsInfiniteEpsilon) {
  QuerySpec spec = CountSpec();
  spec.epsilon = kInf;
  ExpectRejectedNaming(spec, "epsilon");
  spec.epsilon = -kInf;
  ExpectRejectedNaming(spec, "epsilon");
}

TEST(PlannerTest, RejectsZeroEpsilon) {
  QuerySpec spec = CountSpec();
  spec.epsilon = 0;
  ExpectRejectedNaming(spec, "epsilon");
}

TEST(PlannerTest, RejectsNegativeEpsilon) {
  QuerySpec spec = SumSpec();
  spec.epsilon = -0.5;
  ExpectRejectedNaming(spec, "epsilon");
}

TEST(PlannerTest, LaplaceRejectsNonZeroDelta) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kLaplace;
  for (double delta : {1e-6, 0.5, -1e-6, kNaN}) {
    spec.delta = delta;
    ExpectRejectedNaming(spec, "delta");
  }
}

TEST(PlannerTest, GaussianRejectsZeroDelta) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 0;
  ExpectRejectedNaming(spec, "delta");
}

TEST(PlannerTest, GaussianRejectsDeltaOne) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1;
  ExpectRejectedNaming(spec, "delta");
}

TEST(PlannerTest, GaussianRejectsNanDelta) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = kNaN;
  ExpectRejectedNaming(spec, "delta");
}

TEST(PlannerTest, GaussianRejectsNegativeOrInfiniteDelta) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kGaussian;
  for (double delta : {-1e-9, 1.5, kInf}) {
    spec.delta = delta;
    ExpectRejectedNaming(spec, "delta");
  }
}

TEST(PlannerTest, GaussianAcceptsDeltaStrictlyBetweenZeroAndOne) {
  QuerySpec spec = CountSpec();
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-6;
  QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].delta, 1e-6);
}

TEST(PlannerTest, RejectsConfidenceZero) {
  QuerySpec spec = CountSpec();
  spec.confidence = 0;
  ExpectRejectedNaming(spec, "confidence");
}

TEST(PlannerTest, RejectsConfidenceOne) {
  QuerySpec spec = CountSpec();
  spec.confidence = 1;
  ExpectRejectedNaming(spec, "confidence");
}

TEST(PlannerTest, RejectsNanConfidence) {
  QuerySpec spec = CountSpec();
  spec.confidence = kNaN;
  ExpectRejectedNaming(spec, "confidence");
}

TEST(PlannerTest, RejectsZeroMaxContributions) {
  QuerySpec spec = CountSpec();
  spec.max_contributions = 0;
  ExpectRejectedNaming(spec, "max_contributions");
}

TEST(PlannerTest, RejectsNegativeMaxContributions) {
  QuerySpec spec = SumSpec();
  spec.max_contributions = -3;
  ExpectRejectedNaming(spec, "max_contributions");
}

TEST(PlannerTest, RejectsMaxContributionsAboveOneMillion) {
  QuerySpec spec = CountSpec();
  spec.max_contributions = 1000001;
  ExpectRejectedNaming(spec, "max_contributions");
}

TEST(PlannerTest, AcceptsMaxContributionsAtBothLimits) {
  QuerySpec spec = CountSpec();
  spec.max_contributions = 1;
  EXPECT_TRUE(PlanQuery(spec, TestSchema()).ok());
  spec.max_contributions = 1000000;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->components[0].sensitivity, 1000000.0);
}

// --- column ---

TEST(PlannerTest, SumRequiresColumn) { ExpectRejectedNaming(SumSpec(""), "column"); }

TEST(PlannerTest, MeanRequiresColumn) { ExpectRejectedNaming(MeanSpec(""), "column"); }

TEST(PlannerTest, RejectsUnknownColumn) {
  ExpectRejectedNaming(SumSpec("no_such_column"), "column");
  ExpectRejectedNaming(SumSpec("no_such_column"), "no_such_column");
  ExpectRejectedNaming(MeanSpec("no_such_column"), "column");
}

TEST(PlannerTest, ColumnLookupIsCaseSensitive) {
  ExpectRejectedNaming(SumSpec("Amount"), "column");
}

TEST(PlannerTest, RejectsTextColumnForSum) {
  ExpectRejectedNaming(SumSpec("city"), "column");
  ExpectRejectedNaming(SumSpec("city"), "city");
}

TEST(PlannerTest, RejectsTextColumnForMean) { ExpectRejectedNaming(MeanSpec("city"), "column"); }

TEST(PlannerTest, UnknownColumnErrorEchoesAtMost64CharsOfTheName) {
  const std::string prefix(64, 'a');
  const std::string name = prefix + std::string(1000, 'z');
  absl::StatusOr<QueryPlan> plan = PlanQuery(SumSpec(name), TestSchema());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(plan.status().message());
  EXPECT_THAT(message, HasSubstr("column"));
  EXPECT_THAT(message, HasSubstr(prefix));
  EXPECT_THAT(message, Not(HasSubstr(prefix + "z")));
  EXPECT_THAT(message, Not(HasSubstr("z")));
  EXPECT_LT(message.size(), 64u + 200u);
}

// --- bounds ---

TEST(PlannerTest, RejectsOnlyLowerGiven) {
  QuerySpec spec = SumSpec();
  spec.lower = 1.0;
  ExpectRejectedNaming(spec, "lower");
  ExpectRejectedNaming(spec, "upper");
}

TEST(PlannerTest, RejectsOnlyUpperGiven) {
  QuerySpec spec = MeanSpec();
  spec.upper = 1.0;
  ExpectRejectedNaming(spec, "lower");
  ExpectRejectedNaming(spec, "upper");
}

TEST(PlannerTest, RejectsRequestedLowerBelowDeclared) {
  QuerySpec spec = SumSpec();
  spec.lower = -1.0;
  spec.upper = 50.0;
  ExpectRejectedNaming(spec, "lower");
}

TEST(PlannerTest, RejectsRequestedUpperAboveDeclared) {
  QuerySpec spec = SumSpec();
  spec.lower = 10.0;
  spec.upper = 100.5;
  ExpectRejectedNaming(spec, "upper");
}

TEST(PlannerTest, AcceptsRequestedBoundsEqualToDeclared) {
  QuerySpec spec = SumSpec();
  spec.lower = 0.0;
  spec.upper = 100.0;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_EQ(plan.scan.clamp_lower, 0.0);
  EXPECT_EQ(plan.scan.clamp_upper, 100.0);
}

TEST(PlannerTest, RejectsNoBoundsAnywhere) {
  ExpectRejectedNaming(SumSpec("score"), "lower");
  ExpectRejectedNaming(SumSpec("score"), "upper");
  ExpectRejectedNaming(MeanSpec("score"), "lower");
}

TEST(PlannerTest, AcceptsRequestedBoundsWhenNoneDeclared) {
  QuerySpec spec = SumSpec("score");
  spec.lower = -5.0;
  spec.upper = 5.0;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_EQ(plan.scan.clamp_lower, -5.0);
  EXPECT_EQ(plan.scan.clamp_upper, 5.0);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_DOUBLE_EQ(plan.components[0].sensitivity, 5.0);
}

TEST(PlannerTest, RejectsNonFiniteRequestedBounds) {
  QuerySpec spec = SumSpec("score");
  spec.lower = kNaN;
  spec.upper = 1.0;
  ExpectRejectedNaming(spec, "lower");
  spec.lower = -kInf;
  ExpectRejectedNaming(spec, "lower");
  spec.lower = 0.0;
  spec.upper = kInf;
  ExpectRejectedNaming(spec, "upper");
  spec.upper = kNaN;
  ExpectRejectedNaming(spec, "upper");
}

TEST(PlannerTest, RejectsNaNRequestedBoundsEvenWithDeclaredBounds) {
  // NaN compares false against the declared bounds, so the finiteness check must catch it.
  QuerySpec spec = SumSpec();
  spec.lower = kNaN;
  spec.upper = kNaN;
  ExpectRejectedNaming(spec, "lower");
}

TEST(PlannerTest, RejectsRequestedLowerNotBelowUpper) {
  QuerySpec spec = SumSpec();
  spec.lower = 20.0;
  spec.upper = 20.0;
  ExpectRejectedNaming(spec, "lower");
  spec.upper = 10.0;
  ExpectRejectedNaming(spec, "upper");
}

TEST(PlannerTest, RejectsSensitivityOverflow) {
  QuerySpec spec = SumSpec("huge");
  spec.max_contributions = 1000000;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_FALSE(plan.ok()) << "sensitivity " << plan->components[0].sensitivity;
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);

  QuerySpec mean = MeanSpec("huge");
  mean.max_contributions = 1000000;
  absl::StatusOr<QueryPlan> mean_plan = PlanQuery(mean, TestSchema());
  ASSERT_FALSE(mean_plan.ok());
  EXPECT_EQ(mean_plan.status().code(), absl::StatusCode::kInvalidArgument);
}

// Regression: bounds are limited to a public magnitude so that no scan can overflow on data.
TEST(PlannerTest, BoundsBeyondThePublicMagnitudeAreRefusedBeforeAnyScan) {
  QuerySpec spec = SumSpec("score");
  spec.lower = 0;
  spec.upper = 1e15;
  EXPECT_TRUE(PlanQuery(spec, TestSchema()).ok());
  spec.upper = std::nextafter(1e15, kInf);
  ExpectRejectedNaming(spec, "upper");
  spec.upper = 1;
  spec.lower = -2e15;
  ExpectRejectedNaming(spec, "lower");
  // The overflow probe: lower/upper near DBL_MAX / (n - 1/2).
  spec.lower = std::numeric_limits<double>::max() / 39.5;
  spec.upper = std::nextafter(*spec.lower, kInf);
  ExpectRejectedNaming(spec, "1e15");
  // Declared bounds from before the limit are refused when used, naming them.
  ExpectRejectedNaming(SumSpec("huge"), "declared lower bound of huge");
  // Histogram edges too.
  QuerySpec hist = SumSpec("score");
  hist.aggregate = AggregateKind::kHistogram;
  hist.bins = {0, 1, 1e300};
  ExpectRejectedNaming(hist, "bins");
}

TEST(PlannerTest, OnlySumsAndMomentsComputeASum) {
  for (AggregateKind agg : {AggregateKind::kSum, AggregateKind::kMean, AggregateKind::kVariance,
                            AggregateKind::kStddev}) {
    QuerySpec spec = SumSpec();
    spec.aggregate = agg;
    EXPECT_TRUE(PlanOrDie(spec).scan.sum_values) << AggregateName(agg);
  }
  EXPECT_FALSE(PlanOrDie(CountSpec()).scan.sum_values);
  QuerySpec quantile = SumSpec();
  quantile.aggregate = AggregateKind::kQuantile;
  quantile.quantiles = {0.5};
  EXPECT_FALSE(PlanOrDie(quantile).scan.sum_values);
  QuerySpec hist = SumSpec();
  hist.aggregate = AggregateKind::kHistogram;
  hist.bins = {0, 50, 100};
  EXPECT_FALSE(PlanOrDie(hist).scan.sum_values);
}

// epsilon 5: 5/3 rounds UP to nearest, so three nearest thirds would spend more than 5.
TEST(PlannerTest, BudgetSharesNeverAddUpToMoreThanTheCharge) {
  QuerySpec spec = SumSpec();
  spec.aggregate = AggregateKind::kVariance;
  spec.epsilon = 5;
  const QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 3u);
  long double total = 0;
  for (const NoiseComponent& c : plan.components) total += c.epsilon;
  EXPECT_LE(total, 5.0L);
  EXPECT_GT(static_cast<long double>(5.0 / 3) * 3, 5.0L);  // the nearest third would overspend
}

// --- count ---

TEST(PlannerTest, CountHasOneComponentWithSensitivityKAndWholeBudget) {
  QuerySpec spec = CountSpec();
  spec.max_contributions = 7;
  spec.epsilon = 0.3;
  QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].statistic, Statistic::kCount);
  EXPECT_EQ(plan.components[0].sensitivity, 7.0);
  EXPECT_EQ(plan.components[0].epsilon, 0.3);
  EXPECT_EQ(plan.components[0].delta, 0.0);
}

TEST(PlannerTest, CountClearsColumnAndBounds) {
  QuerySpec spec = CountSpec();
  spec.column = "amount";
  spec.lower = 1.0;
  spec.upper = 2.0;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_TRUE(plan.spec.column.empty());
  EXPECT_FALSE(plan.spec.lower.has_value());
  EXPECT_FALSE(plan.spec.upper.has_value());
  EXPECT_TRUE(plan.scan.value_column.empty());
}

TEST(PlannerTest, CountIgnoresAnUnknownColumn) {
  QuerySpec spec = CountSpec();
  spec.column = "no_such_column";
  EXPECT_TRUE(PlanQuery(spec, TestSchema()).ok());
}

TEST(PlannerTest, ScanCarriesDatasetUnitAndK) {
  QuerySpec spec = SumSpec();
  spec.max_contributions = 5;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_EQ(plan.scan.dataset_id, 42);
  EXPECT_EQ(plan.scan.unit_column, "user_id");
  EXPECT_EQ(plan.scan.max_contributions, 5);
  EXPECT_EQ(plan.scan.value_column, "amount");
  EXPECT_EQ(plan.scan.center, 0.0);  // a plain sum is not centred
}

// --- sum ---

TEST(PlannerTest, SumUsesDeclaredBoundsWhenNoneRequested) {
  QuerySpec spec = SumSpec("age");
  spec.max_contributions = 3;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_EQ(plan.spec.lower, 18.0);
  EXPECT_EQ(plan.spec.upper, 90.0);
  EXPECT_EQ(plan.scan.clamp_lower, 18.0);
  EXPECT_EQ(plan.scan.clamp_upper, 90.0);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].statistic, Statistic::kSum);
  EXPECT_DOUBLE_EQ(plan.components[0].sensitivity, 3 * 90.0);
  EXPECT_EQ(plan.components[0].epsilon, spec.epsilon);
}

TEST(PlannerTest, SumKeepsRequestedNarrowerBounds) {
  QuerySpec spec = SumSpec();
  spec.lower = 10.0;
  spec.upper = 20.0;
  spec.max_contributions = 2;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_EQ(plan.spec.lower, 10.0);
  EXPECT_EQ(plan.spec.upper, 20.0);
  EXPECT_EQ(plan.scan.clamp_lower, 10.0);
  EXPECT_EQ(plan.scan.clamp_upper, 20.0);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_DOUBLE_EQ(plan.components[0].sensitivity, 40.0);
}

TEST(PlannerTest, GaussianSumGetsTheWholeDelta) {
  QuerySpec spec = SumSpec();
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-5;
  QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.delta_units, 10000000000000);  // 1e-5 in units of 1e-18, charged exactly
  // The mechanism gets the largest double not above the charge (privacy_units.h).
  EXPECT_EQ(plan.components[0].delta, MechanismDelta(plan.delta_units));
  EXPECT_LE(plan.components[0].delta, 1e-5);
}

// --- mean ---

TEST(PlannerTest, MeanSplitsBudgetIntoCentredSumAndCount) {
  QuerySpec spec = MeanSpec();
  spec.lower = 10.0;
  spec.upper = 30.0;
  spec.max_contributions = 4;
  spec.epsilon = 0.8;
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-6;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_DOUBLE_EQ(plan.scan.center, 20.0);
  EXPECT_EQ(plan.scan.clamp_lower, 10.0);
  EXPECT_EQ(plan.scan.clamp_upper, 30.0);
  ASSERT_EQ(plan.components.size(), 2u);

  const NoiseComponent* sum = nullptr;
  const NoiseComponent* count = nullptr;
  for (const NoiseComponent& c : plan.components) {
    (c.statistic == Statistic::kSum ? sum : count) = &c;
  }
  ASSERT_NE(sum, nullptr);
  ASSERT_NE(count, nullptr);
  EXPECT_DOUBLE_EQ(sum->sensitivity, 4 * (30.0 - 10.0) / 2);
  EXPECT_DOUBLE_EQ(count->sensitivity, 4.0);
  EXPECT_DOUBLE_EQ(sum->epsilon, 0.4);
  EXPECT_DOUBLE_EQ(count->epsilon, 0.4);
  EXPECT_DOUBLE_EQ(sum->delta, 5e-7);
  EXPECT_DOUBLE_EQ(count->delta, 5e-7);
}

TEST(PlannerTest, MeanUsesDeclaredBoundsAndTheirMidpoint) {
  QueryPlan plan = PlanOrDie(MeanSpec("age"));
  EXPECT_DOUBLE_EQ(plan.scan.center, 54.0);
  ASSERT_EQ(plan.components.size(), 2u);
  for (const NoiseComponent& c : plan.components) {
    if (c.statistic == Statistic::kSum) {
      EXPECT_DOUBLE_EQ(c.sensitivity, 36.0);
    } else {
      EXPECT_DOUBLE_EQ(c.sensitivity, 1.0);
    }
  }
}

TEST(PlannerTest, MeanCentreOfNegativeRange) {
  QuerySpec spec = MeanSpec("score");
  spec.lower = -10.0;
  spec.upper = -2.0;
  QueryPlan plan = PlanOrDie(spec);
  EXPECT_DOUBLE_EQ(plan.scan.center, -6.0);
}

TEST(PlannerTest, MeanLaplaceComponentsHaveZeroDelta) {
  QueryPlan plan = PlanOrDie(MeanSpec());
  for (const NoiseComponent& c : plan.components) EXPECT_EQ(c.delta, 0.0);
}

TEST(PlannerTest, ComponentsBudgetsAddUpToTheSpec) {
  std::vector<QuerySpec> specs;
  for (double epsilon : {1e-9, 0.1, 0.3, 1.0, 2.7, 1e6}) {
    for (auto make : {CountSpec(), SumSpec(), MeanSpec()}) {
      QuerySpec laplace = make;
      laplace.epsilon = epsilon;
      specs.push_back(laplace);
      QuerySpec gaussian = laplace;
      gaussian.mechanism = MechanismKind::kGaussian;
      gaussian.delta = 1.0 / 3.0 * 1e-5;
      specs.push_back(gaussian);
    }
  }
  for (const QuerySpec& spec : specs) {
    QueryPlan plan = PlanOrDie(spec);
    double epsilon = 0;
    double delta = 0;
    for (const NoiseComponent& c : plan.components) {
      EXPECT_GT(c.epsilon, 0);
      epsilon += c.epsilon;
      delta += c.delta;
    }
    // The charge is the decimal the analyst wrote (rounded to 1e-12 / 1e-18 units); mechanisms
    // get at most that, and at most one ulp less.
    EXPECT_DOUBLE_EQ(epsilon, plan.spec.epsilon) << plan.fingerprint;
    EXPECT_DOUBLE_EQ(delta, plan.spec.delta) << plan.fingerprint;
    EXPECT_LE(epsilon, plan.spec.epsilon) << "over budget: " << plan.fingerprint;
    EXPECT_LE(delta, plan.spec.delta) << "over budget: " << plan.fingerprint;
    EXPECT_EQ(plan.epsilon_units, *EpsilonToUnits(spec.epsilon, "epsilon"));
  }
}

// --- fingerprint ---

TEST(PlannerTest, FingerprintEqualForEqualSpecs) {
  for (const QuerySpec& spec : {CountSpec(), SumSpec(), MeanSpec()}) {
    QueryPlan a = PlanOrDie(spec);
    QueryPlan b = PlanOrDie(spec);
    EXPECT_FALSE(a.fingerprint.empty());
    EXPECT_EQ(a.fingerprint, b.fingerprint);
  }
}

TEST(PlannerTest, FingerprintEqualWhenRequestedBoundsEqualTheDeclared) {
  QuerySpec explicit_bounds = SumSpec();
  explicit_bounds.lower = 0.0;
  explicit_bounds.upper = 100.0;
  EXPECT_EQ(PlanOrDie(SumSpec()).fingerprint, PlanOrDie(explicit_bounds).fingerprint);
}

TEST(PlannerTest, CountFingerprintIgnoresColumn) {
  QuerySpec with_column = CountSpec();
  with_column.column = "amount";
  EXPECT_EQ(PlanOrDie(CountSpec()).fingerprint, PlanOrDie(with_column).fingerprint);
}

TEST(PlannerTest, FingerprintDiffersWhenAnyFieldDiffers) {
  QuerySpec base = SumSpec();
  base.lower = 10.0;
  base.upper = 20.0;
  const std::string base_fingerprint = PlanOrDie(base).fingerprint;

  std::vector<std::pair<std::string, std::function<void(QuerySpec&)>>> changes = {
      // One charge unit (1e-12) more; a mere ulp would round to the same charge and, rightly, the
      // same fingerprint.
      {"epsilon", [](QuerySpec& s) { s.epsilon = 1.000000000001; }},
      {"lower", [](QuerySpec& s) { s.lower = 10.000000000000002; }},
      {"upper", [](QuerySpec& s) { s.upper = 19.5; }},
      {"max_contributions", [](QuerySpec& s) { s.max_contributions = 2; }},
      {"mechanism",
       [](QuerySpec& s) {
         s.mechanism = MechanismKind::kGaussian;
         s.delta = 1e-6;
       }},
      {"column",
       [](QuerySpec& s) {
         s.column = "age";
         s.lower = 20.0;
         s.upper = 30.0;
       }},
      {"aggregate", [](QuerySpec& s) { s.aggregate = AggregateKind::kMean; }},
      {"aggregate=count", [](QuerySpec& s) { s.aggregate = AggregateKind::kCount; }},
      {"confidence", [](QuerySpec& s) { s.confidence = 0.99; }},
      {"dataset", [](QuerySpec& s) { s.dataset = "visits2"; }},
  };
  std::vector<std::string> seen = {base_fingerprint};
  for (auto& [name, change] : changes) {
    QuerySpec spec = base;
    change(spec);
    const std::string fingerprint = PlanOrDie(spec).fingerprint;
    EXPECT_NE(fingerprint, base_fingerprint) << "changing " << name;
    for (const std::string& other : seen) EXPECT_NE(fingerprint, other) << "changing " << name;
    seen.push_back(fingerprint);
  }
}

TEST(PlannerTest, GaussianFingerprintDiffersByDelta) {
  QuerySpec a = CountSpec();
  a.mechanism = MechanismKind::kGaussian;
  a.delta = 1e-6;
  QuerySpec b = a;
  b.delta = 1e-7;
  EXPECT_NE(PlanOrDie(a).fingerprint, PlanOrDie(b).fingerprint);
}

// --- the extended language: variance, quantile, histogram, group-by ---

DatasetSchema SchemaWithCategories() {
  DatasetSchema schema = TestSchema();
  schema.columns.push_back(
      {"plan", ColumnType::kText, absl::nullopt, absl::nullopt, {"free", "pro"}});
  return schema;
}

TEST(PlannerTest, VarianceSplitsTheBudgetInThirdsWithCentredSensitivities) {
  QuerySpec spec = SumSpec();
  spec.aggregate = AggregateKind::kVariance;
  spec.max_contributions = 3;
  const QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 3u);
  EXPECT_TRUE(plan.scan.sum_squares);
  EXPECT_EQ(plan.scan.center, 50);
  EXPECT_EQ(plan.components[0].statistic, Statistic::kSum);
  EXPECT_EQ(plan.components[0].sensitivity, 3 * 50);  // K (U - L) / 2
  EXPECT_EQ(plan.components[1].statistic, Statistic::kSumSquares);
  EXPECT_EQ(plan.components[1].sensitivity, 3 * 50 * 50);  // K ((U - L) / 2)^2
  EXPECT_EQ(plan.components[2].statistic, Statistic::kCount);
  EXPECT_EQ(plan.components[2].sensitivity, 3);
  double eps = 0;
  for (const NoiseComponent& c : plan.components) eps += c.epsilon;
  EXPECT_LE(eps, 1.0);
  EXPECT_NEAR(eps, 1.0, 1e-15);
}

TEST(PlannerTest, QuantileUsesAFixedGridOverTheBoundsAndIsPure) {
  QuerySpec spec = SumSpec();
  spec.aggregate = AggregateKind::kQuantile;
  spec.quantiles = {0.5, 0.9};
  const QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.scan.bucket_edges.size(), static_cast<size_t>(kQuantileBuckets) + 1);
  EXPECT_EQ(plan.scan.bucket_edges.front(), 0);
  EXPECT_EQ(plan.scan.bucket_edges.back(), 100);
  // Half of epsilon selects, half buys the histogram that bounds the selection (its intervals).
  const double eps = MechanismEpsilon(plan.epsilon_units);
  EXPECT_EQ(plan.quantile_epsilon, eps / 2);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].statistic, NoiseComponent::Statistic::kBucketCounts);
  EXPECT_EQ(plan.components[0].epsilon, eps / 2);
  EXPECT_EQ(plan.components[0].delta, 0);
  EXPECT_EQ(plan.components[0].sensitivity, 1);  // K = 1 row per unit
  EXPECT_EQ(plan.components[0].changed_coordinates, 1);
  // The result cache never serves a quantile answer released before the intervals existed.
  EXPECT_THAT(plan.fingerprint, HasSubstr("|release=2"));
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-6;
  ExpectRejectedNaming(spec, "mechanism");
}

// Six or more levels: no selection; all of epsilon buys the histogram the quantiles are read from.
TEST(PlannerTest, ManyQuantileLevelsSpendAllEpsilonOnTheHistogram) {
  QuerySpec spec = SumSpec();
  spec.aggregate = AggregateKind::kQuantile;
  spec.quantiles.assign(kMaxSelectedQuantiles, 0.5);
  const QueryPlan few = PlanOrDie(spec);
  EXPECT_GT(few.quantile_epsilon, 0);
  spec.quantiles = {0.1, 0.2, 0.3, 0.5, 0.7, 0.9};
  ASSERT_GT(spec.quantiles.size(), static_cast<size_t>(kMaxSelectedQuantiles));
  const QueryPlan many = PlanOrDie(spec);
  EXPECT_EQ(many.quantile_epsilon, 0);
  ASSERT_EQ(many.components.size(), 1u);
  EXPECT_EQ(many.components[0].statistic, NoiseComponent::Statistic::kBucketCounts);
  EXPECT_EQ(many.components[0].epsilon, MechanismEpsilon(many.epsilon_units));
}

TEST(PlannerTest, QuantileLevelsAreValidated) {
  QuerySpec spec = SumSpec();
  spec.aggregate = AggregateKind::kQuantile;
  ExpectRejectedNaming(spec, "quantiles");  // none given
  for (double q : {-0.1, 1.5, kNaN}) {
    spec.quantiles = {0.5, q};
    ExpectRejectedNaming(spec, "quantiles");
  }
  spec.quantiles.assign(kMaxQuantiles + 1, 0.5);
  ExpectRejectedNaming(spec, "quantiles");
  QuerySpec count = CountSpec();
  count.quantiles = {0.5};
  ExpectRejectedNaming(count, "quantiles");
}

TEST(PlannerTest, NumericHistogramCountsRowsPerBinWithSensitivityK) {
  QuerySpec spec = SumSpec("score");
  spec.aggregate = AggregateKind::kHistogram;
  spec.bins = {-5, 0, 10, 1e6};
  spec.max_contributions = 4;
  const QueryPlan plan = PlanOrDie(spec);  // no declared bounds needed: bins are the range
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].statistic, Statistic::kBucketCounts);
  EXPECT_EQ(plan.components[0].sensitivity, 4);
  EXPECT_EQ(plan.components[0].changed_coordinates, 3);  // min(K, bins)
  EXPECT_EQ(plan.scan.bucket_edges, spec.bins);
  EXPECT_EQ(plan.scan.clamp_lower, -5);
  EXPECT_EQ(plan.scan.clamp_upper, 1e6);
  for (auto bad : std::vector<std::vector<double>>{{1}, {1, 1}, {2, 1}, {0, kInf}}) {
    spec.bins = bad;
    ExpectRejectedNaming(spec, "bins");
  }
  // Gaussian: within one group the bucket vector moves by at most K in L2 as well.
  spec.bins = {0, 1, 2};
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-6;
  const QueryPlan gaussian = PlanOrDie(spec);
  ASSERT_EQ(gaussian.components.size(), 1u);
  EXPECT_EQ(gaussian.components[0].sensitivity, 4);
  EXPECT_EQ(gaussian.components[0].changed_coordinates, 2);
  EXPECT_EQ(gaussian.components[0].delta, MechanismDelta(gaussian.delta_units));
}

// A sum grouped by city over the declared keys Oslo and Lima, K rows per unit and group, M groups.
QuerySpec CitySumSpec(int k, int m) {
  QuerySpec spec = SumSpec();
  spec.group_by = {"city"};
  spec.keys = {"Oslo", "Lima"};
  spec.max_contributions = k;
  spec.max_partitions = m;
  return spec;
}

// Across M groups the Gaussian's L2 sensitivity is sqrt(M) times the per-group one (Laplace: M
// times, in L1); with partition selection the selection and the Gaussian take half of delta each.
TEST(PlannerTest, GaussianGroupByScalesL2SensitivityBySqrtOfMaxPartitions) {
  QuerySpec spec = CitySumSpec(/*k=*/2, /*m=*/4);
  spec.mechanism = MechanismKind::kGaussian;
  spec.delta = 1e-6;
  const QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].sensitivity, 2 * 2 * 100);  // sqrt(M) K max(|L|, |U|)
  EXPECT_EQ(plan.components[0].changed_coordinates, 4);
  EXPECT_EQ(plan.components[0].delta, MechanismDelta(plan.delta_units));

  spec.keys.clear();
  const QueryPlan selected = PlanOrDie(spec);
  ASSERT_TRUE(selected.selection.needed);
  EXPECT_EQ(selected.selection.delta, MechanismDelta(selected.delta_units) / 2);
  ASSERT_EQ(selected.components.size(), 1u);
  EXPECT_EQ(selected.components[0].delta, MechanismDelta(selected.delta_units) / 2);
  EXPECT_EQ(selected.components[0].epsilon, MechanismEpsilon(selected.epsilon_units) / 2);
}

TEST(PlannerTest, GroupByScalesSensitivityByMaxPartitions) {
  QuerySpec spec = CitySumSpec(/*k=*/2, /*m=*/3);
  const QueryPlan plan = PlanOrDie(spec);
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].sensitivity, 3 * 2 * 100);  // M K max(|L|, |U|)
  EXPECT_EQ(plan.components[0].changed_coordinates, 3);
  EXPECT_FALSE(plan.selection.needed);
  EXPECT_EQ(plan.declared_keys, (std::vector<std::vector<std::string>>{{"Oslo"}, {"Lima"}}));
  EXPECT_EQ(plan.scan.group_columns, std::vector<std::string>{"city"});
  EXPECT_EQ(plan.scan.group_domains, (std::vector<std::vector<std::string>>{{"Oslo", "Lima"}}));
  EXPECT_EQ(plan.scan.max_partitions, 3);
}

TEST(PlannerTest, GroupByWithoutDeclaredKeysSelectsPartitionsAndNeedsDelta) {
  QuerySpec spec = CountSpec();
  spec.group_by = {"city"};
  ExpectRejectedNaming(spec, "delta");
  spec.delta = 1e-6;
  const QueryPlan plan = PlanOrDie(spec);
  EXPECT_TRUE(plan.selection.needed);
  EXPECT_TRUE(plan.scan.count_units);
  // Half of epsilon and all of delta select; the other half releases the counts.
  EXPECT_EQ(plan.selection.epsilon, MechanismEpsilon(plan.epsilon_units) / 2);
  EXPECT_EQ(plan.selection.delta, MechanismDelta(plan.delta_units));
  ASSERT_EQ(plan.components.size(), 1u);
  EXPECT_EQ(plan.components[0].epsilon, MechanismEpsilon(plan.epsilon_units) / 2);
  EXPECT_EQ(plan.components[0].delta, 0);
}

TEST(PlannerTest, DeclaredCategoriesAreReleasedAsTheCrossProduct) {
  QuerySpec spec = CountSpec();
  spec.group_by = {"plan"};
  const QueryPlan one = PlanQuery(spec, SchemaWithCategories()).value();
  EXPECT_FALSE(one.selection.needed);
  EXPECT_EQ(one.declared_keys, (std::vector<std::vector<std::string>>{{"free"}, {"pro"}}));
  // A text histogram over the categorical column: one bin per declared category.
  QuerySpec hist = CountSpec();
  hist.aggregate = AggregateKind::kHistogram;
  hist.column = "plan";
  const QueryPlan h = PlanQuery(hist, SchemaWithCategories()).value();
  EXPECT_FALSE(h.selection.needed);
  EXPECT_EQ(h.scan.group_columns, std::vector<std::string>{"plan"});
  EXPECT_EQ(h.declared_keys.size(), 2u);
}

TEST(PlannerTest, GroupByIsValidated) {
  QuerySpec spec = CountSpec();
  spec.delta = 1e-6;
  spec.group_by = {"nope"};
  ExpectRejectedNaming(spec, "group_by");
  spec.group_by = {"user_id"};  // the privacy unit
  ExpectRejectedNaming(spec, "group_by");
  spec.group_by = {"city", "city"};
  ExpectRejectedNaming(spec, "group_by");
  spec.group_by = {"city", "age", "amount", "score"};
  ExpectRejectedNaming(spec, "group_by");
  spec.group_by = {"city"};
  spec.max_partitions = 0;
  ExpectRejectedNaming(spec, "max_partitions");
  spec.max_partitions = 1;
  spec.keys = {"a", "a"};
  ExpectRejectedNaming(spec, "keys");
  spec.keys = {"Oslo", std::string("Lima\0", 5)};  // PostgreSQL text cannot hold NUL
  ExpectRejectedNaming(spec, "keys");
  spec.keys = {std::string(kMaxCategoryLength + 1, 'x')};
  ExpectRejectedNaming(spec, "keys");
  spec.group_by = {"city", "age"};
  spec.keys = {"a"};
  ExpectRejectedNaming(spec, "keys");
  QuerySpec ungrouped = CountSpec();
  ungrouped.keys = {"a"};
  ExpectRejectedNaming(ungrouped, "keys");
}

TEST(PlannerTest, ExtendedFieldsJoinTheFingerprint) {
  QuerySpec base = CountSpec();
  base.delta = 1e-6;
  base.group_by = {"city"};
  const std::string f = PlanOrDie(base).fingerprint;
  QuerySpec m = base;
  m.max_partitions = 2;
  EXPECT_NE(PlanOrDie(m).fingerprint, f);
  QuerySpec k = base;
  k.keys = {"Oslo"};
  k.delta = 0;  // declared keys: no selection, so Laplace needs delta 0
  EXPECT_NE(PlanOrDie(k).fingerprint, f);
  // Keys are length-prefixed: {"a,b"} and {"a", "b"} differ.
  QuerySpec k1 = k, k2 = k;
  k1.keys = {"a;b"};
  k2.keys = {"a", "b"};
  EXPECT_NE(PlanOrDie(k1).fingerprint, PlanOrDie(k2).fingerprint);
  // An ungrouped query keeps its pre-extension fingerprint (cache and replays stay valid).
  EXPECT_EQ(PlanOrDie(CountSpec()).fingerprint.find("group_by"), std::string::npos);
}

// Per-unit pre-aggregation (QuerySpec::pre_aggregate, the SQL front end's SUM and AVG): one
// clamped value per unit and group, so the sensitivity is that of one row (K = 1) times M, however
// many rows a unit holds; the per-unit total of a sum may exceed the declared row bounds.
TEST(PlannerTest, PreAggregatedSumHasOneRowSensitivityAndItsOwnFingerprint) {
  QuerySpec spec = SumSpec();
  spec.pre_aggregate = true;
  spec.lower = 0.0;
  spec.upper = 500.0;  // a unit's total, above the declared row bound 100
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->scan.pre_aggregate);
  EXPECT_FALSE(plan->scan.pre_aggregate_mean);
  EXPECT_FALSE(plan->scan.bound_by_row_rank);
  EXPECT_EQ(plan->scan.max_contributions, 1);
  ASSERT_EQ(plan->components.size(), 1u);
  EXPECT_EQ(plan->components[0].sensitivity, 500.0);
  EXPECT_THAT(plan->fingerprint, HasSubstr("|pre_aggregate=1"));

  QuerySpec grouped = spec;
  grouped.group_by = {"city"};
  grouped.max_partitions = 3;
  grouped.delta = 1e-6;
  absl::StatusOr<QueryPlan> g = PlanQuery(grouped, TestSchema());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->components[0].sensitivity, 3 * 500.0);  // M groups, one clamped value each
}

TEST(PlannerTest, PreAggregatedMeanKeepsTheDeclaredBoundsCheck) {
  QuerySpec spec = MeanSpec();
  spec.pre_aggregate = true;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->scan.pre_aggregate_mean);
  EXPECT_EQ(plan->components[0].sensitivity, 50.0);  // centred sum: (U - L) / 2, K = 1
  spec.lower = 0.0;
  spec.upper = 500.0;  // a mean of rows in [0, 100] cannot leave [0, 100]
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(), HasSubstr("declared bounds"));
}

// A per-unit count (SQL's COUNT with contribution_bounds_per_group => (L, U), L > 0; the flag
// count with --per-unit): each unit present in a group adds its row count clamped to [L, U], one
// value per unit and group. It is the sum of one row per unit with K = 1, so the planner's sum
// sensitivity max(|L|, |U|) = U applies per group and M U to the vector (Wilson et al. 2020, §3):
// removing a unit changes each of its <= M groups by at most U.
TEST(PlannerTest, PerUnitCountHasSensitivityMTimesUpper) {
  QuerySpec spec = CountSpec();
  spec.pre_aggregate = true;
  spec.lower = 2.0;
  spec.upper = 7.0;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, TestSchema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->scan.pre_aggregate);
  EXPECT_TRUE(plan->scan.pre_aggregate_count);
  EXPECT_TRUE(plan->scan.sum_values);
  EXPECT_TRUE(plan->scan.value_column.empty());
  EXPECT_EQ(plan->scan.clamp_lower, 2.0);
  EXPECT_EQ(plan->scan.clamp_upper, 7.0);
  EXPECT_EQ(plan->scan.center, 0.0);
  EXPECT_FALSE(plan->scan.bound_by_row_rank);
  ASSERT_EQ(plan->components.size(), 1u);
  EXPECT_EQ(plan->components[0].sensitivity, 7.0);
  EXPECT_EQ(plan->components[0].sensitivity, *SumSensitivity(1, 2.0, 7.0));
  EXPECT_THAT(plan->fingerprint, HasSubstr("|pre_aggregate=1"));
  EXPECT_THAT(plan->fingerprint, HasSubstr("lower=2|upper=7"));

  QuerySpec grouped = spec;
  grouped.group_by = {"city"};
  grouped.max_partitions = 4;
  grouped.delta = 1e-6;
  absl::StatusOr<QueryPlan> g = PlanQuery(grouped, TestSchema());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->components[0].sensitivity, 4 * 7.0);  // M U
}

// Clamping a unit's count to [0, U] keeps min(count, U) of its rows: the row-level count with K = U,
// planned as that (same plan and fingerprint), so old plans and cached answers are unchanged.
TEST(PlannerTest, PerUnitCountFromZeroIsTheCountWithKEqualToUpper) {
  QuerySpec spec = CountSpec();
  spec.pre_aggregate = true;
  spec.lower = 0.0;
  spec.upper = 3.0;
  QuerySpec k3 = CountSpec();
  k3.max_contributions = 3;
  absl::StatusOr<QueryPlan> per_unit = PlanQuery(spec, TestSchema());
  absl::StatusOr<QueryPlan> rows = PlanQuery(k3, TestSchema());
  ASSERT_TRUE(per_unit.ok()) << per_unit.status();
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_FALSE(per_unit->scan.pre_aggregate);
  EXPECT_EQ(per_unit->scan.max_contributions, 3);
  EXPECT_EQ(per_unit->components[0].sensitivity, 3.0);
  EXPECT_EQ(per_unit->fingerprint, rows->fingerprint);
}

TEST(PlannerTest, PerUnitCountNeedsBoundsOfARowCount) {
  QuerySpec spec = CountSpec();
  spec.pre_aggregate = true;
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(),
              HasSubstr("lower and upper are required"));
  spec.lower = -1.0;
  spec.upper = 3.0;
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(), HasSubstr("0 <= lower < upper"));
  spec.lower = 3.0;
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(), HasSubstr("0 <= lower < upper"));
  spec.lower = 1.0;
  spec.upper = 1e300;
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(), HasSubstr("upper"));
  spec.upper = 3.0;
  spec.max_contributions = 2;
  EXPECT_THAT(PlanQuery(spec, TestSchema()).status().message(), HasSubstr("must be 1"));
}

// NULL group keys: a group of their own when the keys are selected from the data (ZetaSQL), never
// with a declared domain, and never in a text histogram's category column.
TEST(PlannerTest, NullGroupsOnlyWhereKeysAreSelected) {
  QuerySpec selected = CountSpec();
  selected.group_by = {"city"};
  selected.delta = 1e-6;
  absl::StatusOr<QueryPlan> s = PlanQuery(selected, TestSchema());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->scan.null_group_columns, 1u);

  QuerySpec declared = CountSpec();
  declared.group_by = {"city"};
  declared.keys = {"Oslo", "Bergen"};
  absl::StatusOr<QueryPlan> d = PlanQuery(declared, TestSchema());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->scan.null_group_columns, 0u);

  QuerySpec text_histogram = CountSpec();
  text_histogram.aggregate = AggregateKind::kHistogram;
  text_histogram.column = "city";
  text_histogram.delta = 1e-6;
  absl::StatusOr<QueryPlan> h = PlanQuery(text_histogram, TestSchema());
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->scan.null_group_columns, 0u);  // the category column is not a group_by column
  EXPECT_EQ(h->scan.group_columns.size(), 1u);
  // The fingerprint is unchanged, so stored answers replay under their request ids.
  EXPECT_EQ(s->fingerprint.find("null"), std::string::npos);
}

TEST(PlannerTest, PreAggregationRefusesOtherAggregatesAndKAboveOne) {
  QuerySpec variance = MeanSpec();
  variance.aggregate = AggregateKind::kVariance;
  variance.pre_aggregate = true;
  EXPECT_THAT(PlanQuery(variance, TestSchema()).status().message(),
              HasSubstr("count, sum and mean only"));
  QuerySpec sum = SumSpec();
  sum.pre_aggregate = true;
  sum.max_contributions = 2;
  EXPECT_THAT(PlanQuery(sum, TestSchema()).status().message(), HasSubstr("must be 1"));
}

TEST(AggregateDescriptionsTest, EveryKindHasItsOwnDescription) {
  for (AggregateKind kind : kAllAggregateKinds) {
    EXPECT_EQ(DescriptionOf(kind).kind, kind) << AggregateName(kind);
    EXPECT_NE(DescriptionOf(kind).plan, nullptr) << AggregateName(kind);
  }
}

}  // namespace
}  // namespace dpq::query
