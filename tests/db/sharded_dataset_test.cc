// Sharded datasets (store/sharded_table.h, store/sharded_scan.h) on three real clusters: this
// test's coordinator database and two shard clusters, east and west, reached through postgres_fdw.
// A sharded copy of a dataset answers every query exactly as the unsharded copy does, whether its
// scan is pushed down whole through postgres_fdw or sent by dpqd to each shard (grouped, filtered,
// per-person pre-aggregated: store/shard_fan_out.h); no raw row reaches the coordinator (the
// shards' statement logs and EXPLAIN's Remote SQL); a load that fails leaves nothing visible; a
// shard that is down refuses a query before it is charged.
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/query_engine.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/store/scan_sql.h"
#include "server/store/shard_fan_out.h"
#include "server/store/shard_store.h"
#include "server/store/sharded_scan.h"
#include "tests/db/adversarial_dataset.h"
#include "tests/db/engine_test_env.h"
#include "tests/db/scan_totality.h"
#include "tests/db/shard_clusters.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::dpq::testing::TestPostgres;
using query::AggregateKind;
using query::QuerySpec;
using ::testing::HasSubstr;

constexpr int kUnits = 60;  // units 1..60 with 1..4 rows each

class ShardedDatasetTest : public ::dpq::testing::EngineTest {
 protected:
  ShardedDatasetTest() : EngineTest(20261206) {}

  static void SetUpTestSuite() {
    EngineTest::SetUpTestSuite();
    for (TestPostgres** shard : {&east_, &west_}) {
      auto started = ::dpq::testing::StartShardCluster();
      ASSERT_TRUE(started.ok()) << started.status();
      *shard = std::move(started).value().release();
    }
  }
  static void TearDownTestSuite() {
    delete east_;
    delete west_;
    east_ = west_ = nullptr;
    EngineTest::TearDownTestSuite();
  }

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NE(west_, nullptr) << "the shard clusters did not start";
    shards_ = std::make_unique<store::ShardStore>(db());
    fan_out_ = std::make_unique<store::ShardFanOut>(shards_.get());
    fan_out_->SetScanObserver([this](const std::string& shard, double) { ++shard_scans_[shard]; });
    scanner_->SetShardFanOut(fan_out_.get());
    engine_ = std::make_unique<QueryEngine>(
        QueryEngine::Stores{datasets_.get(), principals_.get(), ledger_.get(), scanner_.get(),
                            cache_.get(), shards_.get()},
        &rng_);
    for (auto [name, shard] : {std::pair{"east", east_}, std::pair{"west", west_}}) {
      // Each test has a fresh coordinator database, whose dataset ids start at 1 again.
      ASSERT_OK(shard->Query("DROP SCHEMA IF EXISTS dpq_shard CASCADE").status());
      ASSERT_OK(shards_
                    ->Add(name, ::dpq::testing::ShardClusterUrl(*shard, "shard_user",
                                                                ::dpq::testing::kShardPassword))
                    .status());
    }
    ASSERT_OK_AND_ASSIGN(local_, CreatePeople("people", {}));
    ASSERT_OK_AND_ASSIGN(sharded_, CreatePeople("people_sharded", {"east", "west"}));
    ASSERT_OK_AND_ASSIGN(admin_, CreatePrincipal("root", store::Role::kAdmin));
    for (const query::DatasetSchema* s : {&local_, &sharded_}) {
      ASSERT_OK(ledger_->Set(s->population_id, ::dpq::testing::EpsU(9e6), 1000000000000000));
    }
  }

  // uid 1..kUnits; unit u has 1 + u % 4 rows with x = (u * 7 + row) % 13 - 1.5 (bounds 0..10, so
  // some values clamp), and every fifth unit a row with x NULL.
  static std::string PeopleCsv() {
    std::string csv = "uid,x\n";
    for (int u = 1; u <= kUnits; ++u) {
      for (int r = 0; r <= u % 4; ++r) absl::StrAppend(&csv, u, ",", (u * 7 + r) % 13 - 1.5, "\n");
      if (u % 5 == 0) absl::StrAppend(&csv, u, ",\n");
    }
    return csv;
  }
  static query::DatasetSchema PeopleSchema(const std::string& name,
                                           std::vector<std::string> shards) {
    query::DatasetSchema schema;
    schema.name = name;
    schema.privacy_unit = "uid";
    schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                      {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
    schema.shards = std::move(shards);
    return schema;
  }
  absl::StatusOr<query::DatasetSchema> CreatePeople(const std::string& name,
                                                    std::vector<std::string> shards) {
    absl::StatusOr<store::CreatedDataset> created =
        CreateFromCsv(PeopleSchema(name, std::move(shards)), PeopleCsv(), 64);
    if (!created.ok()) return created.status();
    return datasets_->Get(name);
  }

  static QuerySpec Spec(const std::string& dataset, AggregateKind kind, int k = 2) {
    QuerySpec s;
    s.dataset = dataset;
    s.aggregate = kind;
    s.column = kind == AggregateKind::kCount ? "" : "x";
    s.epsilon = 1e6;
    s.max_contributions = k;
    if (kind == AggregateKind::kQuantile) s.quantiles = {0.5};
    if (kind == AggregateKind::kHistogram) s.bins = {0, 2.5, 5, 7.5, 10};
    return s;
  }

  static std::vector<QuerySpec> FanOutSpecs(const std::string& dataset);

  absl::StatusOr<store::ScanResult> ExactScan(const QuerySpec& spec) {
    absl::StatusOr<query::DatasetSchema> schema = datasets_->Get(spec.dataset);
    if (!schema.ok()) return schema.status();
    absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(spec, *schema);
    if (!plan.ok()) return plan.status();
    absl::optional<query::filter::TypedFilter> filter;
    if (!spec.where.empty()) {
      absl::StatusOr<query::filter::TypedFilter> parsed =
          query::filter::ParseAndCheckFilter(spec.where, *schema);
      if (!parsed.ok()) return parsed.status();
      filter = std::move(parsed).value();
    }
    return scanner_->Scan(plan->scan, absl::InfiniteFuture(), filter ? &*filter : nullptr, "seed");
  }

  int64_t SpentUnits(const query::DatasetSchema& s) {
    absl::StatusOr<store::BudgetState> b = ledger_->Get(s.population_id);
    EXPECT_THAT(b, IsOk());
    return b.ok() ? b->epsilon_spent() : -1;
  }
  std::string AuditRows() { return Sql("SELECT count(*) FROM audit"); }
  static std::string ShardRows(TestPostgres* shard, int64_t dataset_id) {
    absl::StatusOr<std::string> n =
        shard->Query(absl::StrCat("SELECT count(*) FROM dpq_shard.ds_", dataset_id));
    return n.ok() ? *n : std::string(n.status().message());
  }

  static TestPostgres* east_;
  static TestPostgres* west_;
  std::unique_ptr<store::ShardStore> shards_;
  std::unique_ptr<store::ShardFanOut> fan_out_;
  std::map<std::string, int> shard_scans_;  // fan-out scans seen by the observer, per shard
  query::DatasetSchema local_, sharded_;
  store::Principal admin_;
};

TestPostgres* ShardedDatasetTest::east_ = nullptr;
TestPostgres* ShardedDatasetTest::west_ = nullptr;

TEST_F(ShardedDatasetTest, RowsAreSplitByTheUnitsHashAndAllOfAUnitSitsOnOneShard) {
  EXPECT_EQ(sharded_.shards, (std::vector<std::string>{"east", "west"}));
  const int east = std::stoi(ShardRows(east_, sharded_.id));
  const int west = std::stoi(ShardRows(west_, sharded_.id));
  EXPECT_GT(east, 0);
  EXPECT_GT(west, 0);
  EXPECT_EQ(std::to_string(east + west), Sql("SELECT count(*) FROM dpq_data.ds_1"));
  // No unit on both shards.
  const std::string east_units = *east_->Query(
      absl::StrCat("SELECT string_agg(DISTINCT uid::text, ',') FROM dpq_shard.ds_", sharded_.id));
  for (absl::string_view uid : absl::StrSplit(east_units, ',')) {
    EXPECT_EQ(*west_->Query(absl::StrCat("SELECT count(*) FROM dpq_shard.ds_", sharded_.id,
                                         " WHERE uid = ", uid)),
              "0")
        << "unit " << uid;
  }
  // Every row of the first load carries load version 1.
  EXPECT_EQ(
      *east_->Query(absl::StrCat("SELECT DISTINCT _dpq_load FROM dpq_shard.ds_", sharded_.id)),
      "1");
}

TEST_F(ShardedDatasetTest, EveryAggregateThatRunsOnShardsAnswersExactlyAsOneTable) {
  for (AggregateKind kind : query::kAllAggregateKinds) {
    for (int k : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(query::AggregateName(kind), " K=", k));
      ASSERT_OK_AND_ASSIGN(store::ScanResult one, ExactScan(Spec("people", kind, k)));
      ASSERT_OK_AND_ASSIGN(store::ScanResult two, ExactScan(Spec("people_sharded", kind, k)));
      EXPECT_EQ(two.count, one.count);
      // Partial sums add in another order: equal to a few ulps of the total's magnitude.
      EXPECT_NEAR(two.sum, one.sum, 1e-12 * (1 + std::abs(one.sum)));
      EXPECT_NEAR(two.sum_sq, one.sum_sq, 1e-12 * (1 + std::abs(one.sum_sq)));
      EXPECT_EQ(two.buckets, one.buckets);
      EXPECT_GT(one.count, 0);
    }
  }
  // And through the engine, at epsilon 1e6: the released counts agree within the noise.
  ASSERT_OK_AND_ASSIGN(QueryOutcome a,
                       engine_->Run(admin_, Spec("people", AggregateKind::kCount), "count-local"));
  ASSERT_OK_AND_ASSIGN(
      QueryOutcome b,
      engine_->Run(admin_, Spec("people_sharded", AggregateKind::kCount), "count-sharded"));
  ASSERT_EQ(a.rows.size(), 1u);
  ASSERT_EQ(b.rows.size(), 1u);
  // Laplace with scale K/epsilon = 2e-6: |a - b| > 1e-3 has probability below e^-250.
  EXPECT_NEAR(a.rows[0].value, b.rows[0].value, 1e-3);
}

// `sql` with its $n placeholders replaced by the parameters as quoted literals (for EXPLAIN).
std::string Inlined(const store::ScanStatement& s) {
  std::string sql = s.sql;
  for (size_t i = s.params.size(); i >= 1; --i) {
    sql = absl::StrReplaceAll(
        sql, {{absl::StrCat("$", i),
               absl::StrCat("'", absl::StrReplaceAll(s.params[i - 1], {{"'", "''"}}), "'")}});
  }
  return sql;
}

TEST_F(ShardedDatasetTest, EachShardRunsTheWholeAggregateAndOnlyPartialsTravel) {
  for (AggregateKind kind : {AggregateKind::kSum, AggregateKind::kHistogram}) {
    ASSERT_OK_AND_ASSIGN(query::QueryPlan plan,
                         query::PlanQuery(Spec("people_sharded", kind), sharded_));
    ASSERT_OK_AND_ASSIGN(store::ScanStatement statement,
                         store::BuildScanStatement(
                             plan.scan, nullptr, "seed", store::ScanArithmetic::kFloat8,
                             [](const std::string& n) { return absl::StrCat("\"", n, "\""); }));
    const std::string explain =
        Sql(absl::StrCat("EXPLAIN (VERBOSE, COSTS OFF) ", Inlined(statement)));
    SCOPED_TRACE(explain);
    // Two Async Foreign Scans, each a remote aggregate: no raw row is fetched.
    std::vector<std::string> remote;
    for (absl::string_view line : absl::StrSplit(explain, '\n')) {
      if (absl::StrContains(line, "Remote SQL:")) remote.emplace_back(line);
    }
    ASSERT_EQ(remote.size(), 2u);
    for (const std::string& r : remote) {
      EXPECT_THAT(r, HasSubstr("count(*)"));
      EXPECT_THAT(r, HasSubstr("float8smaller(float8larger("));
      EXPECT_THAT(r, HasSubstr("_dpq_rank <="));
      EXPECT_THAT(r, HasSubstr("_dpq_load <="));
    }
    EXPECT_THAT(explain, HasSubstr("Async Foreign Scan"));
  }
}

TEST_F(ShardedDatasetTest, TheShardsStatementLogsHoldAggregatesAndNeverAPlainSelectOfValues) {
  for (TestPostgres* shard : {east_, west_}) {
    ASSERT_OK(shard->Query("ALTER SYSTEM SET log_statement = 'all'").status());
    ASSERT_OK(shard->Query("SELECT pg_reload_conf()").status());
  }
  const std::string marker = "dpq-log-marker-7f3a";
  for (TestPostgres* shard : {east_, west_}) {
    ASSERT_OK(shard->Query(absl::StrCat("SELECT '", marker, "'")).status());
  }
  for (AggregateKind kind : query::kAllAggregateKinds) {
    ASSERT_OK(engine_
                  ->Run(admin_, Spec("people_sharded", kind),
                        absl::StrCat("log-", static_cast<int>(kind)))
                  .status());
  }
  // And the scans dpqd sends to each shard itself.
  const std::vector<QuerySpec> fan_out = FanOutSpecs("people_sharded");
  for (size_t i = 0; i < fan_out.size(); ++i) {
    QuerySpec spec = fan_out[i];
    spec.epsilon = 1;  // many queries: each pays little
    ASSERT_OK(engine_->Run(admin_, spec, absl::StrCat("log-fan-out-", i)).status());
  }
  for (TestPostgres* shard : {east_, west_}) {
    ASSERT_OK(shard->Query("ALTER SYSTEM RESET log_statement").status());
    ASSERT_OK(shard->Query("SELECT pg_reload_conf()").status());
    std::stringstream log;
    log << std::ifstream(shard->server().log_file()).rdbuf();
    const std::string text = log.str();
    const size_t from = text.rfind(marker);
    ASSERT_NE(from, std::string::npos);
    int scans = 0;
    for (absl::string_view line : absl::StrSplit(text.substr(from), '\n')) {
      if (!absl::StrContains(line, "dpq_shard.ds_")) continue;
      SCOPED_TRACE(line);
      ++scans;
      EXPECT_THAT(std::string(line), HasSubstr("count(*)"));
      EXPECT_THAT(std::string(line), ::testing::Not(HasSubstr("SELECT uid")));
      EXPECT_THAT(std::string(line), ::testing::Not(HasSubstr("SELECT x")));
    }
    EXPECT_GE(scans, static_cast<int>(std::size(query::kAllAggregateKinds) + fan_out.size()));
  }
}

// The shapes postgres_fdw cannot push down whole (a per-query choice of rows, per-person
// pre-aggregation, a filter, groups) run on each shard, sent there by dpqd. With K and M at least a
// unit's rows and groups (at most 5 here), the random choice keeps every row, so the answers are
// exact and must equal one table's.
std::vector<QuerySpec> ShardedDatasetTest::FanOutSpecs(const std::string& dataset) {
  std::vector<QuerySpec> specs;
  for (AggregateKind kind : query::kAllAggregateKinds) {
    QuerySpec filtered = Spec(dataset, kind, 5);
    filtered.where = "x > 3";
    specs.push_back(filtered);
    QuerySpec grouped = Spec(dataset, kind, 5);
    grouped.group_by = {"x"};
    grouped.max_partitions = 5;
    grouped.delta = 1e-6;
    specs.push_back(grouped);
  }
  for (AggregateKind kind : {AggregateKind::kCount, AggregateKind::kSum, AggregateKind::kMean}) {
    QuerySpec per_person = Spec(dataset, kind, 1);  // one value per person: deterministic
    per_person.pre_aggregate = true;
    // A person's row count clamped to [1, 3], their sum to [0, 20], their mean to [0, 10].
    per_person.lower = kind == AggregateKind::kCount ? 1.0 : 0.0;
    per_person.upper = kind == AggregateKind::kCount ? 3.0 : kind == AggregateKind::kSum ? 20 : 10;
    specs.push_back(per_person);
  }
  return specs;
}

void ExpectSameStats(const store::GroupStats& two, const store::GroupStats& one) {
  EXPECT_EQ(two.key, one.key);
  EXPECT_EQ(two.count, one.count);
  // Partial sums add in another order: equal to a few ulps of the total's magnitude.
  EXPECT_NEAR(two.sum, one.sum, 1e-12 * (1 + std::abs(one.sum)));
  EXPECT_NEAR(two.sum_sq, one.sum_sq, 1e-12 * (1 + std::abs(one.sum_sq)));
  EXPECT_EQ(two.buckets, one.buckets);
  EXPECT_EQ(two.units, one.units);
}

TEST_F(ShardedDatasetTest, GroupedFilteredAndPerPersonQueriesRunOnEachShardAndAnswerAsOneTable) {
  const std::vector<QuerySpec> local = FanOutSpecs("people");
  const std::vector<QuerySpec> sharded = FanOutSpecs("people_sharded");
  for (size_t i = 0; i < local.size(); ++i) {
    SCOPED_TRACE(absl::StrCat(query::AggregateName(local[i].aggregate), " where ", local[i].where,
                              " groups ", local[i].group_by.size(),
                              local[i].pre_aggregate ? " per person" : ""));
    ASSERT_OK_AND_ASSIGN(store::ScanResult one, ExactScan(local[i]));
    ASSERT_OK_AND_ASSIGN(store::ScanResult two, ExactScan(sharded[i]));
    ExpectSameStats(two, one);
    ASSERT_EQ(two.groups.size(), one.groups.size());
    for (size_t g = 0; g < one.groups.size(); ++g) ExpectSameStats(two.groups[g], one.groups[g]);
    EXPECT_GT(one.count + static_cast<int64_t>(one.groups.size()), 0);
  }
  // Each of those scans ran once on each shard, and the observer (dpq_shard_scan_seconds) saw it.
  EXPECT_EQ(shard_scans_["east"], static_cast<int>(sharded.size()));
  EXPECT_EQ(shard_scans_["west"], static_cast<int>(sharded.size()));
  // Through the engine: charged once, answered, audited.
  QuerySpec grouped = sharded[1];
  ASSERT_OK_AND_ASSIGN(QueryOutcome out, engine_->Run(admin_, grouped, "grouped-sharded"));
  EXPECT_GT(out.rows.size(), 0u);
  EXPECT_GT(SpentUnits(sharded_), 0);
  EXPECT_EQ(AuditRows(), "1");
}

TEST_F(ShardedDatasetTest, AShardDownBeforeTheQueryRefusesItWithNothingCharged) {
  ASSERT_OK(west_->server().Stop());
  EXPECT_THAT(engine_->Run(admin_, Spec("people_sharded", AggregateKind::kSum), "down-1"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shard west is down")));
  // A scan dpqd would send to each shard itself is checked the same way, before its charge.
  EXPECT_THAT(engine_->Run(admin_, FanOutSpecs("people_sharded")[1], "down-grouped"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shard west is down")));
  EXPECT_EQ(SpentUnits(sharded_), 0);
  EXPECT_EQ(AuditRows(), "0");
  // The unsharded copy does not depend on the shards.
  EXPECT_THAT(engine_->Run(admin_, Spec("people", AggregateKind::kSum), "local-1"), IsOk());
  ASSERT_OK(west_->Restart());
  EXPECT_THAT(engine_->Run(admin_, Spec("people_sharded", AggregateKind::kSum), "down-2"), IsOk());
}

// A shard that fails after the charge (its table moved away while it still answers the probe)
// follows the paid-scan rules: charged and unanswered (UNAVAILABLE, the fixed message), and the
// retry with the same request id, once the shard is whole again, runs the paid scan without a
// second charge. On both paths: pushed down through postgres_fdw, and sent to each shard by dpqd.
TEST_F(ShardedDatasetTest, AShardFailingAfterTheChargeIsAnsweredOnTheRetryWithoutASecondCharge) {
  const std::string table = absl::StrCat("ds_", sharded_.id);
  const std::vector<std::pair<QuerySpec, std::string>> paths = {
      {Spec("people_sharded", AggregateKind::kSum), "paid-pushed-down"},
      {FanOutSpecs("people_sharded")[1], "paid-fanned-out"}};
  int64_t spent = 0;
  for (const auto& [spec, request_id] : paths) {
    SCOPED_TRACE(request_id);
    ASSERT_OK(
        west_->Query(absl::StrCat("ALTER TABLE dpq_shard.", table, " RENAME TO moved")).status());
    absl::StatusOr<QueryOutcome> failed = engine_->Run(admin_, spec, request_id);
    ASSERT_OK(west_->Query(absl::StrCat("ALTER TABLE dpq_shard.moved RENAME TO ", table)).status());
    EXPECT_THAT(failed, StatusIs(absl::StatusCode::kUnavailable,
                                 HasSubstr("was charged but not answered")));
    const int64_t charged = SpentUnits(sharded_);
    EXPECT_GT(charged, spent);
    ASSERT_OK_AND_ASSIGN(QueryOutcome retried, engine_->Run(admin_, spec, request_id));
    EXPECT_GT(retried.rows.size(), 0u);
    EXPECT_EQ(SpentUnits(sharded_), charged) << "the retry was charged again";
    spent = charged;
  }
  EXPECT_EQ(AuditRows(), "2");
}

TEST_F(ShardedDatasetTest, ALoadThatFailsLeavesNothingVisibleAndTheNextLoadClearsItsRows) {
  ASSERT_OK_AND_ASSIGN(store::ScanResult before,
                       ExactScan(Spec("people_sharded", AggregateKind::kSum)));
  const std::string east_rows = ShardRows(east_, sharded_.id);
  // A shard stopped in the middle of a load: the load fails and nothing of it is visible.
  const query::DatasetSchema schema = sharded_;
  store::DatasetStore datasets(db());
  const std::string more = "uid,x\n1001,5\n1002,6\n1003,7\n1004,8\n";
  int chunk = 0;
  store::CopyLineSource csv = ::dpq::testing::StoreTest::CsvSource(schema, more, 8);
  auto stopping = [&](std::string* lines) -> absl::StatusOr<bool> {
    if (++chunk == 2) EXPECT_OK(east_->server().Stop());
    return csv(lines);
  };
  EXPECT_FALSE(datasets.Append(schema, stopping).ok());
  ASSERT_OK(east_->Restart());
  ASSERT_OK_AND_ASSIGN(query::DatasetSchema after_failed, datasets_->Get("people_sharded"));
  EXPECT_EQ(after_failed.version, sharded_.version);
  EXPECT_EQ(ShardRows(east_, sharded_.id), east_rows);

  // What a shard that committed before another failed leaves: rows of a version the coordinator
  // never committed. Scans do not see them; the next load deletes them.
  ASSERT_OK(east_
                ->Query(absl::StrCat("INSERT INTO dpq_shard.ds_", sharded_.id,
                                     " (uid, x, _dpq_rank, _dpq_load) VALUES (7, 9, 1, ",
                                     sharded_.version + 1, ")"))
                .status());
  ASSERT_OK_AND_ASSIGN(store::ScanResult stale,
                       ExactScan(Spec("people_sharded", AggregateKind::kSum)));
  EXPECT_EQ(stale.count, before.count);
  EXPECT_EQ(stale.sum, before.sum);
  ASSERT_OK(AppendFromCsv(schema, "uid,x\n2001,4\n").status());
  EXPECT_EQ(*east_->Query(absl::StrCat("SELECT count(*) FROM dpq_shard.ds_", sharded_.id,
                                       " WHERE uid = 7 AND x = 9")),
            "0");
  ASSERT_OK_AND_ASSIGN(store::ScanResult appended,
                       ExactScan(Spec("people_sharded", AggregateKind::kSum)));
  EXPECT_EQ(appended.count, before.count + 1);
}

TEST_F(ShardedDatasetTest, AShardHoldingADatasetCannotBeRemovedUntilTheDatasetIsDropped) {
  EXPECT_THAT(shards_->Remove("east"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("people_sharded")));
  ASSERT_OK(datasets_->Drop(sharded_));
  EXPECT_EQ(*east_->Query("SELECT count(*) FROM pg_tables WHERE schemaname = 'dpq_shard' AND "
                          "tablename LIKE 'ds_%'"),
            "0");
  EXPECT_OK(shards_->Remove("east"));
}

TEST_F(ShardedDatasetTest, CreatingOnAnUnknownOrRepeatedShardIsRefusedAndLeavesNothing) {
  EXPECT_THAT(CreatePeople("bad1", {"east", "north"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("shard north is not")));
  EXPECT_THAT(CreatePeople("bad2", {"east", "east"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("named twice")));
  EXPECT_EQ(Sql("SELECT count(*) FROM datasets WHERE name LIKE 'bad%'"), "0");
  // Only people_sharded's table on the shard: the refused creations wrote nothing there.
  EXPECT_EQ(*east_->Query("SELECT count(*) FROM dpq_shard.partitions"), "1");
}

// Scans are total on the shards' SQL too: every flag shape of the scan-totality test, pushed down
// whole or sent to each shard, over the adversarial values (NaN, infinities, extremes) stored on
// the two shards.
TEST_F(ShardedDatasetTest, ScanTotalityEveryFlagShapeScansOnTheShardsWithoutError) {
  ASSERT_OK_AND_ASSIGN(query::DatasetSchema adversarial,
                       ::dpq::testing::CreateAdversarialDataset(db(), url(), {"east", "west"}));
  EXPECT_NE(ShardRows(east_, adversarial.id), "0");
  EXPECT_NE(ShardRows(west_, adversarial.id), "0");
  int pushed_down = 0, fanned_out = 0;
  std::set<AggregateKind> kinds;
  for (const store::totality::Shape& shape : store::totality::FlagShapes()) {
    absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(shape.spec, adversarial);
    if (!plan.ok()) continue;  // refused by the planner, before any charge
    absl::optional<query::filter::TypedFilter> filter;
    if (!shape.spec.where.empty()) {
      ASSERT_OK_AND_ASSIGN(filter,
                           query::filter::ParseAndCheckFilter(shape.spec.where, adversarial));
    }
    const bool whole = store::PushesDownWhole(plan->scan, filter.has_value());
    absl::StatusOr<store::ScanResult> r =
        scanner_->Scan(plan->scan, absl::InfiniteFuture(), filter ? &*filter : nullptr, "seed");
    ASSERT_TRUE(r.ok()) << shape.label << ": " << r.status();
    EXPECT_EQ(r->recovered_data_error, "") << shape.label << ": the float8 statement failed";
    EXPECT_TRUE(std::isfinite(r->sum) && std::isfinite(r->sum_sq)) << shape.label;
    kinds.insert(shape.spec.aggregate);
    ++(whole ? pushed_down : fanned_out);
  }
  EXPECT_EQ(kinds.size(), std::size(query::kAllAggregateKinds));
  EXPECT_GT(pushed_down, 0);
  EXPECT_GT(fanned_out, 0);
  std::printf(
      "sharded scan totality: %d shapes pushed down through postgres_fdw, %d sent to each shard\n",
      pushed_down, fanned_out);
}

// The neighbour rule on shards: two sharded datasets that differ in one person (a unit whose rows
// hold the largest, smallest and non-finite values, on whichever shard its id hashes to) give every
// flag shape the same status, message, charge and number of released rows; only the noisy values
// may differ. Shapes the planner refuses must be refused the same way on both.
TEST_F(ShardedDatasetTest, NeighbouringShardedDatasetsDifferOnlyInTheNoisyValues) {
  const std::vector<std::string> shards = {"east", "west"};
  ASSERT_OK_AND_ASSIGN(query::DatasetSchema d,
                       ::dpq::testing::CreateAdversarialDataset(db(), url(), shards, "near"));
  ASSERT_OK_AND_ASSIGN(query::DatasetSchema d2,
                       ::dpq::testing::CreateAdversarialDataset(db(), url(), shards, "far"));
  Sql(absl::StrCat("INSERT INTO dpq_data.ds_", d2.id,
                   " (pid, x, n, cat, grp, _dpq_rank, _dpq_load) SELECT 99999, (ARRAY['1e308', "
                   "'-Infinity', 'NaN', '-1e308']::float8[])[1 + r % 4], 9223372036854775807, "
                   "'c', 'new', r, 1 FROM generate_series(1, 500) r"));
  for (const query::DatasetSchema* s : {&d, &d2}) {
    ASSERT_OK(ledger_->Set(s->population_id, ::dpq::testing::EpsU(9e6), 1000000000000000));
  }
  int answered = 0, refused = 0, i = 0;
  for (const store::totality::Shape& shape :
       store::totality::FlagShapes({::dpq::testing::AdversarialBounds()[0]})) {
    std::vector<absl::StatusOr<QueryOutcome>> out;
    for (const char* name : {"near", "far"}) {
      QuerySpec spec = shape.spec;
      spec.dataset = name;
      out.push_back(engine_->Run(admin_, spec, absl::StrCat("n-", name, "-", i)));
    }
    ++i;
    SCOPED_TRACE(shape.label);
    ASSERT_EQ(out[0].status().code(), out[1].status().code()) << out[1].status();
    if (!out[0].ok()) {
      EXPECT_EQ(out[0].status().message(), out[1].status().message());
      ++refused;
      continue;
    }
    ++answered;
    EXPECT_EQ(out[0]->allocation.epsilon_units, out[1]->allocation.epsilon_units);
    EXPECT_EQ(out[0]->allocation.delta_units, out[1]->allocation.delta_units);
    // Keys chosen by DP partition selection are themselves a noisy release (the far dataset's
    // person adds a group of their own), as in the e2e neighbour suite; other shapes release a
    // fixed set of rows.
    if (shape.grouping != store::totality::Grouping::kSelectedKeys &&
        shape.grouping != store::totality::Grouping::kTextHistogram) {
      EXPECT_EQ(out[0]->rows.size(), out[1]->rows.size());
    }
  }
  EXPECT_GT(answered, 0);
  std::printf("sharded neighbours: %d shapes answered, %d refused alike\n", answered, refused);
  EXPECT_EQ(SpentUnits(d), SpentUnits(d2));
}

}  // namespace
}  // namespace dpq::engine
