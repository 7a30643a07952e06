// Aggregate-scan throughput on a streaming-replication hot standby against the primary it follows
// (docs/scaling.md). One run: a throwaway primary, a dataset of --rows rows loaded
// through dpq's own DatasetStore, a standby made from it with pg_basebackup -R, then for each
// client count the same K-bounded clipped sum (dpq's AggregateScanner, so the very SQL dpqd runs)
// on three targets, interleaved in rounds so that drift affects them alike:
//   primary           the scans on the primary (what dpqd does without --read-database-url)
//   standby           the scans on the standby, directly
//   standby (router)  through store::ScanRouter, which first reads the dataset's version on the
//                     standby: what dpqd with --read-database-url really does per scan
// Both servers run on this one machine, so the figures say what a scan costs on a standby, not
// what a second machine adds; docs/scaling.md says what that leaves unmeasured.
// A plain driver (not Google Benchmark: each measurement is a fixed-duration run of N threads).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/query/csv_to_copy.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/postgres/migrator.h"
#include "server/store/scan_router.h"
#include "tests/support/test_postgres.h"

ABSL_FLAG(int64_t, rows, 1000000, "rows in the dataset (3 rows per privacy unit on average)");
ABSL_FLAG(std::string, clients, "1,2,4", "concurrent scanning clients, comma-separated");
ABSL_FLAG(double, seconds, 4, "duration of each measurement");
ABSL_FLAG(int, rounds, 2, "rounds over the three targets (interleaved)");

namespace dpq {
namespace {

struct Measurement {
  int64_t scans = 0;
  double seconds = 0;  // wall time until the last scan finished
  std::vector<double> latencies_ms;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// Runs `clients` threads scanning with `scanner` for `seconds`.
absl::StatusOr<Measurement> Measure(store::AggregateScanner& scanner, const query::ScanPlan& plan,
                                    int clients, double seconds) {
  std::vector<Measurement> per(clients);
  std::vector<absl::Status> errors(clients);
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      while (absl::Now() < end) {
        const absl::Time t0 = absl::Now();
        absl::StatusOr<store::ScanResult> r = scanner.Scan(plan);
        if (!r.ok()) {
          errors[c] = r.status();
          return;
        }
        per[c].latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
        ++per[c].scans;
      }
    });
  }
  for (auto& t : threads) t.join();
  Measurement all;
  all.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (int c = 0; c < clients; ++c) {
    RETURN_IF_ERROR(errors[c]);
    all.scans += per[c].scans;
    all.latencies_ms.insert(all.latencies_ms.end(), per[c].latencies_ms.begin(),
                            per[c].latencies_ms.end());
  }
  return all;
}

// The rows, as the COPY lines dpq's loader writes: uid, a value in [0, 100), a category.
store::CopyLineSource Rows(const query::DatasetSchema& schema, int64_t rows) {
  struct State {
    query::CsvToCopy encoder;
    int64_t next = 0, rows = 0;
    bool header_sent = false, finished = false;
    absl::BitGen gen;
  };
  auto state = std::make_shared<State>(
      State{query::CsvToCopy(schema.columns), 0, rows, false, false, absl::BitGen()});
  return [state](std::string* lines) -> absl::StatusOr<bool> {
    if (state->finished) return false;
    std::string csv;
    if (!state->header_sent) {
      csv = "uid,x,kind\n";
      state->header_sent = true;
    }
    for (int i = 0; i < 50000 && state->next < state->rows; ++i, ++state->next) {
      absl::StrAppend(&csv, absl::Uniform<int64_t>(state->gen, 0, state->rows / 3 + 1), ",",
                      absl::Uniform<int>(state->gen, 0, 10000) / 100.0, ",k",
                      absl::Uniform<int>(state->gen, 0, 8), "\n");
    }
    RETURN_IF_ERROR(state->encoder.Feed(csv, lines));
    if (state->next >= state->rows) {
      state->finished = true;
      RETURN_IF_ERROR(state->encoder.Finish(lines));
    }
    return true;
  };
}

absl::Status Main() {
  const int64_t rows = absl::GetFlag(FLAGS_rows);
  std::vector<int> client_counts;
  for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_clients), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(c, &n) || n < 1 || n > 64) {
      return absl::InvalidArgumentError("--clients: numbers in [1, 64]");
    }
    client_counts.push_back(n);
  }
  testing::TestPostgresOptions options;
  // Room for the table in memory on both servers, connections for the clients.
  options.settings = {
      {"shared_buffers", "256MB"}, {"max_connections", "100"}, {"work_mem", "64MB"}};
  ASSIGN_OR_RETURN(auto primary, testing::TestPostgres::Start(options));
  RETURN_IF_ERROR(
      store::ApplyMigrations(primary->connection_url(), DPQ_BENCH_MIGRATIONS_DIR).status());
  ASSIGN_OR_RETURN(auto primary_db, store::Database::Open(primary->connection_url(), 70));
  query::DatasetSchema schema;
  schema.name = "scan_bench";
  schema.privacy_unit = "uid";
  schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"x", query::ColumnType::kDouble, 0.0, 100.0, {}},
                    {"kind", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  const absl::Time load_start = absl::Now();
  ASSIGN_OR_RETURN(store::CreatedDataset ds,
                   store::DatasetStore(primary_db.get()).Create(schema, Rows(schema, rows)));
  RETURN_IF_ERROR(primary->Query("CHECKPOINT").status());
  std::printf("loaded %lld rows in %.1f s; making the standby (pg_basebackup -R)\n",
              static_cast<long long>(rows), absl::ToDoubleSeconds(absl::Now() - load_start));
  ASSIGN_OR_RETURN(auto standby, primary->StartStandby());
  ASSIGN_OR_RETURN(auto standby_db, store::Database::Open(standby->connection_url(), 70));
  ASSIGN_OR_RETURN(bool in_recovery, store::InRecovery(*standby_db));
  if (!in_recovery) return absl::InternalError("the standby is not in recovery");

  query::ScanPlan plan;
  plan.dataset_id = ds.schema.id;
  plan.dataset_version = ds.schema.version;
  plan.unit_column = "uid";
  plan.value_column = "x";
  plan.clamp_lower = 0;
  plan.clamp_upper = 100;
  plan.center = 50;
  plan.max_contributions = 5;

  store::AggregateScanner on_primary(primary_db.get());
  store::AggregateScanner on_standby(standby_db.get());
  auto routed_db = store::Database::Open(standby->connection_url(), 70);
  RETURN_IF_ERROR(routed_db.status());
  store::ScanRouter router(primary_db.get(), *std::move(routed_db), store::ScanRouterOptions{});
  store::AggregateScanner routed(&router);
  // Warm both servers' caches once.
  RETURN_IF_ERROR(on_primary.Scan(plan).status());
  RETURN_IF_ERROR(on_standby.Scan(plan).status());

  struct Target {
    const char* name;
    store::AggregateScanner* scanner;
  };
  const Target targets[] = {
      {"primary", &on_primary}, {"standby", &on_standby}, {"standby (router)", &routed}};
  std::printf("\n%-8s %-17s %12s %10s %10s %22s\n", "clients", "target", "scans/s", "p50 ms",
              "p90 ms", "scans/s vs primary");
  for (int clients : client_counts) {
    Measurement sum[3];
    for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
      for (int t = 0; t < 3; ++t) {
        ASSIGN_OR_RETURN(Measurement m,
                         Measure(*targets[t].scanner, plan, clients, absl::GetFlag(FLAGS_seconds)));
        sum[t].scans += m.scans;
        sum[t].seconds += m.seconds;
        sum[t].latencies_ms.insert(sum[t].latencies_ms.end(), m.latencies_ms.begin(),
                                   m.latencies_ms.end());
      }
    }
    const double primary_rate = static_cast<double>(sum[0].scans) / sum[0].seconds;
    for (int t = 0; t < 3; ++t) {
      const double rate = static_cast<double>(sum[t].scans) / sum[t].seconds;
      std::printf("%-8d %-17s %12.2f %10.1f %10.1f %22.2f\n", clients, targets[t].name, rate,
                  Percentile(sum[t].latencies_ms, 0.5), Percentile(sum[t].latencies_ms, 0.9),
                  primary_rate > 0 ? rate / primary_rate : 0);
    }
  }
  const store::ScanRouteStats stats = router.Stats();
  std::printf(
      "\nrouter: %lld scans on the standby, %lld on the primary (fallbacks: %lld lagging, "
      "%lld unavailable)\n",
      static_cast<long long>(stats.scans_on_standby),
      static_cast<long long>(stats.scans_on_primary),
      static_cast<long long>(stats.fallbacks_lagging),
      static_cast<long long>(stats.fallbacks_unavailable));
  return absl::OkStatus();
}

}  // namespace
}  // namespace dpq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = dpq::Main();
  if (!s.ok()) {
    std::fprintf(stderr, "standby_scan_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
