#include "server/sql/expression_lowering.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/sql/parser.h"

namespace dpq::sql {
namespace {

namespace qe = query::expression;
using ::testing::HasSubstr;

// The lowered tree as an S-expression, naming every field the lowering sets (the checker's
// canonical text is the checker's concern and not needed to read the shape).
std::string Dump(const qe::Expr& e) {
  std::vector<std::string> kids;
  for (const qe::Expr& c : e.children) kids.push_back(Dump(c));
  const std::string args = absl::StrJoin(kids, " ");
  switch (e.kind) {
    case qe::Expr::Kind::kColumn: return e.name;
    case qe::Expr::Kind::kLiteral:
      return absl::StrCat(qe::ValueTypeName(e.literal_type), ":", e.text);
    case qe::Expr::Kind::kUnary:
    case qe::Expr::Kind::kBinary: return absl::StrCat("(", qe::OpText(e.op), " ", args, ")");
    case qe::Expr::Kind::kIsNull:
      return absl::StrCat("(", e.negated ? "IS_NOT_NULL " : "IS_NULL ", args, ")");
    case qe::Expr::Kind::kIn: return absl::StrCat("(", e.negated ? "NOT_IN " : "IN ", args, ")");
    case qe::Expr::Kind::kCase:
      return absl::StrCat("(CASE", e.has_else ? "/else " : " ", args, ")");
    case qe::Expr::Kind::kCoalesce: return absl::StrCat("(COALESCE ", args, ")");
    case qe::Expr::Kind::kAbs: return absl::StrCat("(ABS ", args, ")");
    case qe::Expr::Kind::kLeast: return absl::StrCat("(LEAST ", args, ")");
    case qe::Expr::Kind::kGreatest: return absl::StrCat("(GREATEST ", args, ")");
    case qe::Expr::Kind::kCast:
      return absl::StrCat("(CAST ", args, " ", qe::ValueTypeName(e.cast_type), ")");
  }
  return "?";
}

// The WHERE clause of a statement, parsed: the expression under test.
Expr Where(const std::string& condition) {
  absl::StatusOr<Script> s =
      Parse(absl::StrCat("SELECT WITH DIFFERENTIAL_PRIVACY COUNT(*) FROM t WHERE ", condition));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->statements[0].where : Expr{};
}

std::string Lowered(const std::string& condition) {
  absl::StatusOr<qe::Expr> e = LowerExpression(Where(condition));
  if (!e.ok()) return absl::StrCat("error: ", e.status().message());
  return Dump(*e);
}

TEST(ExpressionLoweringTest, OperatorsAndLiterals) {
  EXPECT_EQ(Lowered("a + 1 * b / 2.5 - -c > 0"),
            "(> (- (+ a (/ (* INT64:1 b) FLOAT64:2.5)) (- c)) INT64:0)");
  EXPECT_EQ(Lowered("NOT a <> 'x' OR b != 1 AND c <= -3"),
            "(OR (NOT (<> a STRING:x)) (AND (<> b INT64:1) (<= c INT64:-3)))");
  EXPECT_EQ(Lowered("a = TRUE AND b = FALSE OR c = NULL"),
            "(OR (AND (= a BOOL:TRUE) (= b BOOL:FALSE)) (= c NULL:))");
  EXPECT_EQ(Lowered("+a >= 1e3"), "(>= a FLOAT64:1e3)");
  EXPECT_EQ(Lowered("-(-2) < 1"), "(< (- INT64:-2) INT64:1)");
}

TEST(ExpressionLoweringTest, PredicatesKeepTheirNegation) {
  EXPECT_EQ(Lowered("a IN (1, 2)"), "(IN a INT64:1 INT64:2)");
  EXPECT_EQ(Lowered("a NOT IN ('x')"), "(NOT_IN a STRING:x)");
  EXPECT_EQ(Lowered("a + 1 IS NULL"), "(IS_NULL (+ a INT64:1))");
  EXPECT_EQ(Lowered("a IS NOT NULL"), "(IS_NOT_NULL a)");
  EXPECT_EQ(Lowered("a BETWEEN 1 AND b"), "(AND (>= a INT64:1) (<= a b))");
  EXPECT_EQ(Lowered("a NOT BETWEEN 1 AND 2"), "(NOT (AND (>= a INT64:1) (<= a INT64:2)))");
}

TEST(ExpressionLoweringTest, CaseIfAndFunctions) {
  EXPECT_EQ(Lowered("CASE WHEN a < 1 THEN 'lo' WHEN a < 5 THEN 'mid' END = 'lo'"),
            "(= (CASE (< a INT64:1) STRING:lo (< a INT64:5) STRING:mid) STRING:lo)");
  EXPECT_EQ(Lowered("CASE a WHEN 1 THEN 10 WHEN 2 THEN 20 ELSE 0 END > 5"),
            "(> (CASE/else (= a INT64:1) INT64:10 (= a INT64:2) INT64:20 INT64:0) INT64:5)");
  EXPECT_EQ(Lowered("IF(a > 1, b, 0) = 1"), "(= (CASE/else (> a INT64:1) b INT64:0) INT64:1)");
  EXPECT_EQ(Lowered("COALESCE(a, b, 0) + IFNULL(c, 1) > ABS(d)"),
            "(> (+ (COALESCE a b INT64:0) (COALESCE c INT64:1)) (ABS d))");
  EXPECT_EQ(Lowered("LEAST(a, 1) < GREATEST(b, 2, 3)"),
            "(< (LEAST a INT64:1) (GREATEST b INT64:2 INT64:3))");
  EXPECT_EQ(Lowered("CAST(a AS integer) = CAST(b AS Float64)"),
            "(= (CAST a INT64) (CAST b FLOAT64))");
  EXPECT_EQ(Lowered("CAST(a AS TEXT) = CAST(b AS double)"), "(= (CAST a STRING) (CAST b FLOAT64))");
}

TEST(ExpressionLoweringTest, KeepsPositionsForTheCheckersMessages) {
  absl::StatusOr<qe::Expr> e = LowerExpression(Where("a +\n  bb > 1"));
  ASSERT_TRUE(e.ok()) << e.status();
  const qe::Expr& b = e->children[0].children[1];
  EXPECT_EQ(b.name, "bb");
  EXPECT_EQ(b.pos.line, 2);
  EXPECT_EQ(b.pos.column, 3);
}

TEST(ExpressionLoweringTest, RefusesWhatIsNotAPerRowValue) {
  struct Case {
    const char* sql;
    absl::StatusCode code;
    const char* message;
    int column;  // on line 1, where the WHERE starts at column 56
  };
  const Case cases[] = {
      {"SUM(a) > 1", absl::StatusCode::kUnimplemented, "function SUM is not supported", 56},
      {"a = UPPER('x')", absl::StatusCode::kUnimplemented, "function UPPER", 60},
      {"CAST(a AS DATE) = 1", absl::StatusCode::kUnimplemented, "CAST to DATE", 56},
      {"(a, b) = 1", absl::StatusCode::kUnimplemented, "a tuple", 56},
      {"IF(a, 1) = 1", absl::StatusCode::kInvalidArgument, "IF takes 3 arguments, got 2", 56},
      {"ABS() = 1", absl::StatusCode::kInvalidArgument, "ABS takes 1 arguments, got 0", 56},
      {"IFNULL(a) = 1", absl::StatusCode::kInvalidArgument, "IFNULL takes 2", 56},
      {"COALESCE() = 1", absl::StatusCode::kInvalidArgument, "COALESCE takes 1 or more", 56},
      {"ABS(x => 1) = 1", absl::StatusCode::kUnimplemented, "named argument x", 60},
  };
  for (const Case& c : cases) {
    absl::StatusOr<qe::Expr> e = LowerExpression(Where(c.sql));
    ASSERT_FALSE(e.ok()) << c.sql;
    EXPECT_EQ(e.status().code(), c.code) << c.sql << ": " << e.status();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(c.message)) << c.sql;
    EXPECT_THAT(std::string(e.status().message()),
                HasSubstr(absl::StrCat("sql: line 1, column ", c.column, ":")))
        << c.sql << ": " << e.status();
  }
}

// The parser marks DISTINCT on any call (the analyzer answers COUNT(DISTINCT unit)); on a per-row
// function it would be silently meaningless, so the lowering refuses it.
TEST(ExpressionLoweringTest, RefusesDistinctInsideAPerRowFunction) {
  Expr abs = Where("ABS(a) = 1").children[0];
  ASSERT_EQ(abs.kind, Expr::Kind::kCall);
  EXPECT_TRUE(LowerExpression(abs).ok());
  abs.distinct = true;
  absl::StatusOr<qe::Expr> e = LowerExpression(abs);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("ABS(DISTINCT ...)"));
}

}  // namespace
}  // namespace dpq::sql
