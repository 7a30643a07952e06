#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/types/optional.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/expression/expression.h"
#include "server/query/expression/literal_text.h"

namespace dpq::query::expression {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ColumnSchema Numeric(std::string name, ColumnType type, absl::optional<double> lower = {},
                     absl::optional<double> upper = {}) {
  ColumnSchema c;
  c.name = std::move(name);
  c.type = type;
  c.lower = lower;
  c.upper = upper;
  return c;
}

DatasetSchema People() {
  DatasetSchema s;
  s.name = "people";
  s.privacy_unit = "id";
  s.columns = {Numeric("id", ColumnType::kInteger),
               Numeric("age", ColumnType::kInteger, 0, 120),
               Numeric("income", ColumnType::kDouble, 0, 1e6),
               Numeric("score", ColumnType::kDouble, -5, 5),
               Numeric("wages", ColumnType::kDouble),
               Numeric("visits", ColumnType::kInteger),
               Numeric("name", ColumnType::kText)};
  return s;
}

Expr Int(int64_t v) { return NumberLiteral(std::to_string(v), true); }
Expr Real(std::string text) { return NumberLiteral(std::move(text), false); }
Expr Col(std::string name) { return Column(std::move(name)); }
Expr B(Op op, Expr l, Expr r) { return Binary(op, std::move(l), std::move(r)); }
Expr If(Expr c, Expr a, Expr b) {
  Expr e = Call(Expr::Kind::kCase, {std::move(c), std::move(a), std::move(b)});
  e.has_else = true;
  return e;
}

CheckedExpression MustCheck(const Expr& e) {
  absl::StatusOr<CheckedExpression> c = CheckExpression(e, People());
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : CheckedExpression{};
}

// Asserts INVALID_ARGUMENT with `part` in the message.
void ExpectRefused(const Expr& e, const std::string& part) {
  absl::StatusOr<CheckedExpression> c = CheckExpression(e, People());
  ASSERT_FALSE(c.ok()) << "accepted: " << c->canonical;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(part));
}

TEST(CheckExpressionTest, TypesFollowZetaSql) {
  EXPECT_EQ(MustCheck(B(Op::kAdd, Col("age"), Int(1))).root.type, ValueType::kInt64);
  EXPECT_EQ(MustCheck(B(Op::kDivide, Col("age"), Int(2))).root.type, ValueType::kFloat64);
  EXPECT_EQ(MustCheck(B(Op::kMultiply, Col("age"), Real("1.5"))).root.type, ValueType::kFloat64);
  EXPECT_EQ(MustCheck(B(Op::kLt, Col("age"), Real("1.5"))).root.type, ValueType::kBool);
  EXPECT_EQ(MustCheck(B(Op::kEq, Col("name"), StringLiteral("x"))).root.type, ValueType::kBool);
  EXPECT_EQ(MustCheck(If(BoolLiteral(true), Col("age"), Col("income"))).root.type,
            ValueType::kFloat64);
  EXPECT_EQ(MustCheck(If(BoolLiteral(true), NullLiteral(), StringLiteral("a"))).root.type,
            ValueType::kString);
  EXPECT_EQ(MustCheck(Cast(Col("income"), ValueType::kInt64)).root.type, ValueType::kInt64);
  EXPECT_EQ(MustCheck(Cast(Col("age"), ValueType::kString)).root.type, ValueType::kString);
  EXPECT_EQ(MustCheck(Call(Expr::Kind::kCoalesce, {NullLiteral(), Col("age")})).root.type,
            ValueType::kInt64);
  const CheckedExpression column = MustCheck(Col("income"));
  EXPECT_EQ(column.root.column_type, ColumnType::kDouble);
  // An integer literal too large for INT64 reads as FLOAT64.
  EXPECT_EQ(MustCheck(B(Op::kLt, Col("age"), Int(0))).root.children[1].type, ValueType::kInt64);
  EXPECT_EQ(
      MustCheck(B(Op::kLt, Col("wages"), NumberLiteral("99999999999999999999", true))).canonical,
      "(wages < 1e+20)");
}

TEST(CheckExpressionTest, DerivesBoundsAndExplainsThem) {
  const CheckedExpression c = MustCheck(B(Op::kMultiply, B(Op::kAdd, Col("age"), Int(1)), Int(2)));
  EXPECT_EQ(c.canonical, "((age + 1) * 2)");
  ASSERT_TRUE(c.bounds.has_value());
  EXPECT_EQ(c.bounds->lower, 2);
  EXPECT_EQ(c.bounds->upper, 242);
  EXPECT_THAT(c.derivation, ElementsAre("age in [0, 120] (declared)", "(age + 1) in [1, 121]",
                                        "((age + 1) * 2) in [2, 242]"));
  const CheckedExpression cast =
      MustCheck(Cast(B(Op::kDivide, Col("age"), Int(7)), ValueType::kInt64));
  EXPECT_EQ(cast.bounds->lower, 0);
  EXPECT_EQ(cast.bounds->upper, 18);  // ceil(120 / 7 = 17.14...)
  const CheckedExpression abs = MustCheck(Call(Expr::Kind::kAbs, {Col("score")}));
  EXPECT_EQ(abs.bounds->lower, 0);
  EXPECT_EQ(abs.bounds->upper, 5);
  const CheckedExpression least =
      MustCheck(Call(Expr::Kind::kLeast, {Col("age"), Col("score"), NullLiteral()}));
  EXPECT_EQ(least.bounds->lower, -5);
  EXPECT_EQ(least.bounds->upper, 5);
  // A missing ELSE adds no bound: the NULL never reaches the aggregate.
  Expr no_else = Call(Expr::Kind::kCase, {B(Op::kLt, Col("age"), Int(30)), Int(10)});
  EXPECT_EQ(MustCheck(no_else).bounds->lower, 10);
  EXPECT_EQ(MustCheck(no_else).bounds->upper, 10);
  EXPECT_FALSE(MustCheck(B(Op::kLt, Col("age"), Int(30))).bounds.has_value());
}

TEST(CheckExpressionTest, BareColumnsNeedNoBounds) {
  const CheckedExpression bare = MustCheck(Col("wages"));
  EXPECT_FALSE(bare.bounds.has_value());
  EXPECT_EQ(bare.unbounded_column, "wages");
  const CheckedExpression declared = MustCheck(Col("age"));
  EXPECT_EQ(declared.bounds->upper, 120);
  EXPECT_TRUE(declared.unbounded_column.empty());
  MustCheck(B(Op::kGt, Col("wages"), Int(5)));
  MustCheck(B(Op::kEq, Col("wages"), Col("visits")));
  MustCheck(Call(Expr::Kind::kIn, {Col("visits"), Int(1), Unary(Op::kNegate, Int(2))}));
  MustCheck(Call(Expr::Kind::kIsNull, {Col("wages")}));
  MustCheck(B(Op::kGt, B(Op::kMultiply, Col("age"), Int(2)), Col("wages")));
  EXPECT_THAT(
      MustCheck(If(B(Op::kGt, Col("wages"), Int(5)), StringLiteral("hi"), StringLiteral("lo")))
          .literal_results,
      ElementsAre("hi", "lo"));
}

TEST(CheckExpressionTest, RefusesUnboundedColumnsInsideArithmetic) {
  const std::string advice = "declare bounds for it (dpqctl dataset create --bounds wages=L:U)";
  ExpectRefused(B(Op::kAdd, Col("wages"), Int(1)), advice);
  ExpectRefused(Call(Expr::Kind::kAbs, {Col("wages")}), advice);
  ExpectRefused(Call(Expr::Kind::kGreatest, {Col("age"), Col("wages")}), advice);
  ExpectRefused(Cast(Col("wages"), ValueType::kString), advice);
  ExpectRefused(If(BoolLiteral(true), Col("wages"), Int(0)), "inside a CASE result");
  ExpectRefused(Call(Expr::Kind::kCoalesce, {Col("visits"), Int(0)}), "--bounds visits=L:U");
}

TEST(CheckExpressionTest, RefusesTypeErrorsWithPosition) {
  ExpectRefused(Binary(Op::kAdd, Col("name"), Int(1), {2, 7}),
                "line 2, column 7: operator + needs numbers, got STRING and INT64");
  ExpectRefused(B(Op::kEq, Col("name"), Int(1)), "cannot compare STRING with INT64");
  ExpectRefused(Call(Expr::Kind::kCase, {Col("age"), Int(1)}), "WHEN condition must be BOOL");
  ExpectRefused(If(BoolLiteral(true), StringLiteral("a"), Int(1)), "no common type");
  ExpectRefused(Unary(Op::kNot, Col("age")), "NOT needs a BOOL");
  ExpectRefused(B(Op::kAnd, Col("age"), BoolLiteral(true)), "AND needs BOOL operands");
  ExpectRefused(Column("nope", {1, 3}), "line 1, column 3: unknown column nope");
  ExpectRefused(Call(Expr::Kind::kIn, {Col("age"), Col("visits")}), "IN list holds literals");
  ExpectRefused(Call(Expr::Kind::kIn, {Col("name"), Int(1)}), "cannot compare STRING");
  ExpectRefused(Cast(Col("name"), ValueType::kInt64, {1, 1}),
                "line 1, column 1: CAST from STRING to a number can fail on stored text; ");
  ExpectRefused(Cast(Col("name"), ValueType::kFloat64), "CAST from STRING to a number");
  ExpectRefused(Real("1e400"), "not a finite FLOAT64");
}

TEST(CheckExpressionTest, RefusesUnboundedDivisionAndHugeBounds) {
  ExpectRefused(Binary(Op::kDivide, Col("age"), Col("score"), {1, 5}),
                "line 1, column 5: division by \"score\": the divisor's bounds [-5, 5] include 0");
  ExpectRefused(B(Op::kDivide, Col("age"), B(Op::kSubtract, Col("age"), Int(1))),
                "division by \"(age - 1)\"");
  ExpectRefused(B(Op::kDivide, Col("age"), Col("wages")), "--bounds wages=L:U");
  ExpectRefused(B(Op::kDivide, Col("age"), NullLiteral()), "division by \"NULL\"");
  // Interval arithmetic treats each occurrence independently: [0, 120] / [1, 121].
  const CheckedExpression ratio =
      MustCheck(B(Op::kDivide, Col("age"), B(Op::kAdd, Col("age"), Int(1))));
  EXPECT_EQ(ratio.bounds->lower, 0);
  EXPECT_EQ(ratio.bounds->upper, 120);
  ExpectRefused(B(Op::kMultiply, B(Op::kMultiply, Col("income"), Col("income")), Col("income")),
                "exceed the largest magnitude");
  ExpectRefused(B(Op::kAdd, Col("age"), Real("2e15")), "the number 2e+15 inside arithmetic (+)");
  ExpectRefused(Real("2e15"), "exceeds the largest magnitude");
  MustCheck(B(Op::kLt, Col("wages"), Real("2e15")));  // a comparison reads no bound
}

Expr Nested(int depth) {
  Expr e = Col("age");
  for (int i = 1; i < depth; ++i) e = Unary(Op::kNegate, std::move(e));
  return e;
}

TEST(CheckExpressionTest, EnforcesDepthAndSize) {
  MustCheck(Nested(kMaxExpressionDepth));
  ExpectRefused(Nested(kMaxExpressionDepth + 1), "deeper than 64");
  // Far deeper than the limit: the checker stops at it rather than recursing down the tree. (Not
  // 100,000 deep: the tree's own destructor recurses too, and overflows the sanitizer build's
  // stack; the SQL parser caps nesting long before either.)
  ExpectRefused(Nested(2000), "deeper than 64");
  std::vector<Expr> args(kMaxExpressionNodes, Col("age"));
  ExpectRefused(Call(Expr::Kind::kGreatest, args), "more than 1000 parts");
  args.pop_back();
  MustCheck(Call(Expr::Kind::kGreatest, args));
}

TEST(CheckExpressionTest, CanonicalTextIgnoresSpelling) {
  const Expr cond = B(Op::kLt, Col("age"), Int(30));
  EXPECT_EQ(MustCheck(If(cond, StringLiteral("young"), StringLiteral("old"))).canonical,
            "CASE WHEN (age < 30) THEN 'young' ELSE 'old' END");
  EXPECT_EQ(MustCheck(Call(Expr::Kind::kCase, {cond, Int(1)})).canonical,
            MustCheck(If(cond, Int(1), NullLiteral())).canonical);
  EXPECT_EQ(MustCheck(B(Op::kAdd, Col("age"), NumberLiteral("007", true))).canonical, "(age + 7)");
  EXPECT_EQ(MustCheck(B(Op::kAdd, Col("age"), Real("1.50"))).canonical, "(age + 1.5)");
  EXPECT_EQ(MustCheck(B(Op::kAdd, Col("age"), Real("1.0"))).canonical, "(age + 1.0)");
  EXPECT_EQ(MustCheck(B(Op::kAdd, Col("age"), Unary(Op::kNegate, Int(3)))).canonical, "(age + -3)");
  EXPECT_EQ(MustCheck(Cast(Col("age"), ValueType::kString)).canonical, "CAST(age AS STRING)");
  EXPECT_EQ(MustCheck(B(Op::kEq, Col("name"), StringLiteral("it's"))).canonical,
            "(name = 'it''s')");
  EXPECT_EQ(MustCheck(Unary(Op::kNegate, Col("age"))).canonical, "(-age)");
  Expr not_in = Call(Expr::Kind::kIn, {Col("age"), Int(1), NullLiteral()});
  not_in.negated = true;
  EXPECT_EQ(MustCheck(not_in).canonical, "(age NOT IN (1, NULL))");
  EXPECT_EQ(MustCheck(Column("AGE")).root.name, "age");
}

TEST(CheckExpressionTest, LiteralResultsAreThePublicKeySet) {
  const Expr cond = B(Op::kLt, Col("age"), Int(30));
  EXPECT_THAT(MustCheck(If(cond, StringLiteral("young"), StringLiteral("old"))).literal_results,
              ElementsAre("young", "old"));
  Expr repeats = Call(Expr::Kind::kCase, {cond, StringLiteral("a"), BoolLiteral(false),
                                          NullLiteral(), cond, StringLiteral("a")});
  EXPECT_THAT(MustCheck(repeats).literal_results, ElementsAre("a"));
  // In a FLOAT64 CASE every result prints as float8out would.
  EXPECT_THAT(MustCheck(If(cond, Int(1000000000000000), Real("1.5"))).literal_results,
              ElementsAre("1e+15", "1.5"));
  EXPECT_THAT(
      MustCheck(If(cond, Int(1000000000000000), Unary(Op::kNegate, Int(2)))).literal_results,
      ElementsAre("1000000000000000", "-2"));
  EXPECT_THAT(MustCheck(If(cond, BoolLiteral(true), BoolLiteral(false))).literal_results,
              ElementsAre("true", "false"));
  EXPECT_THAT(
      MustCheck(Call(Expr::Kind::kCoalesce, {NullLiteral(), StringLiteral("x")})).literal_results,
      ElementsAre("x"));
  EXPECT_TRUE(MustCheck(If(cond, Col("age"), Int(1))).literal_results.empty());
  EXPECT_TRUE(MustCheck(B(Op::kAdd, Col("age"), Int(1))).literal_results.empty());
}

TEST(LiteralTextTest, Float8TextMatchesPostgres15) {
  // Each pair: a double and PostgreSQL 15's `x::float8::text` of it (observed with psql).
  const std::vector<std::pair<double, std::string>> cases = {
      {1e15, "1e+15"},
      {1e14, "100000000000000"},
      {1e16, "1e+16"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1.2e6, "1200000"},
      {1.5, "1.5"},
      {1e20, "1e+20"},
      {0.1, "0.1"},
      {1.23e-7, "1.23e-07"},
      {5e-324, "5e-324"},
      {1e308, "1e+308"},
      {999999999999999.0, "999999999999999"},
      {1234567890123456.0, "1.234567890123456e+15"},
      {123456789.0, "123456789"},
      {2.5e-5, "2.5e-05"},
      {-0.0, "-0"},
      {0.001234, "0.001234"},
      {-1.5, "-1.5"}};
  for (const auto& [value, text] : cases) EXPECT_EQ(Float8Text(value), text) << value;
}

// ---- Property: the derived bounds hold every value the expression can take. ----

struct ColumnPick {
  std::string name;
  bool integer;
  double lower, upper;
};

class TreeGenerator {
 public:
  explicit TreeGenerator(std::mt19937_64* rng) : rng_(*rng) {}
  std::vector<ColumnPick> columns;

  Expr Numeric(int depth) {
    const int kind = depth <= 0 ? Uniform(0, 1) : Uniform(0, 12);
    switch (kind) {
      case 0: {
        const ColumnPick& c = columns[Uniform(0, static_cast<int>(columns.size()) - 1)];
        return Col(c.name);
      }
      case 1: return Literal();
      case 2: return Unary(Op::kNegate, Numeric(depth - 1));
      case 3: return B(Op::kAdd, Numeric(depth - 1), Numeric(depth - 1));
      case 4: return B(Op::kSubtract, Numeric(depth - 1), Numeric(depth - 1));
      case 5:
      case 6: return B(Op::kMultiply, Numeric(depth - 1), Numeric(depth - 1));
      case 7: return B(Op::kDivide, Numeric(depth - 1), Numeric(depth - 1));
      case 8: return Call(Expr::Kind::kAbs, {Numeric(depth - 1)});
      case 9:
        return Call(Uniform(0, 1) ? Expr::Kind::kLeast : Expr::Kind::kGreatest,
                    {Numeric(depth - 1), Numeric(depth - 1), Numeric(depth - 1)});
      case 10: {
        Expr c = Call(Expr::Kind::kCase, {B(Op::kLt, Numeric(depth - 1), Numeric(depth - 1)),
                                          Numeric(depth - 1), Numeric(depth - 1)});
        c.has_else = Uniform(0, 1) == 1;
        if (!c.has_else) c.children.pop_back();
        return c;
      }
      case 11: return Call(Expr::Kind::kCoalesce, {Numeric(depth - 1), Numeric(depth - 1)});
      default:
        return Cast(Numeric(depth - 1), Uniform(0, 1) ? ValueType::kInt64 : ValueType::kFloat64);
    }
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  Expr Literal() {
    const int magnitude = Uniform(0, 50);
    Expr e = Uniform(0, 1) ? Int(magnitude)
                           : Real(absl::StrFormat("%d.%02d", magnitude, Uniform(0, 99)));
    return Uniform(0, 2) == 0 ? Unary(Op::kNegate, std::move(e)) : e;
  }
  std::mt19937_64& rng_;
};

using Value = absl::optional<long double>;  // nullopt: NULL

// Evaluates a checked tree exactly as the scan would (ZetaSQL semantics) in long double, and
// asserts every numeric node's value lies inside that node's derived bounds.
Value Evaluate(const Expr& e, const std::map<std::string, long double>& row, int* checked_nodes) {
  auto eval = [&](int i) { return Evaluate(e.children[i], row, checked_nodes); };
  Value v;
  switch (e.kind) {
    case Expr::Kind::kColumn: v = row.at(e.name); break;
    case Expr::Kind::kLiteral: v = e.bounds->lower; break;
    case Expr::Kind::kUnary:
      v = eval(0);
      if (v) v = -*v;
      break;
    case Expr::Kind::kBinary: {
      const Value a = eval(0), b = eval(1);
      if (!a || !b) break;
      switch (e.op) {
        case Op::kAdd: v = *a + *b; break;
        case Op::kSubtract: v = *a - *b; break;
        case Op::kMultiply: v = *a * *b; break;
        case Op::kDivide: v = *a / *b; break;
        case Op::kLt: v = *a < *b ? 1 : 0; break;
        default: ADD_FAILURE() << "unexpected operator"; break;
      }
      break;
    }
    case Expr::Kind::kAbs:
      v = eval(0);
      if (v) v = std::fabs(*v);
      break;
    case Expr::Kind::kLeast:
    case Expr::Kind::kGreatest:
      for (size_t i = 0; i < e.children.size(); ++i) {
        const Value a = eval(static_cast<int>(i));
        if (!a) return Value();  // ZetaSQL: NULL if any argument is NULL
        if (!v || (e.kind == Expr::Kind::kLeast ? *a < *v : *a > *v)) v = a;
      }
      break;
    case Expr::Kind::kCase: {
      const Value c = eval(0);
      if (c && *c == 1)
        v = eval(1);
      else if (e.has_else)
        v = eval(2);
      break;
    }
    case Expr::Kind::kCoalesce:
      v = eval(0);
      if (!v) v = eval(1);
      break;
    case Expr::Kind::kCast:
      v = eval(0);
      if (v && e.cast_type == ValueType::kInt64) v = std::round(*v);  // half away from zero
      break;
    default: ADD_FAILURE() << "unexpected node"; break;
  }
  if (v && e.type != ValueType::kBool) {
    EXPECT_TRUE(e.bounds.has_value());
    if (e.bounds.has_value()) {
      ++*checked_nodes;
      EXPECT_TRUE(e.bounds->lower <= *v && *v <= e.bounds->upper)
          << static_cast<double>(*v) << " outside " << e.bounds->ToString();
    }
  }
  return v;
}

TEST(CheckExpressionPropertyTest, DerivedBoundsHoldOnRandomTreesAndRows) {
  std::mt19937_64 rng(20261205);
  std::uniform_real_distribution<double> unit(0, 1);
  int accepted = 0, checked_nodes = 0;
  constexpr int kTrees = 4000;
  for (int tree = 0; tree < kTrees; ++tree) {
    DatasetSchema schema;
    schema.name = "random";
    TreeGenerator gen(&rng);
    for (int i = 0; i < 3; ++i) {
      const bool integer = i != 2;
      // Integer columns get integer bounds; the double column a scale from 1e-3 to 1e3, and a
      // sign pattern from all-negative to all-positive (so that some divisors exclude 0).
      const double scale = integer ? 1 : std::pow(10.0, std::floor(unit(rng) * 7) - 3);
      double lower = std::round((unit(rng) * 200 - 100)) * scale;
      double upper = lower + std::round(1 + unit(rng) * 100) * scale;
      if (!integer) lower += unit(rng) * scale;
      const std::string name = "c" + std::to_string(i);
      gen.columns.push_back({name, integer, lower, upper});
      schema.columns.push_back(
          Numeric(name, integer ? ColumnType::kInteger : ColumnType::kDouble, lower, upper));
    }
    const Expr e = gen.Numeric(4);
    absl::StatusOr<CheckedExpression> c = CheckExpression(e, schema);
    if (!c.ok()) {
      ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
      continue;
    }
    ++accepted;
    ASSERT_EQ(c->bounds.has_value(), c->root.bounds.has_value());
    // Every corner of the columns' box, then random rows inside it.
    for (int row_index = 0; row_index < 8 + 24; ++row_index) {
      std::map<std::string, long double> row;
      for (size_t i = 0; i < gen.columns.size(); ++i) {
        const ColumnPick& col = gen.columns[i];
        double v;
        if (row_index < 8) {
          v = (row_index >> i) & 1 ? col.upper : col.lower;
        } else {
          v = col.lower + unit(rng) * (col.upper - col.lower);
          v = col.integer ? std::round(v) : std::min(std::max(v, col.lower), col.upper);
        }
        row[col.name] = v;
      }
      Evaluate(c->root, row, &checked_nodes);
      if (HasFailure()) return;
    }
  }
  // Not vacuous: a good share of the trees is accepted and many nodes are checked.
  std::printf("accepted %d of %d trees, checked %d node values\n", accepted, kTrees, checked_nodes);
  EXPECT_GT(accepted, kTrees / 4);
  EXPECT_GT(checked_nodes, 100000);
}

}  // namespace
}  // namespace dpq::query::expression
