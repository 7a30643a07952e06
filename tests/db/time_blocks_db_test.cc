// Time blocks through the engine on a real database (block composition, query/time_blocks.h): a
// population whose budget is per day-block, one dataset with a `day` date column declared
// 2026-01-01..2026-12-31. A query pays exactly the blocks its WHERE range on `day` allows up to
// today (ledger_blocks cells, the audit row's `blocks`), a new day starts with a full budget, a
// refusal charges no block, concurrent debits through two engines never overspend a block, the
// audit chain recomputes every cell, and the scan reads only the paid blocks.
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/block_ledger.h"
#include "server/store/cap_figures.h"
#include "server/store/population_store.h"
#include "tests/db/engine_replica.h"
#include "tests/db/engine_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::testing::HasSubstr;

int64_t Day(const char* text) { return *query::ParseDate(text); }
std::string Date(int64_t day) { return query::FormatDate(day); }

constexpr int kRowsPerDay = 3;  // 2026-07-01..2026-09-30, one person per row
// Rows outside the paid blocks of a no-range query on 2026-09-30 (and one clamped into the first).
constexpr int kFutureRows = 2;  // dated 2026-12-20: a block that has not started
constexpr int kNullRows = 2;    // day NULL: in no block
constexpr int kEarlyRows = 1;   // dated 2025-06-01: clamped to 2026-01-01, the first block

class TimeBlocksTest : public ::dpq::testing::EngineTest {
 protected:
  TimeBlocksTest() : EngineTest(20260930) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    store::PopulationStore populations(db());
    ASSERT_OK_AND_ASSIGN(store::Population clinic,
                         populations.Create("clinic", query::ColumnType::kInteger));
    population_id_ = clinic.id;
    ASSERT_OK(CreateVisits("visits", "clinic"));
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    store::PrincipalStore principals(db());
    ASSERT_OK(principals.Grant("alice", "visits"));
    ASSERT_OK(SetPerBlock(1));
    SetToday("2026-09-30");
  }

  // `name` in population `population`: blocked by day on `day`, kRowsPerDay rows a day over
  // 2026-07..2026-09 and the rows outside the paid blocks above, each row its own person.
  absl::Status CreateVisits(const std::string& name, const std::string& population) {
    query::DatasetSchema schema;
    schema.name = name;
    schema.population = population;
    schema.privacy_unit = "uid";
    query::ColumnSchema day{"day", query::ColumnType::kDate, absl::nullopt, absl::nullopt, {}};
    day.calendar_lower = Day("2026-01-01");
    day.calendar_upper = Day("2026-12-31");
    schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}}, day};
    schema.time_blocks = query::TimeBlocking{"day", query::CalendarBucket::kDay};
    std::string csv = "uid,day\n";
    int uid = 0;
    for (int64_t d = Day("2026-07-01"); d <= Day("2026-09-30"); ++d) {
      for (int i = 0; i < kRowsPerDay; ++i) absl::StrAppend(&csv, ++uid, ",", Date(d), "\n");
    }
    for (int i = 0; i < kFutureRows; ++i) absl::StrAppend(&csv, ++uid, ",2026-12-20\n");
    for (int i = 0; i < kNullRows; ++i) absl::StrAppend(&csv, ++uid, ",\n");
    for (int i = 0; i < kEarlyRows; ++i) absl::StrAppend(&csv, ++uid, ",2025-06-01\n");
    return CreateFromCsv(schema, csv).status();
  }

  absl::Status SetPerBlock(double epsilon) {
    store::BlockLedger blocks(db());
    return blocks.SetPerBlock(population_id_, EpsU(epsilon), 0, nullptr).status();
  }

  void SetToday(const char* day) {
    today_.store(Day(day));
    engine_->SetToday([this] { return today_.load(); });
  }

  // A count of visits; `n` makes each question new (a term that keeps every row), so no answer
  // comes free from the result cache.
  static query::QuerySpec Count(const std::string& where, double epsilon, int n) {
    query::QuerySpec s;
    s.dataset = "visits";
    s.aggregate = query::AggregateKind::kCount;
    s.epsilon = epsilon;
    s.where = absl::StrCat("uid <> ", 100000 + n);
    if (!where.empty()) absl::StrAppend(&s.where, " AND ", where);
    return s;
  }
  static std::string Window(const char* first, const char* last) {
    return absl::StrCat("day >= '", first, "' AND day <= '", last, "'");
  }

  absl::StatusOr<QueryOutcome> Ask(const std::string& where, double epsilon) {
    const int n = ++asked_;
    return engine_->Run(alice_, Count(where, epsilon, n), absl::StrCat("q", n));
  }

  // The population's cells, "YYYY-MM-DD|epsilon spent units" per line, in block order.
  std::string Cells() {
    return Sql(absl::StrCat(
        "SELECT block_start, epsilon_spent_units FROM ledger_blocks WHERE population_id = ",
        population_id_, " ORDER BY block_start"));
  }
  // Everything a debit could change, as text: cells, ledger row, audit rows.
  std::string Snapshot() {
    return Sql(absl::StrCat(
        "SELECT 'cell', b::text FROM ledger_blocks b ORDER BY b.block_start; "
        "SELECT 'ledger', l::text FROM ledgers l WHERE population_id = ",
        population_id_, "; SELECT 'audit', a::text FROM audit a ORDER BY a.population_id, a.seq"));
  }

  void ExpectVerifies() {
    store::BudgetLedger ledger(db());
    ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification v, ledger.Verify(population_id_));
    EXPECT_TRUE(v.ok) << v.reason << " at seq " << v.first_broken_seq;
    EXPECT_TRUE(v.full);
  }

  int64_t population_id_ = 0;
  store::Principal alice_;
  std::atomic<int64_t> today_{0};
  int asked_ = 0;
};

// The last seven days pay exactly seven cells, each the query's epsilon, and the audit row names
// them.
TEST_F(TimeBlocksTest, ALastSevenDaysQueryDebitsExactlyThoseSevenBlocks) {
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, Ask(Window("2026-09-24", "2026-09-30"), 0.5));
  EXPECT_EQ(out.allocation.blocks, "day:2026-09-24:2026-09-30");
  std::string want;
  for (int64_t d = Day("2026-09-24"); d <= Day("2026-09-30"); ++d) {
    absl::StrAppend(&want, want.empty() ? "" : "\n", Date(d), "|", EpsU(0.5));
  }
  EXPECT_EQ(Cells(), want);
  EXPECT_EQ(Sql(absl::StrCat("SELECT blocks FROM audit WHERE population_id = ", population_id_)),
            "day:2026-09-24:2026-09-30");
  store::BlockLedger blocks(db());
  ASSERT_OK_AND_ASSIGN(std::vector<store::BlockBudget> cells,
                       blocks.ListCells(population_id_, Day("2026-01-01"), Day("2026-12-31")));
  ASSERT_EQ(cells.size(), 7u);
  for (const store::BlockBudget& c : cells) {
    EXPECT_EQ(c.epsilon_total_units, EpsU(1)) << Date(c.start);
    EXPECT_EQ(c.epsilon_spent_units, EpsU(0.5)) << Date(c.start);
    EXPECT_FALSE(c.own_budget);
  }
  ExpectVerifies();
}

// No range on `day`: every block from the first (2026-01-01) to today's.
TEST_F(TimeBlocksTest, AQueryWithoutARangePaysEveryBlockUpToToday) {
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, Ask("", 0.25));
  EXPECT_EQ(out.allocation.blocks, "day:2026-01-01:2026-09-30");
  const int64_t days = Day("2026-09-30") - Day("2026-01-01") + 1;
  ASSERT_EQ(days, 273);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*), min(block_start), max(block_start), "
                             "min(epsilon_spent_units), max(epsilon_spent_units) FROM "
                             "ledger_blocks WHERE population_id = ",
                             population_id_)),
            absl::StrCat(days, "|2026-01-01|2026-09-30|", EpsU(0.25), "|", EpsU(0.25)));
  ExpectVerifies();
}

// Budget 1 a block, 0.5 a query. The refusal names the first exhausted block of the window; the
// next day's block starts full, while a window still holding exhausted blocks stays refused.
TEST_F(TimeBlocksTest, ANewDaysBlockStartsWithTheFullBudget) {
  for (int i = 0; i < 2; ++i) ASSERT_OK(Ask(Window("2026-09-27", "2026-09-30"), 0.5).status());
  absl::StatusOr<QueryOutcome> r = Ask(Window("2026-09-24", "2026-09-30"), 0.5);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("time block 2026-09-27 of population clinic"));
  for (int i = 0; i < 2; ++i) ASSERT_OK(Ask(Window("2026-09-24", "2026-09-26"), 0.5).status());
  r = Ask(Window("2026-09-24", "2026-09-30"), 0.5);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("time block 2026-09-24 of population clinic"));
  // 2026-10-01 has not started: asking about it alone leaves no block to pay (before any charge).
  r = Ask("day = '2026-10-01'", 0.5);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();

  SetToday("2026-10-01");
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, Ask("day = '2026-10-01'", 0.5));
  EXPECT_EQ(out.allocation.blocks, "day:2026-10-01:2026-10-01");
  r = Ask(Window("2026-09-25", "2026-10-01"), 0.5);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("time block 2026-09-25 of population clinic"));
  // Without a range the window is today's again: 2026-09-24 is the first exhausted block.
  r = Ask("", 0.5);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("time block 2026-09-24 of population clinic"));
  ASSERT_OK_AND_ASSIGN(out, Ask("day = '2026-10-01'", 0.5));
  EXPECT_EQ(Sql(absl::StrCat("SELECT epsilon_spent_units FROM ledger_blocks WHERE population_id = ",
                             population_id_, " AND block_start = '2026-10-01'")),
            absl::StrCat(EpsU(1)));
  ExpectVerifies();
}

// A refused query changes no cell (nor creates one for the blocks before the exhausted one), no
// ledger row and no audit row. The refusal's first blocks fit: only the last one is exhausted.
TEST_F(TimeBlocksTest, ARefusedQueryChargesNoBlock) {
  for (int i = 0; i < 2; ++i) ASSERT_OK(Ask("day = '2026-09-30'", 0.5).status());
  ASSERT_OK(Ask(Window("2026-09-28", "2026-09-29"), 0.25).status());
  const std::string before = Snapshot();
  ASSERT_THAT(before, HasSubstr("2026-09-30"));
  absl::StatusOr<QueryOutcome> r = Ask(Window("2026-09-20", "2026-09-30"), 0.25);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("time block 2026-09-30 of population clinic"));
  EXPECT_EQ(Snapshot(), before);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM ledger_blocks WHERE population_id = ",
                             population_id_)),
            "3");
  // Refused by the per-block budget of a query over every block: nothing either.
  r = Ask("", 0.25);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_EQ(Snapshot(), before);
  ExpectVerifies();
}

// 2 engines (two pools on one database, as two dpqd) x 16 threads, each asking random 7-day
// windows of a 20-day span at 0.25 against 1 a block: no block is ever overspent, every cell holds
// exactly what the answers that paid it were charged, and the chain recomputes the cells. Half the
// threads ask as bob, whose cap is 0.5 a block: his spend in a block never passes it and equals
// his answers' charges there.
TEST_F(TimeBlocksTest, ConcurrentOverlappingWindowsNeverOverspendABlock) {
  constexpr int kEngines = 2, kThreads = 16, kQueriesPerThread = 6, kSpan = 20, kWidth = 7;
  constexpr double kEpsilon = 0.25;
  // More threads than connections, as in a dpqd: they wait for the pool (the test cluster allows
  // 30 connections, the fixture's pool and psql included).
  constexpr int kConnectionsPerEngine = 6;
  const int64_t span_first = Day("2026-09-30") - kSpan + 1;
  std::vector<std::unique_ptr<::dpq::testing::EngineReplica>> replicas;
  for (int e = 0; e < kEngines; ++e) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<::dpq::testing::EngineReplica> r,
                         ::dpq::testing::OpenEngineReplica(url(), kConnectionsPerEngine, 500 + e));
    r->engine->SetToday([] { return Day("2026-09-30"); });
    replicas.push_back(std::move(r));
  }
  ASSERT_OK_AND_ASSIGN(store::Principal bob, CreatePrincipal("bob"));
  store::PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("bob", "visits", EpsU(2 * kEpsilon)));
  std::mutex mu;
  std::vector<int64_t> paid_by_block(kSpan, 0);  // answers that paid each block of the span
  std::vector<int64_t> bob_paid_by_block(kSpan, 0);
  int answered = 0, refused = 0;
  std::vector<std::string> unexpected;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int e = 0; e < kEngines; ++e) {
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, e, t] {
        std::mt19937 pick(1000 * e + t);
        std::uniform_int_distribution<int> start(0, kSpan - kWidth);
        ready.fetch_add(1);
        while (ready.load() < kEngines * kThreads) std::this_thread::yield();
        for (int i = 0; i < kQueriesPerThread; ++i) {
          const int first = start(pick);
          const int n = 1 + i + kQueriesPerThread * (t + kThreads * e);
          const std::string where = Window(Date(span_first + first).c_str(),
                                           Date(span_first + first + kWidth - 1).c_str());
          const bool as_bob = t % 2 == 1;
          absl::StatusOr<QueryOutcome> r =
              replicas[e]->engine->Run(as_bob ? bob : alice_, Count(where, kEpsilon, n),
                                       absl::StrCat("c-", e, "-", t, "-", i));
          std::lock_guard<std::mutex> lock(mu);
          if (r.ok()) {
            ++answered;
            const absl::optional<query::PaidBlocks> paid =
                query::ParseBlockRange(r->allocation.blocks);
            if (r->cached || !paid.has_value() || paid->range.first != span_first + first ||
                paid->range.last != span_first + first + kWidth - 1) {
              unexpected.push_back(absl::StrCat(where, ": paid '", r->allocation.blocks, "'"));
              continue;
            }
            for (int b = first; b < first + kWidth; ++b) {
              ++paid_by_block[b];
              if (as_bob) ++bob_paid_by_block[b];
            }
          } else if (r.status().code() == absl::StatusCode::kResourceExhausted &&
                     absl::StrContains(r.status().message(), "time block")) {
            ++refused;
          } else {
            unexpected.push_back(r.status().ToString());
          }
        }
      });
    }
  }
  for (std::thread& th : threads) th.join();
  EXPECT_THAT(unexpected, ::testing::IsEmpty());
  EXPECT_GT(refused, 0);
  EXPECT_GT(answered, 0);
  // Every cell: exactly its answers' charges, never more than its budget (1 = 4 answers).
  std::string want;
  int64_t paid_sum = 0;
  for (int b = 0; b < kSpan; ++b) {
    EXPECT_LE(paid_by_block[b] * EpsU(kEpsilon), EpsU(1)) << Date(span_first + b);
    paid_sum += paid_by_block[b];
    if (paid_by_block[b] == 0) continue;
    absl::StrAppend(&want, want.empty() ? "" : "\n", Date(span_first + b), "|",
                    paid_by_block[b] * EpsU(kEpsilon));
  }
  EXPECT_EQ(paid_sum, static_cast<int64_t>(answered) * kWidth);
  EXPECT_EQ(Sql(absl::StrCat("SELECT block_start, epsilon_spent_units FROM ledger_blocks WHERE "
                             "population_id = ",
                             population_id_, " AND epsilon_spent_units > 0 ORDER BY block_start")),
            want);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM ledger_blocks WHERE population_id = ",
                             population_id_, " AND epsilon_spent_units > ", EpsU(1))),
            "0");
  EXPECT_EQ(Sql(absl::StrCat("SELECT coalesce(sum(epsilon_spent_units), 0) FROM ledger_blocks "
                             "WHERE population_id = ",
                             population_id_)),
            absl::StrCat(paid_sum * EpsU(kEpsilon)));
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM audit WHERE population_id = ", population_id_)),
            absl::StrCat(answered));
  std::string bob_want;
  for (int b = 0; b < kSpan; ++b) {
    EXPECT_LE(bob_paid_by_block[b], 2) << Date(span_first + b);
    if (bob_paid_by_block[b] == 0) continue;
    absl::StrAppend(&bob_want, bob_want.empty() ? "" : "\n", Date(span_first + b), "|",
                    bob_paid_by_block[b] * EpsU(kEpsilon));
  }
  EXPECT_EQ(Sql(absl::StrCat("SELECT block_start, epsilon_spent_units FROM block_caps WHERE "
                             "principal_id = ",
                             bob.id, " AND epsilon_spent_units > 0 ORDER BY block_start")),
            bob_want);
  ExpectVerifies();
}

// An analyst's cap limits each block on a per-block population (block_caps, migration 0017): a
// block where the cap is spent refuses, naming it and charging nothing, while other blocks still
// answer; what counts against the cap (a lower cap is refused, the grant listing and the cap
// metrics show it) is the most spent in one block, not the sum over blocks.
TEST_F(TimeBlocksTest, AnAnalystsCapLimitsEachBlock) {
  store::PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("alice", "visits", EpsU(0.5)));
  ASSERT_OK(Ask(Window("2026-09-29", "2026-09-30"), 0.25).status());
  ASSERT_OK(Ask("day = '2026-09-30'", 0.25).status());
  const std::string before = Snapshot() + Sql("SELECT b::text FROM block_caps b ORDER BY 1") +
                             Sql("SELECT g::text FROM population_caps g ORDER BY 1");
  absl::StatusOr<QueryOutcome> r = Ask(Window("2026-09-28", "2026-09-30"), 0.25);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(),
              HasSubstr("analyst alice's cap on time block 2026-09-30 of population clinic"));
  EXPECT_EQ(Snapshot() + Sql("SELECT b::text FROM block_caps b ORDER BY 1") +
                Sql("SELECT g::text FROM population_caps g ORDER BY 1"),
            before);
  // Block 2026-09-30 has budget left (0.5 of 1) but not for alice; the blocks before it do.
  for (int i = 0; i < 2; ++i) ASSERT_OK(Ask(Window("2026-09-27", "2026-09-28"), 0.25).status());
  EXPECT_EQ(Sql(absl::StrCat("SELECT string_agg(block_start || ':' || epsilon_spent_units, ',' "
                             "ORDER BY block_start) FROM block_caps WHERE population_id = ",
                             population_id_)),
            absl::StrCat("2026-09-27:", EpsU(0.5), ",2026-09-28:", EpsU(0.5),
                         ",2026-09-29:", EpsU(0.25), ",2026-09-30:", EpsU(0.5)));
  EXPECT_EQ(Sql("SELECT epsilon_spent_units FROM population_caps"), absl::StrCat(EpsU(1)));

  absl::Status lower = principals.Grant("alice", "visits", EpsU(0.25));
  EXPECT_EQ(lower.code(), absl::StatusCode::kFailedPrecondition) << lower;
  EXPECT_THAT(lower.message(), HasSubstr("in the block where the analyst spent most"));
  ASSERT_OK_AND_ASSIGN(std::vector<store::GrantRecord> grants, principals.ListGrants("visits"));
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].epsilon_spent_units, EpsU(0.5));
  ASSERT_OK_AND_ASSIGN(std::vector<store::AnalystCap> caps, store::ListAnalystCaps(db()));
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].epsilon_spent_units, EpsU(0.5));
  ASSERT_OK(principals.Grant("alice", "visits", EpsU(0.75)));
  ASSERT_OK(Ask("day = '2026-09-30'", 0.25).status());
  ExpectVerifies();
}

// The chain verifies with the blocks recorded; a cell changed behind the ledger's back (raised,
// zeroed, or a spend in a block no row paid) is reported naming its block.
TEST_F(TimeBlocksTest, TheAuditChainRecomputesEveryCell) {
  ASSERT_OK(Ask(Window("2026-09-24", "2026-09-30"), 0.25).status());
  ASSERT_OK(Ask(Window("2026-09-27", "2026-09-28"), 0.25).status());
  EXPECT_EQ(Sql(absl::StrCat("SELECT string_agg(blocks, ',' ORDER BY seq) FROM audit WHERE "
                             "population_id = ",
                             population_id_)),
            "day:2026-09-24:2026-09-30,day:2026-09-27:2026-09-28");
  ExpectVerifies();
  store::BudgetLedger ledger(db());
  const auto expect_broken_at = [&](const std::string& tamper, const std::string& undo,
                                    const char* block) {
    Sql(tamper);
    ASSERT_OK_AND_ASSIGN(store::BudgetLedger::Verification v, ledger.Verify(population_id_));
    EXPECT_FALSE(v.ok) << tamper;
    EXPECT_THAT(v.reason, HasSubstr(absl::StrCat("time block ", block))) << tamper;
    Sql(undo);
    ExpectVerifies();
  };
  const std::string cell = absl::StrCat("UPDATE ledger_blocks SET epsilon_spent_units = ");
  const std::string of =
      absl::StrCat(" WHERE population_id = ", population_id_, " AND block_start = ");
  expect_broken_at(absl::StrCat(cell, EpsU(0.75), of, "'2026-09-27'"),
                   absl::StrCat(cell, EpsU(0.5), of, "'2026-09-27'"), "2026-09-27");
  expect_broken_at(absl::StrCat(cell, 0, of, "'2026-09-30'"),
                   absl::StrCat(cell, EpsU(0.25), of, "'2026-09-30'"), "2026-09-30");
  expect_broken_at(absl::StrCat("INSERT INTO ledger_blocks (population_id, block_start, "
                                "epsilon_spent_units) VALUES (",
                                population_id_, ", '2026-03-01', 1)"),
                   absl::StrCat("DELETE FROM ledger_blocks", of, "'2026-03-01'"), "2026-03-01");
}

// A no-range count on 2026-09-30 at epsilon 1e6 (Laplace scale 1e-6: P(|noise| >= 0.5) =
// exp(-5e5), so the rounded answer is the exact count of the rows read) counts the rows dated up
// to today and the row clamped into the first block, never a future block's rows nor NULL days.
TEST_F(TimeBlocksTest, TheScanReadsOnlyThePaidBlocks) {
  ASSERT_OK(SetPerBlock(2e6));
  const int64_t dated = kRowsPerDay * (Day("2026-09-30") - Day("2026-07-01") + 1);
  ASSERT_OK_AND_ASSIGN(QueryOutcome all, Ask("", 1e6));
  EXPECT_EQ(std::llround(all.allocation.value), dated + kEarlyRows);
  ASSERT_OK_AND_ASSIGN(QueryOutcome first, Ask("day = '2026-01-01'", 1e6));
  EXPECT_EQ(std::llround(first.allocation.value), kEarlyRows);
  ASSERT_OK_AND_ASSIGN(QueryOutcome september, Ask(Window("2026-09-01", "2026-12-31"), 1e6));
  EXPECT_EQ(september.allocation.blocks, "day:2026-09-01:2026-09-30");
  EXPECT_EQ(std::llround(september.allocation.value), kRowsPerDay * 30);
  // Once 2026-12-20 has started, its rows are read by a query that pays it.
  SetToday("2026-12-20");
  ASSERT_OK_AND_ASSIGN(QueryOutcome december, Ask("day >= '2026-12-01'", 1e6));
  EXPECT_EQ(std::llround(december.allocation.value), kFutureRows);
}

// A per-block population's budget is set per block, not with the population-wide `budget set`; a
// population-wide budget that paid for something cannot become per block.
TEST_F(TimeBlocksTest, BudgetKindsDoNotMix) {
  store::BudgetLedger ledger(db());
  absl::StatusOr<store::BudgetState> set = ledger.Set(population_id_, EpsU(5), 0);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kFailedPrecondition) << set.status();
  EXPECT_THAT(set.status().message(), HasSubstr("per time block"));

  store::PopulationStore populations(db());
  ASSERT_OK_AND_ASSIGN(store::Population ward,
                       populations.Create("ward", query::ColumnType::kInteger));
  ASSERT_OK(CreateVisits("ward_visits", "ward"));
  store::PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("alice", "ward_visits"));
  ASSERT_OK(ledger.Set(ward.id, EpsU(5), 0).status());
  query::QuerySpec q = Count("", 0.5, 1);
  q.dataset = "ward_visits";
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, engine_->Run(alice_, q, "ward-1"));
  EXPECT_EQ(out.allocation.blocks, "") << "a population-wide budget pays no blocks";
  store::BlockLedger blocks(db());
  absl::StatusOr<store::BudgetState> per_block = blocks.SetPerBlock(ward.id, EpsU(1), 0, nullptr);
  EXPECT_EQ(per_block.status().code(), absl::StatusCode::kFailedPrecondition) << per_block.status();
  ASSERT_OK_AND_ASSIGN(store::BudgetState after, ledger.Get(ward.id));
  EXPECT_FALSE(after.per_block);
  EXPECT_EQ(after.epsilon_total_units, EpsU(5));
}

}  // namespace
}  // namespace dpq::engine
