// The planner's handling of per-row expressions: value expressions with derived or given bounds,
// row conditions, group key expressions (public literal keys), key-only releases, fingerprints.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/expression/expression.h"
#include "server/query/planner.h"
#include "server/query/sensitivity.h"

namespace dpq::query {
namespace {

namespace ex = expression;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Statistic = NoiseComponent::Statistic;

DatasetSchema Schema() {
  DatasetSchema schema;
  schema.id = 7;
  schema.name = "people";
  schema.privacy_unit = "person";
  schema.columns = {
      {"person", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"age", ColumnType::kInteger, 0.0, 120.0, {}},
      {"wages", ColumnType::kDouble, 0.0, 100.0, {}},
      {"score", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},  // no declared bounds
      {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return schema;
}

QuerySpec Spec(AggregateKind kind) {
  QuerySpec spec;
  spec.dataset = "people";
  spec.aggregate = kind;
  spec.epsilon = 1.0;
  return spec;
}

std::shared_ptr<const ex::Expr> Share(ex::Expr e) {
  return std::make_shared<const ex::Expr>(std::move(e));
}

ex::Expr AgePlusWages() { return ex::Binary(ex::Op::kAdd, ex::Column("age"), ex::Column("wages")); }

TEST(ExpressionPlanningTest, SumOfAnExpressionUsesTheDerivedBoundsForItsSensitivity) {
  QuerySpec spec = Spec(AggregateKind::kSum);
  spec.value_expression = Share(AgePlusWages());
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->scan.value_column.empty());
  ASSERT_NE(plan->scan.value_expression, nullptr);
  EXPECT_EQ(plan->scan.clamp_lower, 0);
  EXPECT_EQ(plan->scan.clamp_upper, 220);
  ASSERT_EQ(plan->components.size(), 1u);
  EXPECT_EQ(plan->components[0].sensitivity, *SumSensitivity(1, 0, 220));
}

TEST(ExpressionPlanningTest, GivenBoundsClampTheExpressionEvenWiderThanDerivedOnes) {
  QuerySpec spec = Spec(AggregateKind::kMean);
  spec.value_expression = Share(AgePlusWages());
  spec.lower = -10;
  spec.upper = 500;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->scan.clamp_lower, -10);
  EXPECT_EQ(plan->scan.clamp_upper, 500);
}

TEST(ExpressionPlanningTest, UnderivableBoundsWithoutGivenOnesNameTheAggregateAndTheColumn) {
  QuerySpec spec = Spec(AggregateKind::kSum);
  spec.value_expression = Share(ex::Binary(ex::Op::kAdd, ex::Column("score"), ex::Column("age")));
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("sum"));
  EXPECT_THAT(plan.status().message(), HasSubstr("score"));
}

TEST(ExpressionPlanningTest, AConstantExpressionGetsARangeThatHoldsZero) {
  QuerySpec spec = Spec(AggregateKind::kSum);
  spec.value_expression = Share(ex::NumberLiteral("3", true));
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->scan.clamp_lower, 0);
  EXPECT_EQ(plan->scan.clamp_upper, 3);
}

TEST(ExpressionPlanningTest, AStringValueIsRefusedForSum) {
  QuerySpec spec = Spec(AggregateKind::kSum);
  spec.value_expression = Share(ex::Column("sex"));
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("needs a number"));
}

TEST(ExpressionPlanningTest, CountOfAnExpressionReadsItOnlyForItsNullTest) {
  QuerySpec spec = Spec(AggregateKind::kCount);
  ex::Expr when_old =
      ex::Call(ex::Expr::Kind::kCase,
               {ex::Binary(ex::Op::kGt, ex::Column("age"), ex::NumberLiteral("90", true)),
                ex::NumberLiteral("1", true)});
  spec.value_expression = Share(when_old);
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_NE(plan->scan.value_expression, nullptr);
  ASSERT_EQ(plan->components.size(), 1u);
  EXPECT_EQ(plan->components[0].statistic, Statistic::kCount);
  EXPECT_EQ(plan->components[0].sensitivity, 1);
}

TEST(ExpressionPlanningTest, ARowConditionMustBeBoolean) {
  QuerySpec spec = Spec(AggregateKind::kCount);
  spec.row_condition = Share(ex::Binary(
      ex::Op::kGt, ex::Binary(ex::Op::kMultiply, ex::Column("wages"), ex::NumberLiteral("2", true)),
      ex::Column("age")));
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_NE(plan->scan.row_condition, nullptr);

  spec.row_condition = Share(AgePlusWages());
  plan = PlanQuery(spec, Schema());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("where"));
}

ex::Expr AgeBand() {
  return ex::Call(ex::Expr::Kind::kCase,
                  {ex::Binary(ex::Op::kLt, ex::Column("age"), ex::NumberLiteral("30", true)),
                   ex::StringLiteral("young"), ex::StringLiteral("old")});
}

TEST(ExpressionPlanningTest, ACaseOfLiteralsIsAPublicKeySetReleasedWithoutSelection) {
  QuerySpec spec = Spec(AggregateKind::kCount);
  ex::Expr band = AgeBand();
  band.has_else = true;
  spec.group_by = {"band"};
  spec.group_expressions = {Share(band)};
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->selection.needed);
  EXPECT_THAT(plan->declared_keys, ElementsAre(ElementsAre("young"), ElementsAre("old")));
  ASSERT_EQ(plan->scan.group_expressions.size(), 1u);
  EXPECT_NE(plan->scan.group_expressions[0], nullptr);
}

TEST(ExpressionPlanningTest, AComputedKeyThatIsNotALiteralIsSelectedFromTheData) {
  QuerySpec spec = Spec(AggregateKind::kCount);
  spec.delta = 1e-6;
  spec.group_by = {"sex", "decade"};
  spec.group_expressions = {nullptr, Share(ex::Binary(ex::Op::kDivide, ex::Column("age"),
                                                      ex::NumberLiteral("10", true)))};
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->selection.needed);
  EXPECT_THAT(plan->scan.group_columns, ElementsAre("sex", "decade"));
  EXPECT_EQ(plan->scan.group_expressions[0], nullptr);
}

TEST(ExpressionPlanningTest, KeysOnlyGivesTheWholeBudgetToPartitionSelection) {
  QuerySpec spec = Spec(AggregateKind::kCount);
  spec.delta = 1e-6;
  spec.group_by = {"sex"};
  spec.keys_only = true;
  absl::StatusOr<QueryPlan> plan = PlanQuery(spec, Schema());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->components.empty());
  ASSERT_TRUE(plan->selection.needed);
  EXPECT_NEAR(plan->selection.epsilon, 1.0, 1e-9);
  EXPECT_NEAR(plan->selection.delta, 1e-6, 1e-15);

  spec.group_by.clear();
  EXPECT_FALSE(PlanQuery(spec, Schema()).ok());
}

TEST(ExpressionPlanningTest, ExpressionsJoinTheFingerprint) {
  QuerySpec a = Spec(AggregateKind::kSum);
  a.value_expression = Share(AgePlusWages());
  QuerySpec b = a;
  b.value_expression = Share(ex::Binary(ex::Op::kSubtract, ex::Column("age"), ex::Column("wages")));
  absl::StatusOr<QueryPlan> pa = PlanQuery(a, Schema());
  absl::StatusOr<QueryPlan> pb = PlanQuery(b, Schema());
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_NE(pa->fingerprint, pb->fingerprint);
  QuerySpec c = Spec(AggregateKind::kCount);
  QuerySpec d = c;
  d.row_condition = Share(ex::Binary(ex::Op::kGt, ex::Column("age"), ex::Column("wages")));
  EXPECT_NE(PlanQuery(c, Schema())->fingerprint, PlanQuery(d, Schema())->fingerprint);
}

}  // namespace
}  // namespace dpq::query
