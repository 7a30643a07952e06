#include "server/query/filter/lexer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query::filter::internal {
namespace {

using ::testing::HasSubstr;
using Kind = Token::Kind;

// All tokens up to kEnd, or the first error.
absl::StatusOr<std::vector<Token>> Lex(absl::string_view text) {
  Lexer lexer(text);
  absl::Status init = lexer.Init();
  if (!init.ok()) return init;
  std::vector<Token> out;
  while (true) {
    absl::StatusOr<Token> t = lexer.Next();
    if (!t.ok()) return t.status();
    if (t->kind == Kind::kEnd) return out;
    out.push_back(*t);
  }
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> r = Lex(text);
  EXPECT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(r.status().message());
}

TEST(FilterLexerTest, SplitsOperatorsAndKeywordsCaseInsensitively) {
  absl::StatusOr<std::vector<Token>> r = Lex("age>=3 aNd x<>'a''b' Or NOT y IS null");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<Kind> kinds = {Kind::kIdentifier, Kind::kCompare,    Kind::kNumber,
                                   Kind::kAnd,        Kind::kIdentifier, Kind::kCompare,
                                   Kind::kString,     Kind::kOr,         Kind::kNot,
                                   Kind::kIdentifier, Kind::kIs,         Kind::kNull};
  ASSERT_EQ(r->size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ((*r)[i].kind, kinds[i]) << i;
  EXPECT_EQ((*r)[1].op, CompareOp::kGe);
  EXPECT_EQ((*r)[5].op, CompareOp::kNe);
  EXPECT_EQ((*r)[6].text, "a'b");
  EXPECT_EQ((*r)[4].position, 12);
}

TEST(FilterLexerTest, ReadsNumbersWithSignAndExponent) {
  absl::StatusOr<std::vector<Token>> r = Lex("-12 +1.5e-3 .5 7. 1E+9");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].text, "-12");
  EXPECT_TRUE((*r)[0].is_integer);
  EXPECT_EQ((*r)[1].text, "+1.5e-3");
  EXPECT_FALSE((*r)[1].is_integer);
  EXPECT_FALSE((*r)[2].is_integer);
  EXPECT_FALSE((*r)[3].is_integer);
  EXPECT_FALSE((*r)[4].is_integer);
}

TEST(FilterLexerTest, PositionsCountCharactersNotBytes) {
  absl::StatusOr<std::vector<Token>> r = Lex("x = 'é' AND y");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->back().position, 13);
  EXPECT_THAT(ErrorOf("x = 'é'; y"), HasSubstr("at position 8:"));
}

TEST(FilterLexerTest, RefusesCharactersOutsideTheGrammar) {
  EXPECT_THAT(ErrorOf("a = 1; DROP"), HasSubstr("at position 6: unexpected character ';'"));
  EXPECT_THAT(ErrorOf("\"age\" = 1"), HasSubstr("at position 1: unexpected character '\"'"));
  EXPECT_THAT(ErrorOf("a = 1 -- x"), HasSubstr("at position 7: comments are not allowed"));
  EXPECT_THAT(ErrorOf("a = 1 /* x */"), HasSubstr("at position 7: comments are not allowed"));
  EXPECT_THAT(ErrorOf("a = 'x"), HasSubstr("at position 5: unterminated string literal"));
  EXPECT_THAT(ErrorOf("a = 1.2.3"), HasSubstr("at position 5: malformed number"));
  EXPECT_THAT(ErrorOf("a = 1e"), HasSubstr("at position 5: malformed number"));
  EXPECT_THAT(ErrorOf("a = 12abc"), HasSubstr("at position 5: malformed number"));
  EXPECT_THAT(ErrorOf("Age = 1"), HasSubstr("at position 1: column names are lowercase"));
  EXPECT_THAT(ErrorOf("a ! 1"), HasSubstr("at position 3"));
  EXPECT_THAT(ErrorOf("a = E'\\x'"), HasSubstr("at position 5: column names are lowercase"));
  EXPECT_THAT(ErrorOf("a = $1"), HasSubstr("at position 5: unexpected character '$'"));
  EXPECT_THAT(ErrorOf(std::string("a = 'x\0y'", 9)), HasSubstr("at position 7: NUL character"));
  EXPECT_THAT(ErrorOf("a = '\xff'"), HasSubstr("at position 6: invalid UTF-8"));
  EXPECT_THAT(ErrorOf(std::string(64, 'a')), HasSubstr("longer than 63"));
  EXPECT_THAT(ErrorOf(absl::StrCat("a = ", std::string(101, '1'))), HasSubstr("longer than 100"));
  EXPECT_THAT(ErrorOf(std::string(4097, ' ')),
              HasSubstr("at position 4097: filter longer than 4096 bytes"));
}

TEST(FilterLexerTest, ExcerptIsShortAndPrintable) {
  EXPECT_EQ(Excerpt("abc"), "'abc'");
  EXPECT_EQ(Excerpt("a\nb"), "'a?b'");
  EXPECT_EQ(Excerpt(std::string(100, 'x')), "'" + std::string(20, 'x') + "...'");
  // Never cuts a multi-byte character in half.
  EXPECT_EQ(Excerpt(std::string(19, 'x') + "é"), "'" + std::string(19, 'x') + "...'");
}

// LexCompare: every comparison spelling and the operator it means.
TEST(FilterLexerTest, EveryComparisonOperator) {
  const std::pair<const char*, CompareOp> cases[] = {
      {"=", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<>", CompareOp::kNe}, {"<=", CompareOp::kLe},
      {"<", CompareOp::kLt}, {">=", CompareOp::kGe}, {">", CompareOp::kGt}};
  for (const auto& [spelling, op] : cases) {
    absl::StatusOr<std::vector<Token>> r = Lex(absl::StrCat("a", spelling, "1"));
    ASSERT_TRUE(r.ok()) << spelling << ": " << r.status();
    ASSERT_EQ(r->size(), 3u) << spelling;
    EXPECT_EQ((*r)[1].kind, Kind::kCompare) << spelling;
    EXPECT_EQ((*r)[1].op, op) << spelling;
    EXPECT_EQ((*r)[1].text, spelling);
  }
  EXPECT_THAT(ErrorOf("a ! 1"), HasSubstr("at position 3: unexpected character '!'"));
}

}  // namespace
}  // namespace dpq::query::filter::internal
