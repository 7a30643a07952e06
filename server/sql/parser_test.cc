#include "server/sql/parser.h"
#include "server/sql/lexer.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::sql {
namespace {

using ::testing::HasSubstr;

Script Parsed(absl::string_view text) {
  absl::StatusOr<Script> r = Parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : Script{};
}

constexpr char kGroupedFilteredOrdered[] = R"sql(SELECT WITH DIFFERENTIAL_PRIVACY
  OPTIONS (epsilon = 1.0, delta = 1e-6, max_groups_contributed = 2, privacy_unit_column = person_id)
  language, COUNT(*) AS n, AVG(wages, contribution_bounds_per_group => (0, 50)) AS mean_wage
FROM slid
WHERE age >= 30
GROUP BY language
ORDER BY n DESC
LIMIT 10)sql";

TEST(SqlParserTest, ParsesAGroupedFilteredOrderedStatement) {
  Script s = Parsed(kGroupedFilteredOrdered);
  ASSERT_EQ(s.statements.size(), 1u);
  const Statement& st = s.statements[0];
  ASSERT_EQ(st.options.size(), 4u);
  EXPECT_EQ(st.options[0].name, "epsilon");
  EXPECT_EQ(st.options[0].value.text, "1.0");
  EXPECT_EQ(st.options[3].name, "privacy_unit_column");
  EXPECT_EQ(st.options[3].value.kind, Expr::Kind::kColumn);
  EXPECT_EQ(st.options[3].value.name, "person_id");
  ASSERT_EQ(st.select.size(), 3u);
  EXPECT_EQ(st.select[0].expr.kind, Expr::Kind::kColumn);
  EXPECT_EQ(st.select[1].expr.kind, Expr::Kind::kCall);
  EXPECT_EQ(st.select[1].expr.name, "COUNT");
  EXPECT_EQ(st.select[1].expr.children[0].kind, Expr::Kind::kStar);
  EXPECT_EQ(st.select[1].alias, "n");
  const Expr& avg = st.select[2].expr;
  ASSERT_EQ(avg.children.size(), 2u);
  EXPECT_EQ(avg.children[1].kind, Expr::Kind::kNamedArg);
  EXPECT_EQ(avg.children[1].name, "contribution_bounds_per_group");
  EXPECT_EQ(avg.children[1].children[0].kind, Expr::Kind::kTuple);
  EXPECT_EQ(avg.pos.line, 3);
  EXPECT_EQ(avg.pos.column, 28);
  EXPECT_EQ(st.table, "slid");
  EXPECT_TRUE(st.has_where);
  EXPECT_EQ(st.where.op, ">=");
  ASSERT_EQ(st.group_by.size(), 1u);
  ASSERT_EQ(st.order_by.size(), 1u);
  EXPECT_TRUE(st.order_by[0].descending);
  EXPECT_TRUE(st.has_limit);
  EXPECT_EQ(st.limit, 10);
}

TEST(SqlParserTest, KeywordsAreCaseInsensitiveAndCommentsAreWhitespace) {
  Script s = Parsed(
      "select with differential_privacy options(epsilon=1) -- a comment ; DROP TABLE x\n"
      "count(*) /* ; DELETE FROM y */ from slid s where s.age between 1 and 2;");
  ASSERT_EQ(s.statements.size(), 1u);
  EXPECT_EQ(s.statements[0].table_alias, "s");
  EXPECT_EQ(s.statements[0].where.kind, Expr::Kind::kBetween);
  EXPECT_EQ(s.statements[0].where.children[0].qualifier, "s");
}

TEST(SqlParserTest, SeveralStatementsFormAScript) {
  Script s = Parsed(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) COUNT(*) FROM a;"
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) SUM(x) FROM a;");
  EXPECT_EQ(s.statements.size(), 2u);
}

TEST(SqlParserTest, PrecedenceOfArithmeticAndLogic) {
  Script s = Parsed(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) 1 + 2 * COUNT(*) AS x FROM t "
      "WHERE a = 1 OR b = 2 AND NOT c IN ('x', 'y') AND d IS NOT NULL");
  const Expr& x = s.statements[0].select[0].expr;
  EXPECT_EQ(x.op, "+");
  EXPECT_EQ(x.children[1].op, "*");
  const Expr& w = s.statements[0].where;
  EXPECT_EQ(w.op, "OR");
  EXPECT_EQ(w.children[1].op, "AND");
  EXPECT_EQ(w.children[1].children[0].op, "AND");
  EXPECT_EQ(w.children[1].children[0].children[1].op, "NOT");
  EXPECT_EQ(w.children[1].children[1].kind, Expr::Kind::kIsNull);
  EXPECT_TRUE(w.children[1].children[1].negated);
}

TEST(SqlParserTest, NumbersKeepTheirSpelling) {
  Script s =
      Parsed("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1e+06, delta=.5) COUNT(*) FROM t");
  EXPECT_EQ(s.statements[0].options[0].value.text, "1e+06");
  EXPECT_EQ(s.statements[0].options[1].value.text, ".5");
}

struct Refusal {
  const char* sql;
  absl::StatusCode code;
  const char* message;  // a substring of the message
  int line;
  int column;
};

class SqlParserRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(SqlParserRefusalTest, NamesTheClauseAndItsPosition) {
  const Refusal& r = GetParam();
  absl::StatusOr<Script> s = Parse(r.sql);
  ASSERT_FALSE(s.ok()) << r.sql;
  EXPECT_EQ(s.status().code(), r.code) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(r.message));
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("sql: line " + std::to_string(r.line) + ", column " +
                        std::to_string(r.column) + ":"));
}

constexpr auto kUnimpl = absl::StatusCode::kUnimplemented;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
#define DP "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) "

INSTANTIATE_TEST_SUITE_P(
    Refusals, SqlParserRefusalTest,
    ::testing::Values(
        Refusal{"", kInvalid, "the statement is empty", 1, 1},
        Refusal{"   -- nothing", kInvalid, "the statement is empty", 1, 14},
        Refusal{"SELECT COUNT(*) FROM t", kUnimpl, "without WITH DIFFERENTIAL_PRIVACY", 1, 1},
        Refusal{"SELECT DISTINCT a FROM t", kUnimpl, "SELECT DISTINCT", 1, 8},
        Refusal{"WITH x AS (SELECT 1) SELECT * FROM x", kUnimpl, "WITH (common table", 1, 1},
        Refusal{"DROP TABLE t", kUnimpl, "DROP is not supported", 1, 1},
        Refusal{"insert into t values (1)", kUnimpl, "INSERT is not supported", 1, 1},
        Refusal{DP "COUNT(*) FROM t; DELETE FROM t", kUnimpl, "DELETE is not supported", 1, 70},
        Refusal{DP "COUNT(*) FROM t /* x */; UPDATE t SET a = 1", kUnimpl, "UPDATE", 1, 78},
        Refusal{DP "COUNT(*) FROM t CROSS JOIN u", kUnimpl, "CROSS JOIN", 1, 69},
        Refusal{DP "COUNT(*) FROM t LEFT JOIN u ON t.a = u.a", kUnimpl, "outer joins", 1, 69},
        Refusal{DP "COUNT(*) FROM t, u", kUnimpl, "comma join", 1, 68},
        Refusal{DP "COUNT(*) FROM (SELECT * FROM t)", kUnimpl, "subqueries", 1, 67},
        Refusal{DP "COUNT(*) FROM t WHERE a IN (SELECT a FROM u)", kUnimpl, "subqueries", 1, 81},
        Refusal{DP "COUNT(*) FROM t WHERE EXISTS (SELECT 1)", kUnimpl, "EXISTS", 1, 75},
        Refusal{DP "COUNT(*) FROM t WHERE a = (SELECT 1)", kUnimpl, "subqueries", 1, 80},
        Refusal{DP "COUNT(*) FROM t UNION ALL SELECT 1", kUnimpl, "set operations (UNION)", 1, 69},
        Refusal{DP "COUNT(*) FROM t EXCEPT SELECT 1", kUnimpl, "set operations (EXCEPT)", 1, 69},
        Refusal{DP "COUNT(*) OVER () FROM t", kUnimpl, "window functions", 1, 62},
        Refusal{DP "a, COUNT(*) FROM t GROUP BY ROLLUP(a)", kUnimpl, "ROLLUP", 1, 81},
        Refusal{DP "a, COUNT(*) FROM t GROUP BY CUBE(a)", kUnimpl, "CUBE", 1, 81},
        Refusal{DP "a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", kUnimpl, "HAVING", 1, 83},
        Refusal{DP "COUNT(*) FROM t LIMIT 1 OFFSET 2", kUnimpl, "OFFSET", 1, 77},
        Refusal{DP "CASE a THEN 1 END FROM t", kInvalid, "expected WHEN", 1, 60},
        Refusal{DP "CASE WHEN a THEN 1 FROM t", kInvalid, "expected END", 1, 72},
        Refusal{DP "CASE WHEN a 1 END FROM t", kInvalid, "expected THEN", 1, 65},
        Refusal{DP "CAST(a INT64) FROM t", kInvalid, "expected AS", 1, 60},
        Refusal{DP "CAST(a AS 'x') FROM t", kInvalid, "a type name after AS", 1, 63},
        Refusal{DP "CAST(a AS INT64 FROM t", kInvalid, "expected ')'", 1, 69},
        Refusal{DP "COUNT(*) FROM t LIMIT -1", kInvalid, "a whole number of rows after LIMIT", 1,
                75},
        Refusal{DP "COUNT(*) FROM t LIMIT 1.5", kInvalid, "after LIMIT", 1, 75},
        Refusal{DP "COUNT(*) FROM t WHERE", kInvalid, "expected an expression", 1, 74},
        Refusal{DP "COUNT(*) t", kInvalid, "expected ',' or FROM", 1, 63},
        Refusal{DP "FROM t", kInvalid, "expected a select-list item", 1, 53},
        Refusal{"SELECT WITH PRIVACY COUNT(*) FROM t", kInvalid, "DIFFERENTIAL_PRIVACY", 1, 13},
        Refusal{DP "COUNT(*) FROM t WHERE a = 'x", kInvalid, "unterminated string", 1, 79},
        Refusal{DP "COUNT(*) FROM t WHERE a = \"x\"", kInvalid, "double quotes", 1, 79},
        Refusal{DP "COUNT(*) FROM t /* open", kInvalid, "unterminated comment", 1, 69},
        Refusal{DP "COUNT(*) FROM t WHERE a = 1 ? 2", kInvalid, "unexpected character '?'", 1, 81},
        Refusal{DP "COUNT(*)\nFROM t\nWHERE (a = 1", kInvalid, "expected ')'", 3, 13},
        Refusal{DP "COUNT(*) FROM t WHERE a = 12abc", kInvalid, "run into a name", 1, 81},
        Refusal{DP "COUNT(*) FROM t GROUP a", kInvalid, "expected BY", 1, 75},
        Refusal{DP "COUNT(*) FROM t ORDER a", kInvalid, "expected BY", 1, 75},
        Refusal{DP "COUNT(*) FROM db.t", kUnimpl, "qualified dataset names", 1, 69},
        Refusal{"(SELECT 1)", kUnimpl, "parenthesised query", 1, 1},
        Refusal{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon 1) COUNT(*) FROM t", kInvalid,
                "expected '='", 1, 50}));

TEST(SqlParserTest, RefusesDeepNesting) {
  std::string deep = DP "COUNT(*) FROM t WHERE ";
  for (int i = 0; i < 200; ++i) deep += "(";
  deep += "a = 1";
  for (int i = 0; i < 200; ++i) deep += ")";
  absl::StatusOr<Script> s = Parse(deep);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("nested deeper than 64"));
}

TEST(SqlParserTest, RefusesOversizedInput) {
  std::string big(kMaxStatementBytes + 1, ' ');
  EXPECT_EQ(Parse(big).status().code(), absl::StatusCode::kInvalidArgument);
}

// Tokenize's scanners, one token kind each.
TEST(SqlLexerTest, ScansEachTokenKind) {
  absl::StatusOr<std::vector<Token>> r =
      Tokenize("`Odd name` x_1 1.5e-3 'it''s' <= => , -- to the end\n /* a\n block */ ;");
  ASSERT_TRUE(r.ok()) << r.status();
  using Kind = Token::Kind;
  const std::vector<std::pair<Kind, std::string>> want = {{Kind::kQuotedIdent, "Odd name"},
                                                          {Kind::kIdent, "x_1"},
                                                          {Kind::kNumber, "1.5e-3"},
                                                          {Kind::kString, "it's"},
                                                          {Kind::kSymbol, "<="},
                                                          {Kind::kSymbol, "=>"},
                                                          {Kind::kSymbol, ","},
                                                          {Kind::kSymbol, ";"},
                                                          {Kind::kEnd, ""}};
  ASSERT_EQ(r->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*r)[i].kind, want[i].first) << i;
    EXPECT_EQ((*r)[i].text, want[i].second) << i;
  }
  EXPECT_EQ((*r)[0].upper, "ODD NAME");
  EXPECT_EQ((*r)[7].pos.line, 3);  // comments advance the position like any other text
}

TEST(SqlLexerTest, AnExponentNeedsDigitsElseItIsNotPartOfTheNumber) {
  absl::StatusOr<std::vector<Token>> r = Tokenize("2e+ ");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a number must not run into a name"));
}

TEST(SqlLexerTest, RefusalsOfEachScanner) {
  const std::pair<const char*, const char*> cases[] = {
      {"/* open", "unterminated comment"},   {"`open", "unterminated quoted identifier"},
      {"'open", "unterminated string"},      {"\"x\"", "double quotes are not allowed"},
      {"a ? b", "unexpected character '?'"}, {"a \x01 b", "unexpected byte 0x1"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<std::vector<Token>> r = Tokenize(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), HasSubstr(message)) << text;
  }
}

// The select list and FROM share the alias step: AS name, or a bare non-reserved name.
TEST(SqlParserTest, AliasesWithAndWithoutAs) {
  Script s = Parsed("SELECT WITH DIFFERENTIAL_PRIVACY COUNT(*) n, SUM(x) AS `Total` FROM t AS u");
  EXPECT_EQ(s.statements[0].select[0].alias, "n");
  EXPECT_EQ(s.statements[0].select[1].alias, "Total");
  EXPECT_EQ(s.statements[0].table_alias, "u");
  Script bare = Parsed("SELECT WITH DIFFERENTIAL_PRIVACY COUNT(*) FROM t WHERE x = 1");
  EXPECT_EQ(bare.statements[0].select[0].alias, "");
  EXPECT_EQ(bare.statements[0].table_alias, "");  // WHERE is reserved, not an alias
  EXPECT_TRUE(bare.statements[0].has_where);
}

TEST(SqlParserTest, CaseSearchedAndSimple) {
  Script s = Parsed(DP
                    "CASE WHEN a < 1 THEN 'lo' WHEN a < 9 THEN 'mid' ELSE 'hi' END AS band, "
                    "CASE b WHEN 1 THEN 2 END FROM t");
  const Expr& searched = s.statements[0].select[0].expr;
  EXPECT_EQ(searched.kind, Expr::Kind::kCase);
  EXPECT_EQ(searched.pos.column, 53);
  EXPECT_FALSE(searched.has_operand);
  EXPECT_TRUE(searched.has_else);
  ASSERT_EQ(searched.children.size(), 5u);
  EXPECT_EQ(searched.children[0].op, "<");
  EXPECT_EQ(searched.children[3].text, "mid");
  EXPECT_EQ(searched.children[4].text, "hi");
  EXPECT_EQ(s.statements[0].select[0].alias, "band");
  const Expr& simple = s.statements[0].select[1].expr;
  EXPECT_TRUE(simple.has_operand);
  EXPECT_FALSE(simple.has_else);
  ASSERT_EQ(simple.children.size(), 3u);
  EXPECT_EQ(simple.children[0].name, "b");
  EXPECT_EQ(simple.children[1].text, "1");
  EXPECT_EQ(simple.children[2].text, "2");
}

TEST(SqlParserTest, CastBooleansAndNotEqual) {
  Script s = Parsed(DP "CAST(a + 1 AS int64) FROM t WHERE (b != 2) = TRUE OR false");
  const Expr& cast = s.statements[0].select[0].expr;
  EXPECT_EQ(cast.kind, Expr::Kind::kCast);
  EXPECT_EQ(cast.name, "INT64");
  ASSERT_EQ(cast.children.size(), 1u);
  EXPECT_EQ(cast.children[0].op, "+");
  const Expr& w = s.statements[0].where;
  EXPECT_EQ(w.op, "OR");
  EXPECT_EQ(w.children[0].op, "=");
  EXPECT_EQ(w.children[0].children[0].op, "<>");  // != is <>
  EXPECT_EQ(w.children[0].children[1].kind, Expr::Kind::kBool);
  EXPECT_EQ(w.children[0].children[1].text, "TRUE");
  EXPECT_EQ(w.children[1].kind, Expr::Kind::kBool);
  EXPECT_EQ(w.children[1].text, "FALSE");
}

TEST(SqlParserTest, CastIsAnOrdinaryNameWithoutParenthesis) {
  Script s = Parsed(DP "COUNT(*) FROM t WHERE cast = 1");
  EXPECT_EQ(s.statements[0].where.children[0].kind, Expr::Kind::kColumn);
  EXPECT_EQ(s.statements[0].where.children[0].name, "cast");
}

TEST(SqlParserTest, CaseNestsInsideCallsAndGroupBy) {
  Script s = Parsed(DP
                    "SUM(CASE WHEN a > 1 THEN a ELSE 0 END) FROM t "
                    "GROUP BY CASE WHEN b IS NULL THEN 'none' ELSE 'some' END");
  EXPECT_EQ(s.statements[0].select[0].expr.children[0].kind, Expr::Kind::kCase);
  ASSERT_EQ(s.statements[0].group_by.size(), 1u);
  EXPECT_EQ(s.statements[0].group_by[0].kind, Expr::Kind::kCase);
  EXPECT_EQ(s.statements[0].group_by[0].children[0].kind, Expr::Kind::kIsNull);
}

// DISTINCT inside a call is syntax; which DISTINCT aggregates are answered is the analyzer's call.
TEST(SqlParserTest, DistinctInsideACallIsMarkedOnTheCall) {
  Script s = Parsed("SELECT WITH DIFFERENTIAL_PRIVACY COUNT(DISTINCT a), COUNT(a) FROM t");
  const Expr& distinct = s.statements[0].select[0].expr;
  EXPECT_TRUE(distinct.distinct);
  ASSERT_EQ(distinct.children.size(), 1u);
  EXPECT_EQ(distinct.children[0].name, "a");
  EXPECT_FALSE(s.statements[0].select[1].expr.distinct);
}

TEST(SqlParserTest, DateAndTimestampLiteralsAreCheckedAndCanonical) {
  Script s = Parsed(DP
                    "COUNT(*) FROM t WHERE d BETWEEN DATE '2026-02-01' AND date '2026-02-28' "
                    "AND ts < TIMESTAMP '2026-02-01 12:00:00.5' AND ts > TIMESTAMP '2026-01-01'");
  const Expr& where = s.statements[0].where;  // ((BETWEEN AND <) AND >)
  const Expr& between = where.children[0].children[0];
  ASSERT_EQ(between.kind, Expr::Kind::kBetween);
  EXPECT_EQ(between.children[1].kind, Expr::Kind::kCalendar);
  EXPECT_EQ(between.children[1].name, "DATE");
  EXPECT_EQ(between.children[2].text, "2026-02-28");
  const Expr& before = where.children[0].children[1].children[1];
  EXPECT_EQ(before.name, "TIMESTAMP");
  EXPECT_EQ(before.text, "2026-02-01T12:00:00.500000Z");
  EXPECT_EQ(where.children[1].children[1].text, "2026-01-01T00:00:00Z");
  // A column may be called date; only DATE followed by a string is a literal.
  EXPECT_EQ(Parsed(DP "COUNT(*) FROM t WHERE date = 1").statements[0].where.children[0].kind,
            Expr::Kind::kColumn);
  for (const char* bad : {"DATE '2026-02-30'", "DATE '2026-2-1'", "DATE ''", "DATE '10000-01-01'",
                          "TIMESTAMP '2026-02-01T24:00:00Z'", "TIMESTAMP '2026-02-01 12:00+01'",
                          "TIMESTAMP '2026-02-01 12:00:00.1234567'"}) {
    absl::StatusOr<Script> r = Parse(std::string(DP "COUNT(*) FROM t WHERE d = ") + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("column 79")) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("YYYY-MM-DD")) << bad;
  }
}

TEST(SqlParserTest, DateTruncKeepsItsDatePartOutOfTheColumns) {
  Script s =
      Parsed(DP "DATE_TRUNC(t.day, week) AS w, COUNT(*) FROM t GROUP BY DATE_TRUNC(day, DAY)");
  const Expr& w = s.statements[0].select[0].expr;
  EXPECT_EQ(w.kind, Expr::Kind::kCall);
  EXPECT_EQ(w.name, "DATE_TRUNC");
  EXPECT_EQ(w.text, "WEEK");
  ASSERT_EQ(w.children.size(), 1u);  // a column called `day` is never the date part
  EXPECT_EQ(w.children[0].qualifier, "t");
  EXPECT_EQ(s.statements[0].group_by[0].text, "DAY");
  for (const char* bad :
       {"DATE_TRUNC(day)", "DATE_TRUNC(day, 'week')", "DATE_TRUNC(day, WEEK, 1)"}) {
    EXPECT_FALSE(Parse(std::string(DP "COUNT(*) FROM t GROUP BY ") + bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace dpq::sql
