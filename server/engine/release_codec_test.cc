#include "server/engine/release_codec.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/planner.h"

namespace dpq::engine {
namespace {

ReleasedRow Row(std::vector<std::string> key, std::string label, double value) {
  ReleasedRow r;
  r.key = std::move(key);
  r.label = std::move(label);
  r.value = value;
  r.ci_lower = value - 0.1;
  r.ci_upper = value + 1.0 / 3;
  r.noise_scale = 0.1 + 0.2;  // not a short decimal: must still round-trip exactly
  return r;
}

void ExpectSameRows(const std::vector<ReleasedRow>& a, const std::vector<ReleasedRow>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].label, b[i].label);
    EXPECT_EQ(a[i].value, b[i].value);
    EXPECT_EQ(a[i].has_interval, b[i].has_interval);
    EXPECT_EQ(a[i].ci_lower, b[i].ci_lower);
    EXPECT_EQ(a[i].ci_upper, b[i].ci_upper);
    EXPECT_EQ(a[i].noise_scale, b[i].noise_scale);
    EXPECT_EQ(a[i].rank_error, b[i].rank_error);
  }
}

TEST(ReleaseCodecTest, RowsRoundTripExactly) {
  ReleasedRow quantile = Row({}, "q=0.5", 41.123456789012345);
  quantile.has_interval = false;
  quantile.rank_error = 17.25;
  quantile.ci_lower = quantile.ci_upper = 0;  // no interval: not stored
  const std::vector<ReleasedRow> rows = {Row({"Oslo", "x\"y\\z"}, "[0, 10)", -1e-300),
                                         Row({}, "", 1e300), quantile};
  absl::StatusOr<std::vector<ReleasedRow>> back = DecodeRows(EncodeRows(rows));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameRows(rows, *back);
}

// A NULL group key (query::NullGroupKey) is stored as JSON null, never as a NUL character.
TEST(ReleaseCodecTest, NullGroupKeysAreStoredAsJsonNull) {
  const std::vector<ReleasedRow> rows = {Row({query::NullGroupKey(), "Male"}, "", 12),
                                         Row({"", "Female"}, "", 3)};
  const std::string json = EncodeRows(rows);
  EXPECT_THAT(json, ::testing::HasSubstr("\"key\":[null,\"Male\"]"));
  EXPECT_THAT(json, ::testing::HasSubstr("\"key\":[\"\",\"Female\"]"));  // "" is not NULL
  EXPECT_EQ(json.find('\0'), std::string::npos);
  EXPECT_EQ(json.find("\\u0000"), std::string::npos);
  absl::StatusOr<std::vector<ReleasedRow>> back = DecodeRows(json);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameRows(rows, *back);
  EXPECT_TRUE(query::IsNullGroupKey((*back)[0].key[0]));
  EXPECT_FALSE(query::IsNullGroupKey((*back)[1].key[0]));
}

// A release stored before NULL groups existed (string keys only, as written then) still decodes:
// a request-id replay returns it unchanged.
TEST(ReleaseCodecTest, ReleasesStoredBeforeNullGroupsStillDecode) {
  const std::string stored =
      "{\"rows\":[{\"ci\":[4279.0,4289.0],\"key\":[\"English\"],\"label\":\"\",\"noise_scale\":2.0,"
      "\"rank_error\":0.0,\"value\":4284.0},{\"ci\":null,\"key\":[],\"label\":\"q=0.5\","
      "\"noise_scale\":0.5,\"rank_error\":3.0,\"value\":17.5}]}";
  absl::StatusOr<std::vector<ReleasedRow>> rows = DecodeRows(stored);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].key, std::vector<std::string>{"English"});
  EXPECT_EQ((*rows)[0].value, 4284.0);
  EXPECT_FALSE((*rows)[1].has_interval);
  EXPECT_EQ(EncodeRows(*rows), stored);  // the same canonical text: the audit hash still holds
}

TEST(ReleaseCodecTest, BatchRoundTripsWithOptionalBounds) {
  BatchAnswer a;
  a.aggregate = "sum";
  a.column = "wages";
  a.mechanism = "laplace";
  a.epsilon_units = 100000000000;
  a.delta_units = 0;
  a.noise_scale = 1000.0009765625;
  a.lower = 0.0;
  a.upper = 100.0;
  a.max_contributions = 5;
  a.rows = {Row({}, "", 12.5)};
  BatchAnswer b;
  b.aggregate = "count";
  b.max_partitions = 3;
  b.rows = {Row({"a"}, "", 1), Row({"b"}, "", 2)};
  absl::StatusOr<std::vector<BatchAnswer>> back = DecodeBatch(EncodeBatch({a, b}));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].aggregate, "sum");
  EXPECT_EQ((*back)[0].epsilon_units, a.epsilon_units);
  EXPECT_EQ((*back)[0].noise_scale, a.noise_scale);
  EXPECT_EQ((*back)[0].lower, a.lower);
  EXPECT_FALSE((*back)[1].lower.has_value());
  EXPECT_EQ((*back)[1].max_partitions, 3);
  ExpectSameRows(b.rows, (*back)[1].rows);
}

TEST(ReleaseCodecTest, MalformedTextIsInternal) {
  for (const char* text : {"", "{", "{\"rows\": 3}", "{\"rows\": [{\"key\": []}]}", "[]"}) {
    EXPECT_EQ(DecodeRows(text).status().code(), absl::StatusCode::kInternal) << text;
    EXPECT_EQ(DecodeBatch(text).status().code(), absl::StatusCode::kInternal) << text;
  }
}

TEST(ReleaseCodecTest, OldAllocationsWithoutResultGiveTheirSingleValue) {
  store::Allocation a;
  a.value = 7;
  a.ci_lower = 5;
  a.ci_upper = 9;
  a.noise_scale = 2;
  absl::StatusOr<std::vector<ReleasedRow>> rows = RowsOf(a);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].value, 7);
  EXPECT_EQ((*rows)[0].ci_lower, 5);
  EXPECT_EQ((*rows)[0].ci_upper, 9);
  EXPECT_TRUE((*rows)[0].key.empty());
}

}  // namespace
}  // namespace dpq::engine
