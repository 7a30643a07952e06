#include "client/dpqctl/csv_schema.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<CsvSchema> Infer(const std::string& text) {
  std::istringstream in(text);
  return InferCsvSchema(in);
}

TEST(SplitCsvLineTest, KeepsEmptyFieldsAndDropsCarriageReturn) {
  EXPECT_THAT(SplitCsvLine("a,,c\r"), ElementsAre("a", "", "c"));
  EXPECT_THAT(SplitCsvLine(""), ElementsAre(""));
  EXPECT_THAT(SplitCsvLine(",x,"), ElementsAre("", "x", ""));
}

TEST(SplitCsvLineTest, TreatsQuotesAsPlainCharacters) {
  EXPECT_THAT(SplitCsvLine("\"a,b\""), ElementsAre("\"a", "b\""));
}

TEST(ParsesAsInt64Test, AcceptsPlainDecimalsOnly) {
  EXPECT_TRUE(ParsesAsInt64("0"));
  EXPECT_TRUE(ParsesAsInt64("-9223372036854775808"));
  EXPECT_TRUE(ParsesAsInt64("9223372036854775807"));
  EXPECT_FALSE(ParsesAsInt64("9223372036854775808"));
  EXPECT_FALSE(ParsesAsInt64("+1"));
  EXPECT_FALSE(ParsesAsInt64(" 1"));
  EXPECT_FALSE(ParsesAsInt64("1.0"));
  EXPECT_FALSE(ParsesAsInt64("1e3"));
  EXPECT_FALSE(ParsesAsInt64(""));
}

TEST(ParsesAsFiniteDoubleTest, RefusesNanInfinityAndOverflow) {
  EXPECT_TRUE(ParsesAsFiniteDouble("1.5"));
  EXPECT_TRUE(ParsesAsFiniteDouble("-2e-3"));
  EXPECT_TRUE(ParsesAsFiniteDouble("7"));
  EXPECT_FALSE(ParsesAsFiniteDouble("nan"));
  EXPECT_FALSE(ParsesAsFiniteDouble("inf"));
  EXPECT_FALSE(ParsesAsFiniteDouble("-infinity"));
  EXPECT_FALSE(ParsesAsFiniteDouble("1e400"));
  EXPECT_FALSE(ParsesAsFiniteDouble("0x10"));
  EXPECT_FALSE(ParsesAsFiniteDouble("1.5kg"));
  EXPECT_FALSE(ParsesAsFiniteDouble(""));
}

TEST(ParseCsvHeaderTest, RefusesEmptyName) {
  absl::StatusOr<std::vector<std::string>> header = ParseCsvHeader("id,,age");
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(header.status().message(), HasSubstr("column 2"));
}

TEST(ParseCsvHeaderTest, RefusesDuplicateName) {
  absl::StatusOr<std::vector<std::string>> header = ParseCsvHeader("id,age,id");
  ASSERT_FALSE(header.ok());
  EXPECT_THAT(header.status().message(), HasSubstr("'id'"));
}

TEST(ParseCsvHeaderTest, RefusesByteOrderMark) {
  absl::StatusOr<std::vector<std::string>> header = ParseCsvHeader("\xEF\xBB\xBFid,age");
  ASSERT_FALSE(header.ok());
  EXPECT_THAT(header.status().message(), HasSubstr("byte-order mark"));
}

TEST(ParseCsvHeaderTest, StripsCarriageReturnFromLastName) {
  absl::StatusOr<std::vector<std::string>> header = ParseCsvHeader("id,age\r");
  ASSERT_TRUE(header.ok());
  EXPECT_THAT(*header, ElementsAre("id", "age"));
}

TEST(InferCsvSchemaTest, InfersIntegerDoubleAndText) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age,income,city\n1,30,1.5,paris\n2,41,2,oslo\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_THAT(schema->column_names, ElementsAre("id", "age", "income", "city"));
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kInteger, CsvValueType::kInteger,
                                                CsvValueType::kDouble, CsvValueType::kText));
  EXPECT_EQ(schema->rows, 2);
}

TEST(InferCsvSchemaTest, IntegerColumnWithOneFractionBecomesDouble) {
  absl::StatusOr<CsvSchema> schema = Infer("x\n1\n2\n2.5\n3\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kDouble));
}

TEST(InferCsvSchemaTest, NumericColumnWithOneWordBecomesText) {
  absl::StatusOr<CsvSchema> schema = Infer("x\n1\nn/a\n2.5\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kText));
}

TEST(InferCsvSchemaTest, Int64OverflowBecomesDouble) {
  absl::StatusOr<CsvSchema> schema = Infer("x\n1\n99999999999999999999\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kDouble));
}

TEST(InferCsvSchemaTest, NanMakesColumnText) {
  absl::StatusOr<CsvSchema> schema = Infer("x\n1.5\nnan\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kText));
}

TEST(InferCsvSchemaTest, EmptyFieldsAreNullAndIgnored) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age,note\n1,,\n2,40,\n,,\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_THAT(schema->column_types,
              ElementsAre(CsvValueType::kInteger, CsvValueType::kInteger, CsvValueType::kText));
  EXPECT_EQ(schema->rows, 3);
}

TEST(InferCsvSchemaTest, AllEmptyColumnIsText) {
  absl::StatusOr<CsvSchema> schema = Infer("id,blank\n1,\n2,\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kInteger, CsvValueType::kText));
}

TEST(InferCsvSchemaTest, HeaderOnlyFileHasTextColumnsAndNoRows) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age\n");
  ASSERT_TRUE(schema.ok());
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kText, CsvValueType::kText));
  EXPECT_EQ(schema->rows, 0);
}

TEST(InferCsvSchemaTest, AcceptsCrlfLineEnds) {
  absl::StatusOr<CsvSchema> schema = Infer("id,score\r\n1,2.5\r\n2,3\r\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_THAT(schema->column_names, ElementsAre("id", "score"));
  EXPECT_THAT(schema->column_types, ElementsAre(CsvValueType::kInteger, CsvValueType::kDouble));
}

TEST(InferCsvSchemaTest, AcceptsMissingFinalNewline) {
  absl::StatusOr<CsvSchema> schema = Infer("id\n1\n2");
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->rows, 2);
}

TEST(InferCsvSchemaTest, RefusesEmptyFile) {
  absl::StatusOr<CsvSchema> schema = Infer("");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(schema.status().message(), HasSubstr("header"));
}

TEST(InferCsvSchemaTest, RefusesRowWithWrongFieldCountNamingTheLine) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age\n1,30\n2\n");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(schema.status().message(), HasSubstr("line 3"));
}

TEST(InferCsvSchemaTest, SkipsBlankLinesLikeTheServer) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age\n1,30\n\r\n2,31\n\n");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->rows, 2);
}

TEST(InferCsvSchemaTest, LineNumbersCountSkippedBlankLines) {
  absl::StatusOr<CsvSchema> schema = Infer("id,age\n\n1\n");
  ASSERT_FALSE(schema.ok());
  EXPECT_THAT(schema.status().message(), HasSubstr("line 3"));
}

TEST(CsvValueTypeWordTest, NamesEveryType) {
  EXPECT_EQ(CsvValueTypeWord(CsvValueType::kInteger), "integer");
  EXPECT_EQ(CsvValueTypeWord(CsvValueType::kDouble), "double");
  EXPECT_EQ(CsvValueTypeWord(CsvValueType::kText), "text");
}

}  // namespace
}  // namespace dpqctl
