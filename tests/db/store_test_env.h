// Shared set-up of the store-layer db tests: one throwaway cluster per test binary (per process:
// ctest runs every discovered test in its own process, so each gets its own cluster), and one fresh,
// fully migrated database per test, so tests never see each other's rows or triggers.
//
//   class LedgerTest : public dpq::testing::StoreTest {};
//   TEST_F(LedgerTest, X) { DatasetStore datasets(db()); ... Sql("SELECT ...") ... }
#ifndef DPQ_TESTS_DB_STORE_TEST_ENV_H_
#define DPQ_TESTS_DB_STORE_TEST_ENV_H_

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/query/csv_to_copy.h"
#include "server/query/dataset_schema.h"
#include "server/query/privacy_units.h"
#include "server/store/allocation.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/postgres/migrator.h"
#include "server/store/principal_store.h"
#include "tests/support/cluster_suite.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_postgres.h"

#ifndef DPQ_TEST_MIGRATIONS_DIR
#error "DPQ_TEST_MIGRATIONS_DIR must be defined (tests/db/CMakeLists.txt)"
#endif

namespace dpq::testing {

// colon.csv (survival::colon, deploy/demo-data): two rows per patient (recurrence and death
// events), 929 patients; no declared bounds.
inline query::DatasetSchema ColonDemoSchema() {
  const auto col = [](const std::string& name, query::ColumnType type) {
    return query::ColumnSchema{name, type, absl::nullopt, absl::nullopt, {}};
  };
  query::DatasetSchema s;
  s.name = "colon";
  s.privacy_unit = "patient_id";
  for (const char* c : {"patient_id", "study"})
    s.columns.push_back(col(c, query::ColumnType::kInteger));
  s.columns.push_back(col("rx", query::ColumnType::kText));
  for (const char* c : {"sex", "age", "obstruct", "perfor", "adhere", "nodes", "status", "differ",
                        "extent", "surg", "node4", "time", "etype"}) {
    s.columns.push_back(col(c, query::ColumnType::kInteger));
  }
  return s;
}

// Budget amounts in ledger units (server/query/privacy_units.h).
inline int64_t EpsU(double epsilon) {
  return *query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget);
}
inline int64_t DelU(double delta) { return *query::DeltaToUnits(delta, "delta"); }

// An allocation as the engine would fill it in for a sum over x with a Laplace (delta 0) or
// Gaussian release, charged to `who`. The value is no short decimal, so exact round trips are
// checked wherever it is stored.
inline store::Allocation SumAllocation(const store::Principal& who, const std::string& request_id,
                                       double epsilon, double delta = 0,
                                       const std::string& fingerprint = "") {
  store::Allocation a;
  a.request_id = request_id;
  a.principal_id = who.id;
  a.analyst = who.name;
  a.fingerprint = fingerprint.empty() ? absl::StrCat("fp-", request_id) : fingerprint;
  a.aggregate = "sum";
  a.column = "x";
  a.mechanism = delta > 0 ? "gaussian" : "laplace";
  a.epsilon_units = EpsU(epsilon);
  a.delta_units = DelU(delta);
  a.sensitivity = 10;
  a.noise_scale = 10 / epsilon;
  a.value = 1.0 / 3.0 + epsilon;
  a.confidence = 0.95;
  a.ci_lower = a.value - 29.957322735539909;
  a.ci_upper = a.value + 29.957322735539909;
  a.clamp_lower = 0.0;
  a.clamp_upper = 10.0;
  a.max_contributions = 1;
  return a;
}

class StoreTest : public ::dpq::testing::ClusterSuite {
 protected:
  static constexpr int kPoolSize = 12;

  void SetUp() override {
    ASSERT_NE(pg_, nullptr) << "the test cluster did not start";
    static int counter = 0;
    database_ = absl::StrCat("store_", ++counter);
    ASSERT_OK_AND_ASSIGN(url_, pg_->CreateDatabase(database_));
    auto report = store::ApplyMigrations(url_, DPQ_TEST_MIGRATIONS_DIR);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_GE(report->applied, 1);
    // A dataset's own population would otherwise get the dataset's id (both sequences start at 1
    // in a fresh database), and a test passing a dataset id where the population's is meant would
    // pass by luck: population ids start at 1001 here.
    ASSERT_OK(TestPostgres::RunPsql(
                  url_, "SELECT setval(pg_get_serial_sequence('populations', 'id'), 1000)")
                  .status());
    ASSERT_OK_AND_ASSIGN(db_, store::Database::Open(url_, kPoolSize));
  }

  store::Database* db() { return db_.get(); }
  const std::string& url() const { return url_; }
  // This test's database name (the same on a standby or through a pooler).
  const std::string& database() const { return database_; }

  // Runs SQL through psql on this test's database; a failure is a test failure and returns "".
  std::string Sql(const std::string& sql) {
    auto r = TestPostgres::RunPsql(url_, sql);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : "";
  }
  // Runs SQL that may fail (to check that the database refuses it).
  absl::StatusOr<std::string> TrySql(const std::string& sql) {
    return TestPostgres::RunPsql(url_, sql);
  }

  // What a PostgreSQL restart or pg_terminate_backend does to a debit in flight: another session
  // holds the ledger row of `dataset_id` locked (for 2 s), `debit` runs in its own thread and
  // waits for that lock, and its backend is terminated while it waits. Returns whether a waiting
  // backend was found and terminated; `debit` has returned when this does.
  bool KillDebitWaitingForLedgerLock(int64_t dataset_id, const std::function<void()>& debit) {
    std::thread holder([&] {
      (void)TrySql(absl::StrCat("SELECT 1 FROM ledgers WHERE population_id = ", dataset_id,
                                " FOR UPDATE; SELECT pg_sleep(2)"));
    });
    std::string sleeping;
    for (int i = 0; i < 100 && sleeping != "1"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      sleeping =
          Sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' "
              "AND datname = current_database()");
    }
    if (sleeping != "1") {
      holder.join();
      ADD_FAILURE() << "the lock holder did not start";
      return false;
    }
    std::thread waiter(debit);
    std::string killed;
    for (int i = 0; i < 100 && killed != "t"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      killed =
          Sql("SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity "
              "WHERE datname = current_database() AND wait_event_type = 'Lock' "
              "AND query LIKE '%FOR UPDATE OF l%'");
    }
    waiter.join();
    holder.join();
    return killed == "t";
  }

  // Creates a dataset from CSV text through the same path as the admin RPC: CsvToCopy encodes,
  // the store pulls COPY lines in chunks of `chunk_bytes` of CSV.
  absl::StatusOr<store::CreatedDataset> CreateFromCsv(const query::DatasetSchema& schema,
                                                      const std::string& csv,
                                                      size_t chunk_bytes = 4096) {
    store::DatasetStore datasets(db());
    return datasets.Create(schema, CsvSource(schema, csv, chunk_bytes));
  }

  // Appends CSV text (header row included) through the same path.
  absl::StatusOr<int64_t> AppendFromCsv(const query::DatasetSchema& schema, const std::string& csv,
                                        size_t chunk_bytes = 4096) {
    store::DatasetStore datasets(db());
    return datasets.Append(schema, CsvSource(schema, csv, chunk_bytes));
  }

  // The COPY lines of `csv`, encoded by CsvToCopy from chunks of `chunk_bytes` of CSV.
  static store::CopyLineSource CsvSource(const query::DatasetSchema& schema, std::string csv,
                                         size_t chunk_bytes) {
    struct State {
      query::CsvToCopy encoder;
      std::string csv;
      size_t pos = 0;
      bool finished = false;
    };
    auto state = std::make_shared<State>(State{query::CsvToCopy(schema.columns), std::move(csv)});
    return [state, chunk_bytes](std::string* lines) -> absl::StatusOr<bool> {
      if (state->finished) return false;
      if (state->pos >= state->csv.size()) {
        state->finished = true;
        absl::Status s = state->encoder.Finish(lines);
        if (!s.ok()) return s;
        return false;
      }
      absl::Status s =
          state->encoder.Feed(absl::string_view(state->csv).substr(state->pos, chunk_bytes), lines);
      state->pos += chunk_bytes;
      if (!s.ok()) return s;
      return true;
    };
  }

  // A tiny dataset "name" with columns (uid integer, x double [0, 10]) and `rows` rows.
  absl::StatusOr<store::CreatedDataset> CreateTinyDataset(const std::string& name, int rows = 3) {
    query::DatasetSchema schema;
    schema.name = name;
    schema.privacy_unit = "uid";
    schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                      {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
    std::string csv = "uid,x\n";
    for (int i = 1; i <= rows; ++i) absl::StrAppend(&csv, i, ",", i % 10, ".5\n");
    return CreateFromCsv(schema, csv);
  }

  absl::StatusOr<store::Principal> CreatePrincipal(const std::string& name,
                                                   store::Role role = store::Role::kAnalyst) {
    store::PrincipalStore principals(db());
    return principals.Create(name, role, Sha256(absl::StrCat("token-of-", name)));
  }

  std::string database_;
  std::string url_;
  std::unique_ptr<store::Database> db_;
};

// Reads a whole file; empty optional when it cannot be opened.
inline absl::optional<std::string> ReadFileIfExists(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The public demo data set `file` (e.g. "colon.csv"): $DPQ_TEST_DATA_DIR, then the repository's
// deploy/demo-data. Empty optional when neither has it (callers fail: the repository ships them).
inline absl::optional<std::string> ReadDemoData(const std::string& file) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("DPQ_TEST_DATA_DIR"); env != nullptr && *env != '\0') {
    dirs.push_back(env);
  }
#ifdef DPQ_TEST_DEMO_DATA_DIR
  dirs.push_back(DPQ_TEST_DEMO_DATA_DIR);
#endif
  for (const std::string& dir : dirs) {
    if (auto text = ReadFileIfExists(absl::StrCat(dir, "/", file))) return text;
  }
  return absl::nullopt;
}

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_STORE_TEST_ENV_H_
