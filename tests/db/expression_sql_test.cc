// Per-row expressions are total on hostile stored values, in both scan arithmetics
// (server/store/expression_sql.h): every construct is evaluated by PostgreSQL over NaN,
// +-Infinity, +-1e308, subnormals, -0, NULL, int64's extremes and odd text, never raises, and
// equals a C++ evaluation of the documented clamped computation (clamp, flush, clamp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"
#include "gtest/gtest.h"
#include "server/store/expression_sql.h"
#include "tests/db/adversarial_dataset.h"
#include "tests/db/store_test_env.h"
#include "tests/support/expression_trees.h"

namespace dpq::store {
namespace {

using namespace ::dpq::testing::expr;  // NOLINT: the tree constructors
using query::ColumnType;
using query::ValueInterval;
using Kind = Expr::Kind;
using Num = absl::optional<double>;

struct Row {
  Num x;
  absl::optional<int64_t> n;
};

// The C++ reference of the scan's arithmetic in float8 (scan_arithmetic.h): columns clamped into
// their bounds, factors and dividends flushed to multiples of 2^-500, products, quotients and
// casts clamped into their node's bounds; NULL propagates.
double Clamp(double v, const ValueInterval& b) {
  if (std::isnan(v)) return b.upper;  // PostgreSQL orders NaN above every number
  return std::min(std::max(v, b.lower), b.upper);
}
double Flush(double v) { return std::nearbyint(v * std::ldexp(1.0, 500)) / std::ldexp(1.0, 500); }

Num Eval(const Expr& e, const Row& r);
absl::optional<bool> Truth(const Expr& e, const Row& r);

Num RawColumn(const Expr& e, const Row& r) {
  if (e.name == "x") return r.x;
  if (!r.n) return absl::nullopt;
  return static_cast<double>(*r.n);
}

// PostgreSQL's float8 order: NaN equals NaN and is above every number.
int Compare(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) - std::isnan(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

// In numeric arithmetic a computed operand reaches float8 through round(v, 323)::float8
// (ToFloat8Once): a value below 5e-324 in magnitude compares as 0 there.
bool numeric_comparisons = false;

absl::optional<bool> Truth(const Expr& e, const Row& r) {
  const auto operand = [&](const Expr& c) -> Num {
    if (c.kind == Kind::kColumn) return RawColumn(c, r);
    Num v = Eval(c, r);
    if (v && numeric_comparisons && std::abs(*v) <= std::numeric_limits<double>::denorm_min()) {
      return 0.0;  // the numeric text of denorm_min, 4.94065645841247e-324, is below 5e-324
    }
    return v;
  };
  if (e.kind == Kind::kIsNull) return operand(e.children[0]).has_value() != !e.negated;
  if (e.kind == Kind::kUnary) {
    auto v = Truth(e.children[0], r);
    return v ? absl::optional<bool>(!*v) : absl::nullopt;
  }
  Num a = operand(e.children[0]), b = operand(e.children[1]);
  if (!a || !b) return absl::nullopt;
  const int c = Compare(*a, *b);
  switch (e.op) {
    case Op::kEq: return c == 0;
    case Op::kNe: return c != 0;
    case Op::kLt: return c < 0;
    case Op::kLe: return c <= 0;
    case Op::kGt: return c > 0;
    default: return c >= 0;
  }
}

Num Eval(const Expr& e, const Row& r) {
  std::vector<Num> in;
  if (e.kind != Kind::kCase) {
    for (const Expr& c : e.children) in.push_back(Eval(c, r));
  }
  const auto any_null = [&] {
    for (const Num& v : in)
      if (!v) return true;
    return false;
  };
  switch (e.kind) {
    case Kind::kColumn: {
      Num v = RawColumn(e, r);
      return v ? Num(Clamp(*v, *e.bounds)) : absl::nullopt;
    }
    case Kind::kLiteral: return std::strtod(e.text.c_str(), nullptr);
    case Kind::kUnary: return in[0] ? Num(-*in[0]) : absl::nullopt;
    case Kind::kAbs: return in[0] ? Num(std::abs(*in[0])) : absl::nullopt;
    case Kind::kCoalesce:
      for (const Num& v : in)
        if (v) return v;
      return absl::nullopt;
    case Kind::kLeast:
    case Kind::kGreatest: {
      if (any_null()) return absl::nullopt;
      double out = *in[0];
      for (const Num& v : in) out = e.kind == Kind::kLeast ? std::min(out, *v) : std::max(out, *v);
      return out;
    }
    case Kind::kCase: {
      const size_t whens = (e.children.size() - e.has_else) / 2;
      for (size_t i = 0; i < whens; ++i) {
        if (Truth(e.children[2 * i], r).value_or(false)) return Eval(e.children[2 * i + 1], r);
      }
      return e.has_else ? Eval(e.children.back(), r) : absl::nullopt;
    }
    case Kind::kCast:
      if (!in[0] || e.type != ValueType::kInt64) return in[0];
      return Clamp(std::round(*in[0]), *e.bounds);  // std::round: half away from zero
    default: break;
  }
  if (any_null()) return absl::nullopt;
  switch (e.op) {
    case Op::kAdd: return *in[0] + *in[1];
    case Op::kSubtract: return *in[0] - *in[1];
    case Op::kMultiply: return Clamp(Flush(*in[0]) * Flush(*in[1]), *e.bounds);
    default: return Clamp(Flush(*in[0]) / *in[1], *e.bounds);
  }
}

const std::vector<std::string>& OddTexts() {
  static const auto* const kTexts = new std::vector<std::string>{
      "", "NaN", "-0", "it's", "\xc3\xa9t\xc3\xa9", "1e308", "a\\b", " ", "NULL"};
  return *kTexts;
}

class ExpressionSqlDbTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    std::string values;
    const auto& xs = ::dpq::testing::AdversarialDoubles();
    const auto& ns = ::dpq::testing::AdversarialIntegers();
    for (size_t i = 0; i < xs.size() * ns.size(); ++i) {
      const std::string& x = xs[i % xs.size()];
      const std::string& n = ns[i / xs.size()];
      const std::string& t = OddTexts()[i % OddTexts().size()];
      Row row;
      if (x != "NULL") row.x = std::strtod(x.c_str(), nullptr);
      if (n != "NULL") row.n = std::stoll(n);
      rows_.push_back(row);
      texts_.push_back(t == "NULL" ? absl::nullopt : absl::optional<std::string>(t));
      absl::StrAppend(
          &values, i ? ", " : "", "(", i, ", ", x == "NULL" ? "NULL" : "'" + x + "'", "::float8, ",
          n, ", ", t == "NULL" ? "NULL" : "'" + absl::StrReplaceAll(t, {{"'", "''"}}) + "'", ")");
    }
    Sql(absl::StrCat(
        "CREATE TABLE hostile (id int, x float8, n bigint, t text); INSERT INTO hostile "
        "VALUES ",
        values));
  }

  // Evaluates `sql` (with its parameters inlined as quoted literals) on every row: id -> text.
  std::map<int, std::string> Run(const std::string& sql, const std::vector<std::string>& params) {
    std::string inlined = sql;
    for (size_t i = params.size(); i >= 1; --i) {
      inlined = absl::StrReplaceAll(
          inlined, {{absl::StrCat("$", i, "::"),
                     absl::StrCat("'", absl::StrReplaceAll(params[i - 1], {{"'", "''"}}), "'::")}});
    }
    auto out = TrySql(absl::StrCat("SET extra_float_digits = 3; SELECT id, coalesce((", inlined,
                                   ")::text, '<null>') FROM hostile ORDER BY id"));
    EXPECT_TRUE(out.ok()) << sql << ": " << out.status();
    std::map<int, std::string> by_id;
    if (!out.ok()) return by_id;
    for (absl::string_view line : absl::StrSplit(*out, '\n')) {
      std::vector<std::string> cells = absl::StrSplit(line, absl::MaxSplits('|', 1));
      int id = 0;
      if (cells.size() == 2 && absl::SimpleAtoi(cells[0], &id)) by_id[id] = cells[1];
    }
    EXPECT_EQ(by_id.size(), rows_.size()) << sql;
    return by_id;
  }

  ExpressionSql Writer(ScanArithmetic arithmetic, std::vector<std::string>* params) {
    return ExpressionSql(
        arithmetic,
        [params](std::string value, absl::string_view cast) {
          params->push_back(std::move(value));
          return absl::StrCat("$", params->size(), "::", cast);
        },
        [](const std::string& name) { return absl::StrCat("\"", name, "\""); });
  }

  std::vector<Row> rows_;
  std::vector<absl::optional<std::string>> texts_;
};

const Expr kX = Col("x", ColumnType::kDouble, ValueInterval{-10, 10});
const Expr kTinyX = Col("x", ColumnType::kDouble, ValueInterval{-1e-160, 1e-160});
const Expr kN = Col("n", ColumnType::kInteger, ValueInterval{-3, 7});

std::vector<Expr> NumericExpressions() {
  return {
      Bin(Op::kAdd, kX, kN),
      Bin(Op::kSubtract, kX, Dbl("2.5")),
      Un(Op::kNegate, kX),
      Bin(Op::kMultiply, kX, kX),
      Bin(Op::kMultiply, kTinyX, kTinyX),
      Bin(Op::kMultiply, kTinyX, Dbl("1e15")),
      Bin(Op::kDivide, kX, Bin(Op::kAdd, kN, Int(4))),
      Bin(Op::kDivide, kTinyX, Dbl("1e15")),
      Fn(Kind::kAbs, {kX}),
      Fn(Kind::kLeast, {kX, kN}),
      Fn(Kind::kGreatest, {kX, Int(1), kN}),
      Fn(Kind::kCoalesce, {kX, kN}),
      CastTo(Bin(Op::kMultiply, kX, Dbl("0.25")), ValueType::kInt64),
      CastTo(kN, ValueType::kFloat64),
      Case({Bin(Op::kGt, Col("x", ColumnType::kDouble), Int(0)), kX, kN}, true),
      Case({IsNull(Col("n", ColumnType::kInteger)), Int(-1)}, false),
  };
}

// Float8 is the reference computation itself: equal doubles. Numeric reads each float8 with 15
// significant digits (float8 -> numeric) and computes exactly, and flushes at 5e-152 instead of
// 2^-501: each of the <= 4 reads in an expression is off by <= 5e-16 relative, which the bounded
// operations here (|factor| <= 10) amplify to < 1e-13 relative, plus < 1e-150 absolute.
TEST_F(ExpressionSqlDbTest, EveryNumericConstructIsTotalAndEqualsTheClampedComputation) {
  for (ScanArithmetic arithmetic : {ScanArithmetic::kFloat8, ScanArithmetic::kNumeric}) {
    for (const Expr& e : NumericExpressions()) {
      std::vector<std::string> params;
      auto sql = Writer(arithmetic, &params).Numeric(e);
      ASSERT_TRUE(sql.ok()) << sql.status();
      const std::string as_float8 = SafeArithmetic(arithmetic).ToFloat8Once(*sql);
      std::map<int, std::string> got = Run(as_float8, params);
      for (const auto& [id, text] : got) {
        const Num want = Eval(e, rows_[id]);
        const std::string where =
            absl::StrCat(*sql, " row ", id, " (", ScanArithmeticName(arithmetic), ")");
        if (!want) {
          EXPECT_EQ(text, "<null>") << where;
          continue;
        }
        double v = 0;
        ASSERT_TRUE(absl::SimpleAtod(text, &v)) << where << ": " << text;
        if (arithmetic == ScanArithmetic::kFloat8) {
          EXPECT_EQ(v, *want) << where;
        } else {
          EXPECT_NEAR(v, *want, 1e-13 * std::abs(*want) + 1e-150) << where;
        }
      }
    }
  }
}

TEST_F(ExpressionSqlDbTest, ConditionsAreTotalAndThreeValued) {
  const Expr raw_x = Col("x", ColumnType::kDouble), raw_n = Col("n", ColumnType::kInteger);
  const std::vector<Expr> conditions = {Bin(Op::kGt, raw_x, Int(0)),
                                        Bin(Op::kEq, raw_x, raw_n),
                                        Bin(Op::kLe, Bin(Op::kMultiply, kX, kX), Dbl("0.5")),
                                        Bin(Op::kNe, raw_n, Int(INT64_MAX)),
                                        Un(Op::kNot, IsNull(raw_x)),
                                        Bin(Op::kLt, Fn(Kind::kLeast, {kX, kN}), Int(0))};
  for (ScanArithmetic arithmetic : {ScanArithmetic::kFloat8, ScanArithmetic::kNumeric}) {
    for (const Expr& e : conditions) {
      numeric_comparisons = arithmetic == ScanArithmetic::kNumeric;
      std::vector<std::string> params;
      auto sql = Writer(arithmetic, &params).Condition(e);
      ASSERT_TRUE(sql.ok()) << sql.status();
      for (const auto& [id, text] : Run(*sql, params)) {
        const absl::optional<bool> want = Truth(e, rows_[id]);
        EXPECT_EQ(text, !want ? "<null>" : *want ? "true" : "false") << *sql << " row " << id;
      }
    }
  }
}

// Keys: equal values print as equal text (-0 as 0), INT64 as bigint digits, text as stored.
TEST_F(ExpressionSqlDbTest, GroupKeyTextsAreTotalAndCanonical) {
  const Expr text_key = Case({Bin(Op::kEq, Col("t", ColumnType::kText), Str("it's")), Str("quote"),
                              Fn(Kind::kCoalesce, {Col("t", ColumnType::kText), Str("none")})},
                             true);
  const Expr float_key = Bin(Op::kMultiply, kX, Int(-1));
  const Expr int_key = CastTo(Bin(Op::kAdd, kN, Int(1)), ValueType::kString);
  for (ScanArithmetic arithmetic : {ScanArithmetic::kFloat8, ScanArithmetic::kNumeric}) {
    std::vector<std::string> params;
    auto writer = Writer(arithmetic, &params);
    auto sql = writer.Text(text_key);
    ASSERT_TRUE(sql.ok());
    for (const auto& [id, text] : Run(*sql, params)) {
      const auto& t = texts_[id];
      EXPECT_EQ(text, !t ? "none" : *t == "it's" ? "quote" : *t) << id;
    }
    params.clear();
    sql = writer.Text(float_key);
    ASSERT_TRUE(sql.ok());
    for (const auto& [id, text] : Run(*sql, params)) {
      const Num want = Eval(float_key, rows_[id]);
      if (!want) continue;
      EXPECT_NE(text.front(), want == 0.0 ? '-' : '\0') << "-0 prints as 0, row " << id;
      double v = 0;
      ASSERT_TRUE(absl::SimpleAtod(text, &v)) << text;
      EXPECT_NEAR(v, *want, 1e-13 * std::abs(*want) + 1e-150) << id;
    }
    params.clear();
    sql = writer.Text(int_key);
    ASSERT_TRUE(sql.ok());
    for (const auto& [id, text] : Run(*sql, params)) {
      const Num want = Eval(int_key.children[0], rows_[id]);
      EXPECT_EQ(text, want ? absl::StrCat(static_cast<int64_t>(*want)) : "<null>") << id;
    }
  }
}

}  // namespace
}  // namespace dpq::store
