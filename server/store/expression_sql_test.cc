// The SQL text ExpressionSql writes for checked trees (no database): literals become parameters,
// columns in arithmetic are clamped, rounding steps are clamped again, nothing is repeated, and
// trees the checker refuses are refused here too.
#include "server/store/expression_sql.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/expression_trees.h"

namespace dpq::store {
namespace {

using namespace ::dpq::testing::expr;  // NOLINT: the tree constructors
using query::ColumnType;
using query::expression::Op;
using ::testing::HasSubstr;
using ::testing::Not;

class ExpressionSqlTest : public ::testing::TestWithParam<ScanArithmetic> {
 protected:
  ExpressionSql Sql() {
    return ExpressionSql(
        GetParam(),
        [this](std::string value, absl::string_view cast) {
          params_.push_back(value);
          return absl::StrCat("$", params_.size(), "::", cast);
        },
        [](const std::string& name) { return absl::StrCat("\"", name, "\""); });
  }
  std::string type() const { return std::string(ScanArithmeticName(GetParam())); }
  std::vector<std::string> params_;
};

const Expr kAge = Col("age", ColumnType::kInteger, query::ValueInterval{0, 120});
const Expr kWage = Col("wage", ColumnType::kDouble, query::ValueInterval{-5, 5});

TEST_P(ExpressionSqlTest, AColumnInArithmeticIsClampedAndLiteralsAreParameters) {
  auto sql = Sql().Numeric(Bin(Op::kAdd, kAge, Int(1)));
  ASSERT_TRUE(sql.ok()) << sql.status();
  const std::string t = type();
  const std::string clamp =
      t == "numeric" ? "numeric_smaller(numeric_larger(" : "float8smaller(float8larger(";
  EXPECT_EQ(*sql, absl::StrCat("(", clamp, "\"age\"::", t, ", $1::", t, "), $2::", t, ") + $3::", t,
                               ")"));
  EXPECT_EQ(params_, (std::vector<std::string>{"0", "120", "1"}));
}

TEST_P(ExpressionSqlTest, ABareColumnIsReadRawInAComparisonAndAtTheRoot) {
  auto cond = Sql().Condition(Bin(Op::kGt, kWage, Dbl("0.5")));
  ASSERT_TRUE(cond.ok());
  EXPECT_THAT(*cond, HasSubstr("\"wage\"::float8 > "));
  EXPECT_THAT(*cond, Not(HasSubstr("smaller(")));
  auto root = Sql().Numeric(Col("x", ColumnType::kDouble));
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*root, absl::StrCat("\"x\"::", type()));
}

TEST_P(ExpressionSqlTest, ProductsAndQuotientsAreFlushedAndClampedIntoTheirBounds) {
  auto product = Sql().Numeric(Bin(Op::kMultiply, kWage, kWage));
  ASSERT_TRUE(product.ok());
  EXPECT_THAT(*product, HasSubstr("round("));
  EXPECT_EQ(params_.size(), 6u);  // two column clamps and the product's clamp [-25, 25]
  EXPECT_EQ(params_[4], "-25");
  auto quotient = Sql().Numeric(Bin(Op::kDivide, kWage, Bin(Op::kAdd, kAge, Int(1))));
  ASSERT_TRUE(quotient.ok());
  EXPECT_THAT(*quotient, HasSubstr(" / ("));
}

TEST_P(ExpressionSqlTest, RefusesWhatTheCheckerRefuses) {
  const Expr unbounded = Col("x", ColumnType::kDouble);
  EXPECT_FALSE(Sql().Numeric(Bin(Op::kAdd, unbounded, Int(1))).ok());
  EXPECT_FALSE(Sql().Numeric(Bin(Op::kDivide, kAge, kWage)).ok()) << "divisor may be 0";
  EXPECT_FALSE(Sql().Condition(Bin(Op::kAdd, kAge, Int(1))).ok());
  EXPECT_FALSE(Sql().Numeric(CastTo(Col("t", ColumnType::kText), ValueType::kInt64)).ok());
}

// Each builder reads its arguments once: 60 nested products, quotients, LEASTs and casts grow
// the text linearly, not 2^60-fold.
TEST_P(ExpressionSqlTest, NestingGrowsTheTextLinearly) {
  Expr product = kWage, least = kWage, cast = kWage;
  for (int i = 0; i < 60; ++i) {
    product = Bin(Op::kMultiply, Bin(Op::kDivide, product, Int(3)), Dbl("0.5"));
    least = Fn(Expr::Kind::kLeast, {least, Int(i)});
    cast = CastTo(CastTo(cast, ValueType::kInt64), ValueType::kFloat64);
  }
  for (const Expr& e : {product, least, cast}) {
    auto sql = Sql().Numeric(e);
    ASSERT_TRUE(sql.ok()) << sql.status();
    EXPECT_LT(sql->size(), 60u * 400u);
  }
}

TEST_P(ExpressionSqlTest, TextOfEachType) {
  auto n = Sql().Text(CastTo(Bin(Op::kAdd, kAge, Int(1)), ValueType::kString));
  ASSERT_TRUE(n.ok());
  EXPECT_THAT(*n, HasSubstr("::bigint::text"));
  auto b = Sql().Text(Bin(Op::kLt, kAge, Int(30)));
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(*b, HasSubstr(")::text"));
  auto s = Sql().Text(Case({Bin(Op::kLt, kAge, Int(30)), Str("young"), Str("old")}, true));
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(*s, HasSubstr("CASE WHEN"));
  EXPECT_EQ(params_.back(), "old");
}

INSTANTIATE_TEST_SUITE_P(Arithmetics, ExpressionSqlTest,
                         ::testing::Values(ScanArithmetic::kFloat8, ScanArithmetic::kNumeric),
                         [](const auto& info) {
                           return std::string(ScanArithmeticName(info.param));
                         });

}  // namespace
}  // namespace dpq::store
