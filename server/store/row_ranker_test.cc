#include "server/store/row_ranker.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::store {
namespace {

using query::ColumnType;

std::string Rank(RowRanker& ranker, const std::string& lines) {
  std::string out;
  absl::Status s = ranker.RankLines(lines, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(RowRankerTest, NumbersRowsPerUnitInLoadOrder) {
  RowRanker r(2, 0, ColumnType::kInteger);
  EXPECT_EQ(Rank(r, "1\ta\n2\tb\n1\tc\n"), "1\ta\t1\n2\tb\t1\n1\tc\t2\n");
  // A later batch (or load) continues the counters.
  EXPECT_EQ(Rank(r, "2\td\n1\te\n3\tf\n"), "2\td\t2\n1\te\t3\n3\tf\t1\n");
  EXPECT_EQ(r.rows(), 6);
  EXPECT_EQ(r.units(), 3u);
}

TEST(RowRankerTest, IntegerUnitsAreKeyedByValueNotSpelling) {
  // bigint reads "007", " 7" and "+7" as 7: one unit, so ranks 1, 2, 3 (never three rank-1 rows).
  RowRanker r(2, 1, ColumnType::kInteger);
  EXPECT_EQ(Rank(r, "x\t7\nx\t007\nx\t+7\nx\t 7\n"), "x\t7\t1\nx\t007\t2\nx\t+7\t3\nx\t 7\t4\n");
}

TEST(RowRankerTest, SmallIdsMoveIntoTheArrayWithoutLosingCounts) {
  RowRanker r(1, 0, ColumnType::kInteger);
  // 70000 is beyond what the array may cover with one unit seen: it starts in the hash table.
  EXPECT_EQ(Rank(r, "70000\n-3\n5000000000\n"), "70000\t1\n-3\t1\n5000000000\t1\n");
  std::string lines;
  for (int i = 1; i <= 2000; ++i) absl::StrAppend(&lines, i, "\n");
  Rank(r, lines);
  // 2003 units allow the array to reach 70000: its count moves over and continues.
  EXPECT_EQ(Rank(r, "70000\n-3\n5000000000\n1000\n"), "70000\t2\n-3\t2\n5000000000\t2\n1000\t2\n");
  EXPECT_EQ(r.units(), 2003u);
  // Sparse ids (one per 1000003) never get an array: memory stays the hash table's.
  RowRanker sparse(1, 0, ColumnType::kInteger);
  lines.clear();
  for (int64_t i = 1; i <= 100000; ++i) absl::StrAppend(&lines, i * 1000003, "\n");
  Rank(sparse, lines);
  EXPECT_EQ(sparse.units(), 100000u);
  EXPECT_LT(sparse.MemoryBytes(), 100000u * 50);
  // 1M dense ids take about 4 bytes each.
  RowRanker dense(1, 0, ColumnType::kInteger);
  lines.clear();
  for (int i = 1000000; i >= 1; --i) absl::StrAppend(&lines, i, "\n");
  Rank(dense, lines);
  EXPECT_EQ(dense.units(), 1000000u);
  EXPECT_LT(dense.MemoryBytes(), 10u * 1000 * 1000);
  EXPECT_EQ(Rank(dense, "1\n1000000\n"), "1\t2\n1000000\t2\n");
}

TEST(RowRankerTest, DoubleUnitsAreKeyedByValue) {
  RowRanker r(1, 0, ColumnType::kDouble);
  EXPECT_EQ(Rank(r, "1\n1.0\n1e0\n-0\n0\n0.5\n"), "1\t1\n1.0\t2\n1e0\t3\n-0\t1\n0\t2\n0.5\t1\n");
}

TEST(RowRankerTest, TextUnitsAreKeyedByUnescapedBytes) {
  // "a\tb" written as the escape \t and as the octal escape \011 is the same text.
  RowRanker r(1, 0, ColumnType::kText);
  EXPECT_EQ(Rank(r, "a\\tb\na\\011b\nab\na\\\\tb\n"), "a\\tb\t1\na\\011b\t2\nab\t1\na\\\\tb\t1\n");
  // A literal "\N" text (escaped as \\N) is not the NULL unit.
  EXPECT_EQ(Rank(r, "\\\\N\n\\N\n\\N\n"), "\\\\N\t1\n\\N\t1\n\\N\t2\n");
}

TEST(RowRankerTest, NullUnitsShareOneCounter) {
  RowRanker r(3, 0, ColumnType::kInteger);
  EXPECT_EQ(Rank(r, "\\N\t1\t\\N\n\\N\t2\tz\n5\t\\N\ty\n"),
            "\\N\t1\t\\N\t1\n\\N\t2\tz\t2\n5\t\\N\ty\t1\n");
}

TEST(RowRankerTest, SeedsContinueStoredRanks) {
  RowRanker r(2, 0, ColumnType::kText);
  ASSERT_TRUE(r.Seed("a\tb", false, 4).ok());  // as PostgreSQL prints it: unescaped
  ASSERT_TRUE(r.Seed("", true, 2).ok());
  EXPECT_EQ(Rank(r, "a\\tb\tx\n\\N\tx\nc\tx\n"), "a\\tb\tx\t5\n\\N\tx\t3\nc\tx\t1\n");
  RowRanker n(1, 0, ColumnType::kInteger);
  EXPECT_FALSE(n.Seed("abc", false, 1).ok());
}

TEST(RowRankerTest, RefusesMalformedLines) {
  RowRanker r(2, 0, ColumnType::kInteger);
  std::string out;
  EXPECT_EQ(r.RankLines("1\tx", &out).code(), absl::StatusCode::kInvalidArgument);  // no line end
  EXPECT_EQ(r.RankLines("1\tx\ty\n", &out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RankLines("one\tx\n", &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RowRankerTest, RefusesAUnitBeyondInt32Rows) {
  RowRanker r(1, 0, ColumnType::kInteger);
  ASSERT_TRUE(r.Seed("9", false, 2147483647).ok());
  std::string out;
  EXPECT_EQ(r.RankLines("9\n", &out).code(), absl::StatusCode::kOutOfRange);
}

TEST(RowRankerTest, MemoryGrowsWithUnitsNotRows) {
  RowRanker r(1, 0, ColumnType::kInteger);
  std::string lines;
  for (int i = 0; i < 1000; ++i) absl::StrAppend(&lines, i % 10, "\n");
  Rank(r, lines);
  const size_t ten_units = r.MemoryBytes();
  Rank(r, lines);
  EXPECT_EQ(r.MemoryBytes(), ten_units);
  EXPECT_LT(ten_units, 300u * 1000);  // the smallest array: 64Ki counters
}

}  // namespace
}  // namespace dpq::store
