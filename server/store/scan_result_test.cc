// How the partials of several shards add up (scan_result.h): every statistic adds, groups merge by
// key and stay sorted, and a group on one shard only is kept as it is.
#include "server/store/scan_result.h"

#include "gtest/gtest.h"

namespace dpq::store {
namespace {

GroupStats Stats(std::vector<std::string> key, int64_t count, double sum, double sum_sq,
                 std::vector<int64_t> buckets, int64_t units) {
  GroupStats g;
  g.key = std::move(key);
  g.count = count;
  g.sum = sum;
  g.sum_sq = sum_sq;
  g.buckets = std::move(buckets);
  g.units = units;
  return g;
}

TEST(AddShardPartialTest, UngroupedTotalsAndBucketsAdd) {
  ScanResult total;
  ScanResult east;
  static_cast<GroupStats&>(east) = Stats({}, 3, 1.5, 2.25, {1, 2, 0}, 2);
  ScanResult west;
  static_cast<GroupStats&>(west) = Stats({}, 4, -0.5, 1.0, {0, 1, 3}, 3);
  AddShardPartial(east, &total);
  AddShardPartial(west, &total);
  EXPECT_EQ(total.count, 7);
  EXPECT_DOUBLE_EQ(total.sum, 1.0);
  EXPECT_DOUBLE_EQ(total.sum_sq, 3.25);
  EXPECT_EQ(total.buckets, (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(total.units, 5);
  EXPECT_TRUE(total.groups.empty());
}

TEST(AddShardPartialTest, GroupsMergeByKeyAndStaySortedWithGroupsOfOneShardKept) {
  ScanResult east;
  east.groups = {Stats({"a"}, 2, 1, 1, {}, 1), Stats({"c"}, 5, 2, 4, {}, 2)};
  ScanResult west;
  west.groups = {Stats({"b"}, 1, 3, 9, {}, 1), Stats({"c"}, 1, 1, 1, {}, 1)};
  ScanResult total;
  AddShardPartial(east, &total);
  AddShardPartial(west, &total);
  ASSERT_EQ(total.groups.size(), 3u);
  EXPECT_EQ(total.groups[0].key, (std::vector<std::string>{"a"}));
  EXPECT_EQ(total.groups[1].key, (std::vector<std::string>{"b"}));
  EXPECT_EQ(total.groups[1].count, 1);
  EXPECT_EQ(total.groups[2].key, (std::vector<std::string>{"c"}));
  EXPECT_EQ(total.groups[2].count, 6);
  EXPECT_DOUBLE_EQ(total.groups[2].sum, 3);
  EXPECT_DOUBLE_EQ(total.groups[2].sum_sq, 5);
  EXPECT_EQ(total.groups[2].units, 3);
  EXPECT_EQ(total.count, 0);  // grouped: the top-level fields stay zero
}

TEST(AddShardPartialTest, AnEmptyShardChangesNothing) {
  ScanResult east;
  east.groups = {Stats({"a"}, 2, 1, 1, {4, 0}, 1)};
  ScanResult total;
  AddShardPartial(east, &total);
  AddShardPartial(ScanResult{}, &total);
  ASSERT_EQ(total.groups.size(), 1u);
  EXPECT_EQ(total.groups[0].buckets, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(total.groups[0].count, 2);
}

}  // namespace
}  // namespace dpq::store
