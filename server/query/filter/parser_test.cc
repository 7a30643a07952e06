#include "server/query/filter/parser.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query::filter {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Expr Parsed(absl::string_view text) {
  absl::StatusOr<Expr> r = ParseFilter(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : Expr{};
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<Expr> r = ParseFilter(text);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(r.status().message());
}

TEST(FilterParserTest, AndBindsTighterThanOr) {
  Expr e = Parsed("a = 1 OR b = 2 AND c = 3 OR d = 4");
  ASSERT_EQ(e.kind, Expr::Kind::kOr);
  ASSERT_EQ(e.children.size(), 3u);
  EXPECT_EQ(e.children[0].kind, Expr::Kind::kCompare);
  EXPECT_EQ(e.children[1].kind, Expr::Kind::kAnd);
  EXPECT_EQ(e.children[1].children.size(), 2u);
  EXPECT_EQ(e.children[2].column, "d");
}

TEST(FilterParserTest, NotBindsTighterThanAndButLooserThanComparison) {
  Expr e = Parsed("NOT a = 1 AND b = 2");
  ASSERT_EQ(e.kind, Expr::Kind::kAnd);
  ASSERT_EQ(e.children[0].kind, Expr::Kind::kNot);
  EXPECT_EQ(e.children[0].children[0].kind, Expr::Kind::kCompare);
  EXPECT_EQ(e.children[0].position, 1);
}

TEST(FilterParserTest, ParenthesesGroup) {
  Expr e = Parsed("(a = 1 OR b = 2) AND c = 3");
  ASSERT_EQ(e.kind, Expr::Kind::kAnd);
  EXPECT_EQ(e.children[0].kind, Expr::Kind::kOr);
}

TEST(FilterParserTest, BetweenConsumesItsOwnAnd) {
  Expr e = Parsed("a BETWEEN 1 AND 5 AND b NOT BETWEEN 'x' AND 'y'");
  ASSERT_EQ(e.kind, Expr::Kind::kAnd);
  ASSERT_EQ(e.children.size(), 2u);
  EXPECT_EQ(e.children[0].kind, Expr::Kind::kBetween);
  EXPECT_FALSE(e.children[0].negated);
  EXPECT_EQ(e.children[0].literals.size(), 2u);
  EXPECT_TRUE(e.children[1].negated);
  EXPECT_EQ(e.children[1].literals[1].text, "y");
}

TEST(FilterParserTest, InListsAndNullTests) {
  Expr e = Parsed("a NOT IN (1, 2.5, -3) OR b IS NOT NULL OR c is null OR d in ('x')");
  ASSERT_EQ(e.children.size(), 4u);
  EXPECT_EQ(e.children[0].kind, Expr::Kind::kIn);
  EXPECT_TRUE(e.children[0].negated);
  ASSERT_EQ(e.children[0].literals.size(), 3u);
  EXPECT_EQ(e.children[0].literals[1].position, 14);
  EXPECT_EQ(e.children[1].kind, Expr::Kind::kIsNull);
  EXPECT_TRUE(e.children[1].negated);
  EXPECT_FALSE(e.children[2].negated);
  EXPECT_EQ(e.children[3].literals[0].kind, Literal::Kind::kString);
}

TEST(FilterParserTest, ErrorsNameTheLeftmostPosition) {
  EXPECT_EQ(ErrorOf("(a = 1"), "where: at position 7: expected ')', found end of input");
  EXPECT_EQ(ErrorOf("a = 1)"), "where: at position 6: unexpected ')' (unbalanced parentheses)");
  EXPECT_THAT(ErrorOf("1=1; DROP TABLE audit"),
              StartsWith("where: at position 1: expected a column name"));
  EXPECT_THAT(ErrorOf("a = 1 b = 2"), HasSubstr("at position 7: unexpected 'b'"));
  EXPECT_THAT(ErrorOf("a = b"),
              HasSubstr("at position 5: expected a string or number, found column 'b'"));
  EXPECT_THAT(ErrorOf("a = NULL"), HasSubstr("at position 5: NULL is not a value here"));
  EXPECT_THAT(ErrorOf("a IS 1"), HasSubstr("at position 6: expected NULL"));
  EXPECT_THAT(ErrorOf("a NOT = 1"), HasSubstr("at position 7: expected IN or BETWEEN after NOT"));
  EXPECT_THAT(ErrorOf("a IN ()"), HasSubstr("at position 7: expected a string or number"));
  EXPECT_THAT(ErrorOf("a IN (1,)"), HasSubstr("at position 9: expected a string or number"));
  EXPECT_THAT(ErrorOf("a IN 1"), HasSubstr("at position 6: expected '(' after IN"));
  EXPECT_THAT(ErrorOf("a BETWEEN 1 OR 2"), HasSubstr("at position 13: expected AND in BETWEEN"));
  EXPECT_THAT(ErrorOf("a"), HasSubstr("at position 2: expected a comparison"));
  EXPECT_THAT(ErrorOf("a = 1 AND"),
              HasSubstr("at position 10: expected a column name, found end of input"));
  EXPECT_THAT(ErrorOf("AND a = 1"),
              HasSubstr("at position 1: expected a column name, found 'AND'"));
  EXPECT_THAT(ErrorOf("'x' = a"), HasSubstr("write the column first"));
  EXPECT_THAT(ErrorOf("()"), HasSubstr("at position 2: expected a column name"));
}

TEST(FilterParserTest, RefusesEmptyInput) {
  EXPECT_EQ(ErrorOf(""), "where: at position 1: empty filter");
  EXPECT_EQ(ErrorOf(" \t\n "), "where: at position 5: empty filter");
}

TEST(FilterParserTest, LimitsNestingDepth) {
  auto nested = [](int n) {
    return absl::StrCat(std::string(n, '('), "a = 1", std::string(n, ')'));
  };
  EXPECT_TRUE(ParseFilter(nested(kMaxFilterDepth)).ok());
  EXPECT_THAT(ErrorOf(nested(kMaxFilterDepth + 1)),
              HasSubstr(absl::StrCat("at position ", kMaxFilterDepth + 1, ": nested too deeply")));
  std::string nots;
  for (int i = 0; i < kMaxFilterDepth + 1; ++i) nots += "NOT ";
  EXPECT_THAT(ErrorOf(nots + "a = 1"), HasSubstr("nested too deeply"));
  // Far beyond the limit: refused without exhausting the stack.
  EXPECT_THAT(ErrorOf(std::string(4000, '(')), HasSubstr("nested too deeply"));
}

TEST(FilterParserTest, LimitsNodeCountAndInListSize) {
  std::string many = "a=1";
  for (int i = 0; i < 500; ++i) absl::StrAppend(&many, " OR a=1");  // 501 * 2 + 1 nodes
  ASSERT_LE(many.size(), kMaxFilterBytes);
  EXPECT_THAT(ErrorOf(many), HasSubstr("filter too large"));

  std::string list = "a IN (1";
  for (int i = 1; i < kMaxInListSize; ++i) absl::StrAppend(&list, ",1");
  EXPECT_TRUE(ParseFilter(list + ")").ok());
  EXPECT_THAT(ErrorOf(list + ",1)"), HasSubstr("IN list longer than 500 values"));
}

TEST(FilterParserTest, RefusesOverlongInputAtTheLimit) {
  std::string padded = "a = 1" + std::string(kMaxFilterBytes - 5, ' ');
  EXPECT_TRUE(ParseFilter(padded).ok());
  EXPECT_THAT(ErrorOf(padded + " "), HasSubstr("filter longer than 4096 bytes"));
}

}  // namespace
}  // namespace dpq::query::filter
