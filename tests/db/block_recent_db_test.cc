// BlockLedger::ListRecentBlocks on a real database: the current and previous block of every
// per-block population, as the metrics export them. Populations blocked by day, ISO week and month
// (one on a timestamp column), a block with a budget of its own, blocks never charged, a population
// whose first block is the current one, one whose blocks have not started, and a population-wide
// one, on 2026-03-04 (a Wednesday). Spending goes through the engine, as an analyst's query does.
#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/store/block_ledger.h"
#include "server/store/population_store.h"
#include "tests/db/engine_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;
using query::CalendarBucket;
using query::ColumnType;

int64_t Day(const char* text) { return *query::ParseDate(text); }

constexpr char kToday[] = "2026-03-04";

class RecentBlocksTest : public ::dpq::testing::EngineTest {
 protected:
  RecentBlocksTest() : EngineTest(20260304) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    today_ = Day(kToday);
    engine_->SetToday([this] { return today_.load(); });
  }

  // Population `name` with one dataset of the same name, blocked by `width` on a column declared
  // from `lower` to 2026-12-31 (a timestamp column from `lower` 08:00 UTC when `timestamp`), with
  // a row a day over 2026-02-01..2026-03-04; per block with epsilon 1 and delta 1e-6 unless
  // `per_block` is false. Returns the population id.
  int64_t Create(const std::string& name, CalendarBucket width, const char* lower,
                 bool timestamp = false, bool per_block = true) {
    store::PopulationStore populations(db());
    auto population = populations.Create(name, ColumnType::kInteger);
    EXPECT_OK(population.status());
    if (!population.ok()) return 0;
    query::DatasetSchema schema;
    schema.name = name;
    schema.population = name;
    schema.privacy_unit = "uid";
    query::ColumnSchema day{"day",
                            timestamp ? ColumnType::kTimestamp : ColumnType::kDate,
                            absl::nullopt,
                            absl::nullopt,
                            {}};
    day.calendar_lower =
        timestamp ? *query::ParseTimestamp(absl::StrCat(lower, "T08:00:00Z")) : Day(lower);
    day.calendar_upper =
        timestamp ? *query::ParseTimestamp("2026-12-31T00:00:00Z") : Day("2026-12-31");
    schema.columns = {{"uid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}}, day};
    schema.time_blocks = query::TimeBlocking{"day", width};
    std::string csv = "uid,day\n";
    int uid = 0;
    for (int64_t d = Day("2026-02-01"); d <= Day(kToday); ++d) {
      absl::StrAppend(&csv, ++uid, ",", query::FormatDate(d), timestamp ? "T12:00:00Z" : "", "\n");
    }
    EXPECT_OK(CreateFromCsv(schema, csv).status());
    store::PrincipalStore principals(db());
    EXPECT_OK(principals.Grant("alice", name));
    if (per_block) {
      store::BlockLedger blocks(db());
      EXPECT_OK(blocks.SetPerBlock(population->id, EpsU(1), DelU(1e-6), nullptr).status());
    }
    return population->id;
  }

  // A count of `dataset` with `epsilon`; `where` empty: every block up to today.
  void Spend(const std::string& dataset, const std::string& where, double epsilon) {
    query::QuerySpec s;
    s.dataset = dataset;
    s.aggregate = query::AggregateKind::kCount;
    s.epsilon = epsilon;
    s.where = where;
    EXPECT_OK(engine_->Run(alice_, s, absl::StrCat("q", ++asked_)).status());
  }

  std::vector<store::RecentBlocks> Recent() {
    store::BlockLedger blocks(db());
    auto recent = blocks.ListRecentBlocks(engine_->Today());
    EXPECT_OK(recent.status());
    return recent.ok() ? *recent : std::vector<store::RecentBlocks>{};
  }

  store::Principal alice_;
  std::atomic<int64_t> today_{0};
  int asked_ = 0;
};

// "YYYY-MM-DD eps_total/eps_spent delta_total/delta_spent [own]" in units, for one comparison.
std::string Text(const store::BlockBudget& b) {
  return absl::StrCat(query::FormatDate(b.start), " ", b.epsilon_total_units, "/",
                      b.epsilon_spent_units, " ", b.delta_total_units, "/", b.delta_spent_units,
                      b.own_budget ? " own" : "");
}

const int64_t kDelta = DelU(1e-6);

std::string Fresh(const char* day, int64_t epsilon_total = EpsU(1)) {
  return absl::StrCat(day, " ", epsilon_total, "/0 ", kDelta, "/0");
}
std::string Spent(const char* day, double epsilon, int64_t epsilon_total = EpsU(1)) {
  return absl::StrCat(day, " ", epsilon_total, "/", EpsU(epsilon), " ", kDelta, "/0");
}

TEST_F(RecentBlocksTest, DayBlocksAreTodayAndYesterdayAndAnUnchargedOneIsFresh) {
  Create("daily", CalendarBucket::kDay, "2026-01-01");
  Spend("daily", "day = '2026-03-04'", 0.25);
  const std::vector<store::RecentBlocks> recent = Recent();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].population, "daily");
  EXPECT_EQ(recent[0].width, CalendarBucket::kDay);
  EXPECT_EQ(Text(recent[0].current), Spent("2026-03-04", 0.25));
  ASSERT_TRUE(recent[0].previous.has_value());
  EXPECT_EQ(Text(*recent[0].previous), Fresh("2026-03-03"));  // never charged: no cell
  EXPECT_EQ(Sql("SELECT count(*) FROM ledger_blocks WHERE block_start = '2026-03-03'"), "0");
}

TEST_F(RecentBlocksTest, WeekBlocksAreIsoWeeksAndABlockKeepsItsOwnBudget) {
  const int64_t weekly = Create("weekly", CalendarBucket::kWeek, "2026-01-01");
  store::BlockLedger blocks(db());
  ASSERT_OK(blocks.SetBlock(weekly, Day("2026-02-23"), EpsU(2), kDelta, nullptr).status());
  Spend("weekly", "day >= '2026-02-23'", 0.5);  // pays the two weeks
  const std::vector<store::RecentBlocks> recent = Recent();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].width, CalendarBucket::kWeek);
  EXPECT_EQ(Text(recent[0].current), Spent("2026-03-02", 0.5));  // the Monday of 2026-03-04
  ASSERT_TRUE(recent[0].previous.has_value());
  EXPECT_EQ(Text(*recent[0].previous), Spent("2026-02-23", 0.5, EpsU(2)) + " own");
}

// A timestamp column declared from 2026-01-15T08:00Z: its blocks are months from 2026-01-01.
TEST_F(RecentBlocksTest, MonthBlocksOfATimestampColumn) {
  Create("monthly", CalendarBucket::kMonth, "2026-01-15", /*timestamp=*/true);
  Spend("monthly", "", 0.125);  // every block up to today: January, February, March
  const std::vector<store::RecentBlocks> recent = Recent();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].width, CalendarBucket::kMonth);
  EXPECT_EQ(Text(recent[0].current), Spent("2026-03-01", 0.125));
  ASSERT_TRUE(recent[0].previous.has_value());
  EXPECT_EQ(Text(*recent[0].previous), Spent("2026-02-01", 0.125));
}

// Every per-block population in one call, by name; the first block has no previous one; a
// population whose blocks have not started and a population-wide one are not listed. The ledger's
// per-block budget, changed later, is what an uncharged block has.
TEST_F(RecentBlocksTest, AllPopulationsAtOnceAndOnlyBlocksThatStarted) {
  Create("weekly", CalendarBucket::kWeek, "2026-01-01");
  const int64_t fresh = Create("fresh", CalendarBucket::kDay, kToday);
  Create("later", CalendarBucket::kDay, "2026-04-01");
  Create("wide", CalendarBucket::kDay, "2026-01-01", /*timestamp=*/false, /*per_block=*/false);
  store::BlockLedger blocks(db());
  ASSERT_OK(blocks.SetPerBlock(fresh, EpsU(3), kDelta, nullptr).status());
  const std::vector<store::RecentBlocks> recent = Recent();
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0].population, "fresh");
  EXPECT_EQ(recent[0].population_id, fresh);
  EXPECT_EQ(Text(recent[0].current), Fresh(kToday, EpsU(3)));
  EXPECT_FALSE(recent[0].previous.has_value());
  EXPECT_EQ(recent[1].population, "weekly");
  EXPECT_EQ(Text(recent[1].current), Fresh("2026-03-02"));
  ASSERT_TRUE(recent[1].previous.has_value());
  EXPECT_EQ(Text(*recent[1].previous), Fresh("2026-02-23"));

  // The next day: the current day block of `fresh` moves, yesterday's becomes the previous one.
  today_ = Day("2026-03-05");
  const std::vector<store::RecentBlocks> next = Recent();
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(Text(next[0].current), Fresh("2026-03-05", EpsU(3)));
  ASSERT_TRUE(next[0].previous.has_value());
  EXPECT_EQ(Text(*next[0].previous), Fresh(kToday, EpsU(3)));
}

}  // namespace
}  // namespace dpq::engine
