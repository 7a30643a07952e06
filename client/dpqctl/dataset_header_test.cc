#include "client/dpqctl/dataset_header.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;

CsvSchema PeopleSchema() {
  CsvSchema schema;
  schema.column_names = {"id", "age", "income", "city"};
  schema.column_types = {CsvValueType::kInteger, CsvValueType::kInteger, CsvValueType::kDouble,
                         CsvValueType::kText};
  return schema;
}

void ExpectInvalid(const absl::Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(fragment));
}

TEST(ParseBoundsSpecTest, ParsesNegativeAndScientificBounds) {
  absl::StatusOr<BoundsSpec> bounds = ParseBoundsSpec("income=-5.5:1e3");
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  EXPECT_EQ(bounds->column, "income");
  EXPECT_EQ(bounds->lower, -5.5);
  EXPECT_EQ(bounds->upper, 1000);
}

TEST(ParseBoundsSpecTest, ParsesBothBoundsNegative) {
  absl::StatusOr<BoundsSpec> bounds = ParseBoundsSpec("t=-10:-1");
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  EXPECT_EQ(bounds->lower, -10);
  EXPECT_EQ(bounds->upper, -1);
}

TEST(ParseBoundsSpecTest, RefusesMissingEqualsSign) {
  ExpectInvalid(ParseBoundsSpec("age0:100").status(), "COLUMN=LOWER:UPPER");
}

TEST(ParseBoundsSpecTest, RefusesMissingColumn) {
  ExpectInvalid(ParseBoundsSpec("=0:100").status(), "COLUMN=LOWER:UPPER");
}

TEST(ParseBoundsSpecTest, RefusesMissingColon) {
  ExpectInvalid(ParseBoundsSpec("age=100").status(), "COLUMN=LOWER:UPPER");
}

TEST(ParseBoundsSpecTest, RefusesEmptyBound) {
  ExpectInvalid(ParseBoundsSpec("age=:100").status(), "not a finite number");
  ExpectInvalid(ParseBoundsSpec("age=0:").status(), "not a finite number");
}

TEST(ParseBoundsSpecTest, RefusesNonNumericBound) {
  ExpectInvalid(ParseBoundsSpec("age=zero:100").status(), "'zero'");
}

TEST(ParseBoundsSpecTest, RefusesInfiniteAndNanBounds) {
  ExpectInvalid(ParseBoundsSpec("age=0:inf").status(), "not a finite number");
  ExpectInvalid(ParseBoundsSpec("age=nan:1").status(), "not a finite number");
  ExpectInvalid(ParseBoundsSpec("age=0:1e999").status(), "not a finite number");
}

TEST(ParseBoundsSpecTest, RefusesLowerNotBelowUpper) {
  ExpectInvalid(ParseBoundsSpec("age=5:5").status(), "below the upper");
  ExpectInvalid(ParseBoundsSpec("age=10:1").status(), "below the upper");
}

TEST(ParseBoundsSpecTest, RefusesTrailingGarbage) {
  ExpectInvalid(ParseBoundsSpec("age=0:100:7").status(), "not a finite number");
}

TEST(ParseTypeSpecTest, ParsesEveryType) {
  EXPECT_EQ(ParseTypeSpec("a=integer")->type, dpq::v1::COLUMN_TYPE_INTEGER);
  EXPECT_EQ(ParseTypeSpec("a=double")->type, dpq::v1::COLUMN_TYPE_DOUBLE);
  EXPECT_EQ(ParseTypeSpec("a=text")->type, dpq::v1::COLUMN_TYPE_TEXT);
  EXPECT_EQ(ParseTypeSpec("zip=text")->column, "zip");
}

TEST(ParseTypeSpecTest, RefusesUnknownTypeListingTheValidOnes) {
  absl::Status status = ParseTypeSpec("a=float").status();
  ExpectInvalid(status, "--type");
  EXPECT_THAT(status.message(), HasSubstr("integer, double, text"));
}

TEST(ParseTypeSpecTest, RefusesUnspecifiedAndUpperCase) {
  ExpectInvalid(ParseTypeSpec("a=unspecified").status(), "--type");
  ExpectInvalid(ParseTypeSpec("a=INTEGER").status(), "--type");
}

TEST(ParseCategoriesSpecTest, ParsesValuesInOrder) {
  absl::StatusOr<CategoriesSpec> spec = ParseCategoriesSpec("city=oslo|new york|a=b");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->column, "city");
  EXPECT_THAT(spec->values, ::testing::ElementsAre("oslo", "new york", "a=b"));
}

TEST(ParseCategoriesSpecTest, ParsesASingleValue) {
  absl::StatusOr<CategoriesSpec> spec = ParseCategoriesSpec("sex=f");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->values, ::testing::ElementsAre("f"));
}

TEST(ParseCategoriesSpecTest, RefusesMissingEqualsColumnOrValues) {
  ExpectInvalid(ParseCategoriesSpec("city").status(), "COLUMN=VALUE|VALUE|...");
  ExpectInvalid(ParseCategoriesSpec("=a|b").status(), "COLUMN=VALUE|VALUE|...");
  ExpectInvalid(ParseCategoriesSpec("city=").status(), "COLUMN=VALUE|VALUE|...");
}

TEST(ParseCategoriesSpecTest, RefusesEmptyValue) {
  ExpectInvalid(ParseCategoriesSpec("city=a||b").status(), "empty value");
  ExpectInvalid(ParseCategoriesSpec("city=a|b|").status(), "empty value");
  ExpectInvalid(ParseCategoriesSpec("city=|a").status(), "empty value");
}

TEST(ParseCategoriesSpecTest, RefusesDuplicateValue) {
  absl::Status status = ParseCategoriesSpec("city=oslo|bergen|oslo").status();
  ExpectInvalid(status, "--categories");
  EXPECT_THAT(status.message(), HasSubstr("'oslo'"));
  EXPECT_THAT(status.message(), HasSubstr("more than once"));
}

TEST(ParseBoundsSpecTest, KeepsCalendarBoundsAsText) {
  absl::StatusOr<BoundsSpec> day = ParseBoundsSpec("day=2026-01-01:2026-12-31");
  ASSERT_TRUE(day.ok()) << day.status();
  EXPECT_TRUE(day->calendar);
  EXPECT_EQ(day->lower_text, "2026-01-01");
  EXPECT_EQ(day->upper_text, "2026-12-31");
  // A timestamp's own colons: the bounds split after the first one's Z.
  absl::StatusOr<BoundsSpec> at = ParseBoundsSpec("at=2026-01-01T00:00:00Z:2026-12-31T23:59:59.5Z");
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->lower_text, "2026-01-01T00:00:00Z");
  EXPECT_EQ(at->upper_text, "2026-12-31T23:59:59.5Z");
  EXPECT_FALSE(ParseBoundsSpec("age=0:100")->calendar);
  ExpectInvalid(ParseBoundsSpec("day=2026-01-01:soon").status(), "not a finite number");
}

TEST(BuildDatasetHeaderTest, CalendarBoundsGoToDateColumnsOnly) {
  const std::vector<TypeSpec> types = {{"age", dpq::v1::COLUMN_TYPE_DATE}};
  absl::StatusOr<dpq::v1::DatasetHeader> header = BuildDatasetHeader(
      "people", "id", PeopleSchema(), types, {*ParseBoundsSpec("age=2026-01-01:2026-12-31")});
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->columns(1).lower_text(), "2026-01-01");
  EXPECT_EQ(header->columns(1).upper_text(), "2026-12-31");
  EXPECT_FALSE(header->columns(1).has_lower());
  ExpectInvalid(
      BuildDatasetHeader("people", "id", PeopleSchema(), types, {*ParseBoundsSpec("age=0:100")})
          .status(),
      "its bounds are dates");
  ExpectInvalid(BuildDatasetHeader("people", "id", PeopleSchema(), {},
                                   {*ParseBoundsSpec("age=2026-01-01:2026-12-31")})
                    .status(),
                "date and timestamp columns only");
}

TEST(BuildDatasetHeaderTest, AttachesCategoriesToTextColumns) {
  absl::StatusOr<dpq::v1::DatasetHeader> header =
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {}, {{"city", {"oslo", "bergen"}}});
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_THAT(header->columns(3).categories(), ::testing::ElementsAre("oslo", "bergen"));
  EXPECT_EQ(header->columns(1).categories_size(), 0);
}

TEST(BuildDatasetHeaderTest, CategoriesMayFollowADeclaredTextType) {
  absl::StatusOr<dpq::v1::DatasetHeader> header =
      BuildDatasetHeader("people", "id", PeopleSchema(), {{"age", dpq::v1::COLUMN_TYPE_TEXT}}, {},
                         {{"age", {"young", "old"}}});
  EXPECT_TRUE(header.ok()) << header.status();
}

TEST(BuildDatasetHeaderTest, RefusesCategoriesOnNumericColumn) {
  ExpectInvalid(
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {}, {{"age", {"1"}}}).status(),
      "text columns only");
}

TEST(BuildDatasetHeaderTest, RefusesCategoriesOnUnknownColumn) {
  ExpectInvalid(
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {}, {{"town", {"a"}}}).status(),
      "--categories: 'town' is not a column");
}

TEST(BuildDatasetHeaderTest, RefusesRepeatedCategories) {
  ExpectInvalid(
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {}, {{"city", {"a"}}, {"city", {"b"}}})
          .status(),
      "--categories: column 'city' is given more than once");
}

TEST(BuildDatasetHeaderTest, UsesInferredTypesInFileOrder) {
  absl::StatusOr<dpq::v1::DatasetHeader> header =
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {});
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->name(), "people");
  EXPECT_EQ(header->privacy_unit(), "id");
  ASSERT_EQ(header->columns_size(), 4);
  EXPECT_EQ(header->columns(0).type(), dpq::v1::COLUMN_TYPE_INTEGER);
  EXPECT_EQ(header->columns(2).name(), "income");
  EXPECT_EQ(header->columns(2).type(), dpq::v1::COLUMN_TYPE_DOUBLE);
  EXPECT_EQ(header->columns(3).type(), dpq::v1::COLUMN_TYPE_TEXT);
  EXPECT_FALSE(header->columns(1).has_lower());
  EXPECT_FALSE(header->columns(1).has_upper());
}

TEST(BuildDatasetHeaderTest, DeclaredTypeOverridesInference) {
  absl::StatusOr<dpq::v1::DatasetHeader> header = BuildDatasetHeader(
      "people", "id", PeopleSchema(), {{"age", dpq::v1::COLUMN_TYPE_DOUBLE}}, {});
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->columns(1).type(), dpq::v1::COLUMN_TYPE_DOUBLE);
}

TEST(BuildDatasetHeaderTest, AttachesBoundsToNumericColumns) {
  absl::StatusOr<dpq::v1::DatasetHeader> header =
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {{"age", 0, 120}});
  ASSERT_TRUE(header.ok()) << header.status();
  ASSERT_TRUE(header->columns(1).has_lower());
  EXPECT_EQ(header->columns(1).lower(), 0);
  EXPECT_EQ(header->columns(1).upper(), 120);
}

TEST(BuildDatasetHeaderTest, BoundsMayFollowADeclaredNumericType) {
  absl::StatusOr<dpq::v1::DatasetHeader> header = BuildDatasetHeader(
      "people", "id", PeopleSchema(), {{"city", dpq::v1::COLUMN_TYPE_INTEGER}}, {{"city", 0, 10}});
  EXPECT_TRUE(header.ok()) << header.status();
}

TEST(BuildDatasetHeaderTest, RefusesBoundsOnTextColumn) {
  ExpectInvalid(BuildDatasetHeader("people", "id", PeopleSchema(), {}, {{"city", 0, 1}}).status(),
                "numeric columns only");
}

TEST(BuildDatasetHeaderTest, RefusesBoundsOnColumnDeclaredText) {
  ExpectInvalid(BuildDatasetHeader("people", "id", PeopleSchema(),
                                   {{"age", dpq::v1::COLUMN_TYPE_TEXT}}, {{"age", 0, 1}})
                    .status(),
                "numeric columns only");
}

TEST(BuildDatasetHeaderTest, RefusesBoundsOnUnknownColumn) {
  ExpectInvalid(BuildDatasetHeader("people", "id", PeopleSchema(), {}, {{"height", 0, 1}}).status(),
                "'height' is not a column");
}

TEST(BuildDatasetHeaderTest, RefusesRepeatedBounds) {
  ExpectInvalid(
      BuildDatasetHeader("people", "id", PeopleSchema(), {}, {{"age", 0, 1}, {"age", 0, 2}})
          .status(),
      "more than once");
}

TEST(BuildDatasetHeaderTest, RefusesTypeOnUnknownColumn) {
  ExpectInvalid(BuildDatasetHeader("people", "id", PeopleSchema(),
                                   {{"height", dpq::v1::COLUMN_TYPE_DOUBLE}}, {})
                    .status(),
                "--type");
}

TEST(BuildDatasetHeaderTest, RefusesUnknownPrivacyUnit) {
  ExpectInvalid(BuildDatasetHeader("people", "person", PeopleSchema(), {}, {}).status(),
                "--privacy-unit");
}

TEST(RequireDeclaredTypesTest, RefusesUndeclaredColumnsAndProposesTheirFlags) {
  CsvSchema schema;
  schema.column_names = {"id", "age", "city"};
  schema.column_types = {CsvValueType::kInteger, CsvValueType::kDouble, CsvValueType::kText};
  const absl::Status s =
      RequireDeclaredTypes(schema, {TypeSpec{"id", dpq::v1::COLUMN_TYPE_INTEGER}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Undeclared: age, city."));
  EXPECT_THAT(s.message(),
              HasSubstr("Inferred from this file: --type age=double --type city=text."));
  EXPECT_THAT(s.message(), HasSubstr("--infer-types"));
}

TEST(RequireDeclaredTypesTest, AcceptsAFullyDeclaredSchema) {
  CsvSchema schema;
  schema.column_names = {"id", "age"};
  schema.column_types = {CsvValueType::kInteger, CsvValueType::kDouble};
  EXPECT_TRUE(RequireDeclaredTypes(schema, {TypeSpec{"age", dpq::v1::COLUMN_TYPE_INTEGER},
                                            TypeSpec{"id", dpq::v1::COLUMN_TYPE_INTEGER}})
                  .ok());
}

}  // namespace
}  // namespace dpqctl
