// Hot-dataset debit benchmark: debits per second on ONE dataset with 1, 8 and 32 concurrent
// clients, for
//   - pgbench, multi-statement debit (bench/pgbench/debit_multi_statement.sql: BEGIN; SELECT ... FOR
//     UPDATE; INSERT audit; UPDATE ledgers; COMMIT), the shape of dpq's debit transaction before
//     group commit (one transaction per debit);
//   - pgbench, single-statement debit (bench/pgbench/debit_single_statement.sql:
//     WITH u AS (UPDATE ledgers ... RETURNING ...) INSERT INTO audit ... FROM u);
//   - dpq's own store::BudgetLedger::Debit (a pool of one connection per client thread, a unique
//     request id per debit, a real Allocation with its privacy events, basic accountant). Debits
//     are group-committed per dataset (server/store/debit_batcher.h): the "debits/xact" column is
//     the mean number of debits decided and committed per transaction (1 for pgbench);
// side by side in one run, on one throwaway but DURABLE cluster (tests/support/test_postgres.h with
// fsync=on, synchronous_commit=on, full_page_writes=on: every debit waits for its WAL flush, as in a
// real deployment), over the real schema (migrations/ applied with store::ApplyMigrations). Then
// the cost of one debit on a dataset with no history against one with --history prior allocations
// (a valid hash chain written with COPY), interleaved, and the verdict on each throughput and
// history target.
//
// A plain driver rather than Google Benchmark: each measurement is a fixed-duration run of N
// concurrent clients against an external server (and of an external program, pgbench), reported
// as throughput plus latency percentiles in one table; Google Benchmark's iteration model and
// per-thread timing fit neither.
//
// Run by hand (never part of ctest):  ./build-bench/bin/ledger_debit_bench [--seconds=5]
//   [--clients=1,8,32] [--history=100000] [--history-seconds=4]
// Needs /usr/lib/postgresql/15/bin (initdb, pg_ctl, postgres, psql, pgbench). About 80 s with the
// defaults. Exit status 0 when every measurement ran (targets missed are reported, not failed).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/base/sha256.h"
#include "server/base/status_macros.h"
#include "server/query/dataset_schema.h"
#include "server/query/privacy_units.h"
#include "server/store/allocation.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/debit_batcher.h"
#include "server/store/postgres/migrator.h"
#include "server/store/postgres/process.h"
#include "server/store/principal_store.h"
#include "server/store/spend_tally.h"
#include "tests/support/test_postgres.h"

#ifndef DPQ_BENCH_MIGRATIONS_DIR
#error "DPQ_BENCH_MIGRATIONS_DIR must be defined (bench/CMakeLists.txt)"
#endif
#ifndef DPQ_BENCH_PGBENCH_DIR
#error "DPQ_BENCH_PGBENCH_DIR must be defined (bench/CMakeLists.txt)"
#endif

namespace dpq {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kPgBin[] = "/usr/lib/postgresql/15/bin";
constexpr double kChargeEpsilon = 0.001;  // every debit; 1e9 units, also in the pgbench scripts
constexpr double kBudgetEpsilon = 1e6;    // per dataset: never exhausted by a run
constexpr char kEvents[] = "pure:epsilon=0.001";
constexpr double kProbeSeconds = 0.3;

struct Options {
  double seconds = 5;
  std::vector<int> clients = {1, 8, 32};
  int64_t history = 100000;
  double history_seconds = 4;
};

struct Cell {
  std::string method;
  int clients = 0;
  double per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  int64_t done = 0, errors = 0;
  std::string first_error;
  double fsync_per_second = 0;  // ProbeFsync just before the run
  int64_t wal_syncs = 0;        // WAL flushes (pg_stat_wal.wal_sync) during the run
  double debits_per_xact = 1;   // dpq: debits per group transaction (DebitBatcher stats)
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The storage's commit speed right now: 8 kB pwrite + fdatasync (PostgreSQL's default
// wal_sync_method on Linux) in a loop on the cluster's file system for `seconds`. On a shared VM
// this moves by an order of magnitude with other tenants' I/O, and every debit waits for one.
struct FsyncProbe {
  double per_second = 0, p50_ms = 0;
};
FsyncProbe ProbeFsync(const std::string& dir, double seconds) {
  FsyncProbe p;
  const std::string path = absl::StrCat(dir, "/fsync-probe");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return p;
  std::string page(8192, 'x');
  std::vector<double> ms;
  const Clock::time_point start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    const Clock::time_point t0 = Clock::now();
    if (pwrite(fd, page.data(), page.size(), 0) != static_cast<ssize_t>(page.size()) ||
        fdatasync(fd) != 0)
      break;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  p.per_second =
      static_cast<double>(ms.size()) / std::chrono::duration<double>(Clock::now() - start).count();
  p.p50_ms = Percentile(ms, 0.5);
  close(fd);
  unlink(path.c_str());
  return p;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::string(absl::StripAsciiWhitespace(s));
}

// Load average and compiler/linker processes running now, to document the machine conditions.
std::string MachineConditions() {
  int busy = 0;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      int pid;
      if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
      const std::string comm = ReadSmallFile(absl::StrCat("/proc/", e->d_name, "/comm"));
      if (comm == "cc1plus" || comm == "ld" || comm == "ld.gold" || comm == "ld.lld") ++busy;
    }
    closedir(d);
  }
  return absl::StrCat("cpus=", std::thread::hardware_concurrency(), " loadavg=\"",
                      ReadSmallFile("/proc/loadavg"),
                      "\" compiler/linker processes running=", busy);
}

absl::Status Psql(const std::string& url, const std::string& sql) {
  return testing::TestPostgres::RunPsql(url, sql).status();
}

// WAL flushes so far, cluster-wide. Backends publish their counters when they exit or go idle, so
// read this after the run's connections are closed (pgbench exits; RunDpq uses its own pool).
absl::StatusOr<int64_t> WalSyncs(const std::string& url) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let exiting backends report
  ASSIGN_OR_RETURN(std::string out,
                   testing::TestPostgres::RunPsql(url, "SELECT wal_sync FROM pg_stat_wal"));
  int64_t n = 0;
  if (!absl::SimpleAtoi(out, &n)) return absl::InternalError(absl::StrCat("pg_stat_wal: ", out));
  return n;
}

// An allocation as the query engine fills it in for a Laplace sum over a column bounded in [0, 10].
store::Allocation MakeAllocation(const std::string& request_id, const store::Principal& analyst) {
  store::Allocation a;
  a.request_id = request_id;
  a.principal_id = analyst.id;
  a.analyst = analyst.name;
  a.fingerprint = absl::StrCat("sum(x) laplace eps=0.001 #", request_id);
  a.aggregate = "sum";
  a.column = "x";
  a.mechanism = "laplace";
  a.epsilon_units = *query::EpsilonToUnits(kChargeEpsilon, "epsilon");
  a.delta_units = 0;
  a.sensitivity = 10;
  a.noise_scale = 10 / kChargeEpsilon;
  a.value = 15.5;
  a.confidence = 0.95;
  a.ci_lower = -29940;
  a.ci_upper = 29971;
  a.clamp_lower = 0.0;
  a.clamp_upper = 10.0;
  a.max_contributions = 1;
  a.events = kEvents;
  return a;
}

// A tiny dataset (uid integer, x double in [0, 10], 3 rows) with a budget of kBudgetEpsilon,
// granted to `analyst` without a cap (as an analyst who may query it).
absl::StatusOr<int64_t> CreateHotDataset(store::Database* db, const std::string& name,
                                         const store::Principal& analyst) {
  query::DatasetSchema schema;
  schema.name = name;
  schema.privacy_unit = "uid";
  schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
  RETURN_IF_ERROR(query::ValidateNewDataset(schema));
  bool sent = false;
  store::CopyLineSource source = [&](std::string* lines) -> absl::StatusOr<bool> {
    if (sent) return false;
    sent = true;
    *lines = "1\t1.5\n2\t2.5\n3\t3.5\n";
    return true;
  };
  store::DatasetStore datasets(db);
  ASSIGN_OR_RETURN(store::CreatedDataset created, datasets.Create(schema, source));
  store::BudgetLedger ledger(db);
  ASSIGN_OR_RETURN(int64_t total,
                   query::EpsilonToUnits(kBudgetEpsilon, "epsilon", query::kMaxEpsilonBudget));
  RETURN_IF_ERROR(ledger.Set(created.schema.population_id, total, 0).status());
  store::PrincipalStore principals(db);
  RETURN_IF_ERROR(principals.Grant(analyst.name, name));
  return created.schema.population_id;  // the ledger's key
}

// Appends `n` allocations to dataset `ds` as one COPY (a valid hash chain from genesis, so
// `audit verify` still passes) and moves the ledger head and spent budget to match: what n
// earlier Debit calls would have left, in seconds instead of minutes.
absl::Status PrefillHistory(const std::string& url, const std::string& tmp_dir, int64_t ds,
                            const store::Principal& analyst, int64_t n) {
  const std::string path = absl::StrCat(tmp_dir, "/history.copy");
  std::string prev = store::GenesisHash();
  int64_t spent = 0;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    std::string line;
    for (int64_t i = 1; i <= n; ++i) {
      store::Allocation a = MakeAllocation(absl::StrCat("prefill-", i), analyst);
      a.seq = i;
      a.prev_hash = prev;
      a.hash = store::ChainHash(prev, ds, a);
      spent += a.epsilon_units;
      // COPY text format; bytea in hex with the backslash escaped; doubles are short decimals,
      // so they read back exactly.
      line = absl::StrCat(
          ds, "\t", a.seq, "\t", a.request_id, "\t", a.principal_id, "\t", a.analyst, "\t",
          a.fingerprint, "\t", a.aggregate, "\t", a.column, "\t", a.mechanism, "\t",
          a.epsilon_units, "\t", a.delta_units, "\t", store::ExactDouble(a.sensitivity), "\t",
          store::ExactDouble(a.noise_scale), "\t", store::ExactDouble(a.count_noise_scale), "\t",
          store::ExactDouble(a.value), "\t", store::ExactDouble(a.confidence), "\t",
          store::ExactDouble(a.ci_lower), "\t", store::ExactDouble(a.ci_upper), "\t",
          store::ExactDouble(*a.clamp_lower), "\t", store::ExactDouble(*a.clamp_upper), "\t",
          a.max_contributions, "\t\\\\x", ToHex(a.prev_hash), "\t\\\\x", ToHex(a.hash), "\t",
          a.events, "\n");
      out << line;
      prev = a.hash;
    }
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  RETURN_IF_ERROR(Psql(
      url,
      absl::StrCat(
          "\\copy audit (population_id, seq, request_id, principal_id, analyst, fingerprint, aggregate, "
          "column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, "
          "\"value\", confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, "
          "hash, events) FROM '",
          path, "'")));
  RETURN_IF_ERROR(
      Psql(url, absl::StrCat("UPDATE ledgers SET audit_head_seq = ", n, ", audit_head_hash = '\\x",
                             ToHex(prev), "', epsilon_spent_units = ", spent,
                             " WHERE population_id = ", ds)));
  unlink(path.c_str());
  return Psql(url, "ANALYZE audit; ANALYZE ledgers; CHECKPOINT");
}

// One fixed-duration run of `clients` threads calling BudgetLedger::Debit on dataset `ds`.
Cell RunDpq(store::Database* db, int64_t ds, const store::Principal& analyst, int clients,
            double seconds, const std::string& tag) {
  Cell cell;
  cell.method = "dpq BudgetLedger::Debit";
  cell.clients = clients;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::vector<double>> latencies_ms(clients);
  std::vector<int64_t> errors(clients, 0);
  std::vector<std::string> first_error(clients);
  Clock::time_point start, deadline;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      store::BudgetLedger ledger(db);
      // One untimed debit first: opens this thread's pooled connection.
      (void)ledger.Debit(ds, MakeAllocation(absl::StrCat(tag, "-warm-", t), analyst));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      latencies_ms[t].reserve(1 << 14);
      for (int64_t i = 0;; ++i) {
        const Clock::time_point t0 = Clock::now();
        if (t0 >= deadline) break;
        auto r = ledger.Debit(ds, MakeAllocation(absl::StrCat(tag, "-", t, "-", i), analyst));
        const Clock::time_point t1 = Clock::now();
        if (r.ok() && !r->replayed) {
          latencies_ms[t].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        } else {
          if (errors[t]++ == 0) first_error[t] = r.ok() ? "replayed" : r.status().ToString();
        }
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const store::DebitBatcher::Stats stats0 = store::DebitBatcher::Shared().stats();
  start = Clock::now();
  deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  go.store(true);
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const store::DebitBatcher::Stats stats1 = store::DebitBatcher::Shared().stats();
  if (stats1.groups > stats0.groups) {
    cell.debits_per_xact = static_cast<double>(stats1.debits - stats0.debits) /
                           static_cast<double>(stats1.groups - stats0.groups);
  }
  std::vector<double> all;
  for (int t = 0; t < clients; ++t) {
    all.insert(all.end(), latencies_ms[t].begin(), latencies_ms[t].end());
    cell.errors += errors[t];
    if (cell.first_error.empty()) cell.first_error = first_error[t];
  }
  cell.done = static_cast<int64_t>(all.size());
  cell.per_second = static_cast<double>(cell.done) / elapsed;
  cell.p50_ms = Percentile(all, 0.50);
  cell.p99_ms = Percentile(all, 0.99);
  return cell;
}

// Latencies (ms) of the successful transactions in pgbench's per-transaction logs
// (<prefix>.<pid>[.<thread>]: "client_id transaction_no time_us script_no epoch epoch_us").
std::vector<double> ReadPgbenchLogs(const std::string& dir) {
  std::vector<double> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name).rfind("pgbench_log", 0) != 0) continue;
    const std::string path = absl::StrCat(dir, "/", e->d_name);
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      double us;
      if (f.size() >= 3 && absl::SimpleAtod(f[2], &us)) out.push_back(us / 1000.0);
    }
    unlink(path.c_str());
  }
  closedir(d);
  return out;
}

absl::StatusOr<Cell> RunPgbench(const std::string& url, const std::string& log_dir,
                                const std::string& script, const std::string& method, int64_t ds,
                                int64_t principal_id, int clients, double seconds) {
  Cell cell;
  cell.method = method;
  cell.clients = clients;
  const std::vector<std::string> argv = {absl::StrCat(kPgBin, "/pgbench"),
                                         "-n",
                                         "-M",
                                         "prepared",
                                         "-f",
                                         absl::StrCat(DPQ_BENCH_PGBENCH_DIR, "/", script),
                                         "-c",
                                         absl::StrCat(clients),
                                         "-j",
                                         absl::StrCat(std::min(clients, 2)),
                                         "-T",
                                         absl::StrCat(static_cast<int>(seconds + 0.5)),
                                         "-D",
                                         absl::StrCat("ds=", ds),
                                         "-D",
                                         absl::StrCat("principal=", principal_id),
                                         "-l",
                                         absl::StrCat("--log-prefix=", log_dir, "/pgbench_log"),
                                         url};
  ASSIGN_OR_RETURN(store::ProcessResult r, store::RunProcess(argv, absl::nullopt, {}));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("pgbench exited ", r.exit_code, ":\n", r.output));
  }
  for (absl::string_view line : absl::StrSplit(r.output, '\n')) {
    if (absl::ConsumePrefix(&line, "tps = ")) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      (void)absl::SimpleAtod(f[0], &cell.per_second);
    } else if (absl::ConsumePrefix(&line, "number of failed transactions: ")) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      (void)absl::SimpleAtoi(f[0], &cell.errors);
    }
  }
  if (cell.per_second == 0)
    return absl::InternalError(absl::StrCat("no tps in pgbench output:\n", r.output));
  std::vector<double> lat = ReadPgbenchLogs(log_dir);
  cell.done = static_cast<int64_t>(lat.size());
  cell.p50_ms = Percentile(lat, 0.50);
  cell.p99_ms = Percentile(lat, 0.99);
  return cell;
}

// The metrics scrape's per-analyst spend on the prefilled history. Baseline: a fresh
// store::SpendTally, whose first refresh reads every audit row (what every scrape cost before,
// when dpqd ran a GROUP BY over the whole audit table); against it, a long-lived tally whose later
// refreshes read only the rows added since (10 debits land between them). Medians of 5, interleaved.
absl::Status MeasureScrape(store::Database* db, store::BudgetLedger* ledger, int64_t dataset,
                           const store::Principal& analyst) {
  const auto time_ms = [](const std::function<absl::Status()>& f) -> absl::StatusOr<double> {
    const Clock::time_point t = Clock::now();
    RETURN_IF_ERROR(f());
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  store::SpendTally tally(db);
  RETURN_IF_ERROR(tally.Refresh().status());
  std::vector<double> full, incremental;
  int64_t next_id = 0;
  for (int rep = 0; rep < 5; ++rep) {
    ASSIGN_OR_RETURN(double f, time_ms([&] { return store::SpendTally(db).Refresh().status(); }));
    full.push_back(f);
    for (int i = 0; i < 10; ++i) {
      RETURN_IF_ERROR(
          ledger->Debit(dataset, MakeAllocation(absl::StrCat("scrape-", next_id++), analyst))
              .status());
    }
    ASSIGN_OR_RETURN(double t, time_ms([&] { return tally.Refresh().status(); }));
    incremental.push_back(t);
  }
  std::sort(full.begin(), full.end());
  std::sort(incremental.begin(), incremental.end());
  std::printf(
      "metrics scrape (spend per analyst, %lld audit rows): whole history %.2f ms, "
      "incremental (10 new rows) %.2f ms: ratio %.4f\n",
      static_cast<long long>(tally.rows_folded()), full[2], incremental[2],
      incremental[2] / full[2]);
  return absl::OkStatus();
}

struct HistoryResult {
  std::string mode;
  int64_t samples = 0;
  double p50_empty = 0, p50_full = 0, mean_empty = 0, mean_full = 0;
};

// Alternates single debits on `empty_ds` and `full_ds` for `seconds` (so drift, checkpoints and
// fsync jitter hit both alike) and compares the latency distributions.
HistoryResult MeasureHistory(store::Database* db, int64_t empty_ds, int64_t full_ds,
                             const store::Principal& analyst, double seconds,
                             const std::string& mode) {
  store::BudgetLedger ledger(db);
  std::vector<double> empty_ms, full_ms;
  for (int i = 0; i < 50; ++i) {  // warm-up: connection, plans, index pages
    (void)ledger.Debit(empty_ds, MakeAllocation(absl::StrCat(mode, "-warm-e-", i), analyst));
    (void)ledger.Debit(full_ds, MakeAllocation(absl::StrCat(mode, "-warm-f-", i), analyst));
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(seconds));
  for (int64_t i = 0; Clock::now() < deadline; ++i) {
    for (int which = 0; which < 2; ++which) {
      // Swap the order every other pair so neither dataset always goes first.
      const bool full = (which == 0) == (i % 2 == 0);
      const Clock::time_point t0 = Clock::now();
      auto r = ledger.Debit(full ? full_ds : empty_ds,
                            MakeAllocation(absl::StrCat(mode, full ? "-f-" : "-e-", i), analyst));
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!r.ok()) {
        std::fprintf(stderr, "history debit failed: %s\n", r.status().ToString().c_str());
        continue;
      }
      (full ? full_ms : empty_ms).push_back(ms);
    }
  }
  HistoryResult h;
  h.mode = mode;
  h.samples = static_cast<int64_t>(std::min(empty_ms.size(), full_ms.size()));
  h.p50_empty = Percentile(empty_ms, 0.5);
  h.p50_full = Percentile(full_ms, 0.5);
  h.mean_empty = Mean(empty_ms);
  h.mean_full = Mean(full_ms);
  return h;
}

absl::Status ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: ledger_debit_bench [--seconds=5] [--clients=1,8,32] [--history=100000] "
          "[--history-seconds=4]\n");
      std::exit(0);
    }
    if (absl::ConsumePrefix(&arg, "--seconds=")) {
      if (!absl::SimpleAtod(arg, &o->seconds) || o->seconds < 1)
        return absl::InvalidArgumentError("--seconds");
    } else if (absl::ConsumePrefix(&arg, "--history-seconds=")) {
      if (!absl::SimpleAtod(arg, &o->history_seconds) || o->history_seconds <= 0) {
        return absl::InvalidArgumentError("--history-seconds");
      }
    } else if (absl::ConsumePrefix(&arg, "--history=")) {
      if (!absl::SimpleAtoi(arg, &o->history) || o->history < 0)
        return absl::InvalidArgumentError("--history");
    } else if (absl::ConsumePrefix(&arg, "--clients=")) {
      o->clients.clear();
      for (absl::string_view c : absl::StrSplit(arg, ',')) {
        int n;
        if (!absl::SimpleAtoi(c, &n) || n < 1 || n > 64)
          return absl::InvalidArgumentError("--clients (1..64)");
        o->clients.push_back(n);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument ", arg));
    }
  }
  return absl::OkStatus();
}

void PrintCell(const Cell& c) {
  std::printf(
      "%-28s %7d %10.0f %9.2f %9.2f %8lld %6lld %9.0f %12.2f %11.2f\n", c.method.c_str(), c.clients,
      c.per_second, c.p50_ms, c.p99_ms, static_cast<long long>(c.done),
      static_cast<long long>(c.errors), c.fsync_per_second,
      c.wal_syncs > 0 ? static_cast<double>(c.done) / static_cast<double>(c.wal_syncs) : 0.0,
      c.debits_per_xact);
  if (!c.first_error.empty()) std::printf("    first error: %s\n", c.first_error.c_str());
  std::fflush(stdout);
}

absl::Status Run(const Options& o) {
  const Clock::time_point begin = Clock::now();
  std::printf("machine at start: %s\n", MachineConditions().c_str());
  testing::TestPostgresOptions pg_options;
  // Durable like a deployment (TestPostgres defaults to fsync off; these later settings win), room
  // for 32 pgbench clients plus dpq's pool, and PostgreSQL's default shared_buffers.
  pg_options.settings = {{"fsync", "on"},
                         {"synchronous_commit", "on"},
                         {"full_page_writes", "on"},
                         {"max_connections", "100"},
                         {"shared_buffers", "128MB"},
                         {"max_wal_size", "1GB"}};
  ASSIGN_OR_RETURN(std::unique_ptr<testing::TestPostgres> pg,
                   testing::TestPostgres::Start(pg_options));
  const std::string url = pg->connection_url();
  ASSIGN_OR_RETURN(
      std::string settings,
      pg->Query(
          "SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY name) FROM pg_settings "
          "WHERE name IN ('fsync','synchronous_commit','full_page_writes','wal_sync_method',"
          "'shared_buffers','max_connections','commit_delay','server_version')"));
  std::printf("cluster: %s (data dir %s)\n", settings.c_str(), pg->data_dir().c_str());
  RETURN_IF_ERROR(store::ApplyMigrations(url, DPQ_BENCH_MIGRATIONS_DIR).status());
  const int pool = *std::max_element(o.clients.begin(), o.clients.end());
  ASSIGN_OR_RETURN(std::unique_ptr<store::Database> db, store::Database::Open(url, pool));
  store::PrincipalStore principals(db.get());
  ASSIGN_OR_RETURN(
      store::Principal analyst,
      principals.Create("bench_analyst", store::Role::kAnalyst, Sha256("bench-token")));
  ASSIGN_OR_RETURN(int64_t ds_multi, CreateHotDataset(db.get(), "hot_pgbench_multi", analyst));
  ASSIGN_OR_RETURN(int64_t ds_single, CreateHotDataset(db.get(), "hot_pgbench_single", analyst));
  ASSIGN_OR_RETURN(int64_t ds_dpq, CreateHotDataset(db.get(), "hot_dpq", analyst));
  ASSIGN_OR_RETURN(int64_t ds_empty, CreateHotDataset(db.get(), "history_none", analyst));
  ASSIGN_OR_RETURN(int64_t ds_full, CreateHotDataset(db.get(), "history_full", analyst));

  // 1. History: first, while the audit table holds nothing but the prefilled rows.
  std::printf(
      "\n== cost of one debit: no history vs %lld prior allocations (1 client, interleaved) ==\n",
      static_cast<long long>(o.history));
  const Clock::time_point t_fill = Clock::now();
  RETURN_IF_ERROR(PrefillHistory(url, pg->data_dir(), ds_full, analyst, o.history));
  std::printf("prefilled %lld chained audit rows with COPY in %.1f s\n",
              static_cast<long long>(o.history),
              std::chrono::duration<double>(Clock::now() - t_fill).count());
  const FsyncProbe before = ProbeFsync(pg->data_dir(), 1.0);
  std::printf("storage: fdatasync of 8 kB: %.0f/s, p50 %.2f ms\n", before.per_second,
              before.p50_ms);
  std::vector<HistoryResult> history;
  history.push_back(
      MeasureHistory(db.get(), ds_empty, ds_full, analyst, o.history_seconds, "durable"));
  {
    // The same with the commit's WAL flush taken out (this session only), so the part of a debit
    // that could depend on history (lookups, index inserts) is not hidden behind the fsync.
    ASSIGN_OR_RETURN(
        std::unique_ptr<store::Database> async_db,
        store::Database::Open(absl::StrCat(url, "&options=-c%20synchronous_commit%3Doff"), 1));
    history.push_back(MeasureHistory(async_db.get(), ds_empty, ds_full, analyst, o.history_seconds,
                                     "no-fsync (synchronous_commit=off)"));
  }
  for (const HistoryResult& h : history) {
    std::printf(
        "%-34s pairs=%6lld  p50 %.3f ms vs %.3f ms (ratio %.3f)  mean %.3f vs %.3f ms (ratio %.3f)\n",
        h.mode.c_str(), static_cast<long long>(h.samples), h.p50_empty, h.p50_full,
        h.p50_full / h.p50_empty, h.mean_empty, h.mean_full, h.mean_full / h.mean_empty);
  }
  store::BudgetLedger ledger(db.get());
  const Clock::time_point t_verify = Clock::now();
  ASSIGN_OR_RETURN(store::BudgetLedger::Verification v_full, ledger.Verify(ds_full));
  std::printf("audit verify of the %lld-row dataset: ok=%d (%.2f s)\n",
              static_cast<long long>(v_full.entries), v_full.ok,
              std::chrono::duration<double>(Clock::now() - t_verify).count());
  if (!v_full.ok) std::printf("    reason: %s\n", v_full.reason.c_str());
  RETURN_IF_ERROR(MeasureScrape(db.get(), &ledger, ds_full, analyst));

  // 2. Throughput on one hot dataset per method, the three methods interleaved per client count
  //    and each run after a CHECKPOINT (equal full-page-write costs).
  std::printf("\n== debits/s on one hot dataset, %.0f s per run (fsync on) ==\n", o.seconds);
  std::printf("%-28s %7s %10s %9s %9s %8s %6s %9s %12s %11s\n", "method", "clients", "debits/s",
              "p50 ms", "p99 ms", "done", "errors", "fsync/s", "debits/flush", "debits/xact");
  const std::string log_dir = absl::StrCat(pg->data_dir(), "/pgbench-logs");
  if (mkdir(log_dir.c_str(), 0700) != 0)
    return absl::InternalError(absl::StrCat("mkdir ", log_dir));
  std::vector<Cell> cells;
  for (int clients : o.clients) {
    RETURN_IF_ERROR(Psql(url, "CHECKPOINT"));
    double fsync_rate = ProbeFsync(pg->data_dir(), kProbeSeconds).per_second;
    ASSIGN_OR_RETURN(int64_t syncs0, WalSyncs(url));
    ASSIGN_OR_RETURN(
        Cell multi, RunPgbench(url, log_dir, "debit_multi_statement.sql", "pgbench multi-statement",
                               ds_multi, analyst.id, clients, o.seconds));
    multi.fsync_per_second = fsync_rate;
    ASSIGN_OR_RETURN(int64_t syncs1, WalSyncs(url));
    multi.wal_syncs = syncs1 - syncs0;
    PrintCell(multi);
    cells.push_back(multi);
    RETURN_IF_ERROR(Psql(url, "CHECKPOINT"));
    fsync_rate = ProbeFsync(pg->data_dir(), kProbeSeconds).per_second;
    ASSIGN_OR_RETURN(syncs0, WalSyncs(url));
    ASSIGN_OR_RETURN(Cell single, RunPgbench(url, log_dir, "debit_single_statement.sql",
                                             "pgbench single-statement", ds_single, analyst.id,
                                             clients, o.seconds));
    single.fsync_per_second = fsync_rate;
    ASSIGN_OR_RETURN(syncs1, WalSyncs(url));
    single.wal_syncs = syncs1 - syncs0;
    PrintCell(single);
    cells.push_back(single);
    RETURN_IF_ERROR(Psql(url, "CHECKPOINT"));
    fsync_rate = ProbeFsync(pg->data_dir(), kProbeSeconds).per_second;
    ASSIGN_OR_RETURN(syncs0, WalSyncs(url));
    Cell dpq_cell;
    {
      // A pool of its own, closed after the run (like pgbench's connections).
      ASSIGN_OR_RETURN(std::unique_ptr<store::Database> run_db,
                       store::Database::Open(url, clients));
      dpq_cell =
          RunDpq(run_db.get(), ds_dpq, analyst, clients, o.seconds, absl::StrCat("c", clients));
    }
    dpq_cell.fsync_per_second = fsync_rate;
    ASSIGN_OR_RETURN(syncs1, WalSyncs(url));
    dpq_cell.wal_syncs = syncs1 - syncs0;
    PrintCell(dpq_cell);
    cells.push_back(dpq_cell);
  }
  const Clock::time_point t_verify2 = Clock::now();
  ASSIGN_OR_RETURN(store::BudgetLedger::Verification v_dpq, ledger.Verify(ds_dpq));
  std::printf(
      "audit verify of hot_dpq: ok=%d entries=%lld, spent recomputed == ledger: %d (%.2f s)\n",
      v_dpq.ok, static_cast<long long>(v_dpq.entries),
      v_dpq.epsilon_spent_recomputed_units == v_dpq.epsilon_spent_ledger_units,
      std::chrono::duration<double>(Clock::now() - t_verify2).count());

  // 3. Summary and the targets.
  auto find = [&](const std::string& prefix, int clients) -> const Cell* {
    for (const Cell& c : cells) {
      if (c.clients == clients && c.method.rfind(prefix, 0) == 0) return &c;
    }
    return nullptr;
  };
  std::printf("\n== summary: debits/s ==\n%-8s %16s %17s %10s %22s\n", "clients", "pgbench multi",
              "pgbench single", "dpq", "dpq / pgbench single");
  for (int clients : o.clients) {
    const Cell* m = find("pgbench multi", clients);
    const Cell* s = find("pgbench single", clients);
    const Cell* d = find("dpq", clients);
    std::printf("%-8d %16.0f %17.0f %10.0f %22.2f\n", clients, m->per_second, s->per_second,
                d->per_second, d->per_second / s->per_second);
  }
  const int lo = o.clients.front(), hi = o.clients.back();
  const Cell* d_lo = find("dpq", lo);
  const Cell* d_hi = find("dpq", hi);
  const Cell* s_hi = find("pgbench single", hi);
  const double ratio = history[0].p50_full / history[0].p50_empty;
  auto verdict = [](bool met) { return met ? "MET    " : "NOT MET"; };
  std::printf("\n== targets ==\n");
  std::printf("[%s] %d clients: dpq %.0f/s >= 2 x pgbench single-statement (2 x %.0f = %.0f/s)\n",
              verdict(d_hi->per_second >= 2 * s_hi->per_second), hi, d_hi->per_second,
              s_hi->per_second, 2 * s_hi->per_second);
  std::printf("[%s] no collapse: dpq %d clients %.0f/s >= %d client(s) %.0f/s\n",
              verdict(d_hi->per_second >= d_lo->per_second), hi, d_hi->per_second, lo,
              d_lo->per_second);
  std::printf(
      "[%s] history: p50 debit after %lld allocations / after 0 = %.3f <= 1.1 (durable; no-fsync %.3f)\n",
      verdict(ratio <= 1.1), static_cast<long long>(o.history), ratio,
      history[1].p50_full / history[1].p50_empty);
  const FsyncProbe after = ProbeFsync(pg->data_dir(), 1.0);
  std::printf("\nstorage at end: fdatasync of 8 kB: %.0f/s, p50 %.2f ms\n", after.per_second,
              after.p50_ms);
  std::printf("machine at end: %s\ntotal %.0f s\n", MachineConditions().c_str(),
              std::chrono::duration<double>(Clock::now() - begin).count());
  return absl::OkStatus();
}

}  // namespace
}  // namespace dpq

int main(int argc, char** argv) {
  dpq::Options options;
  absl::Status s = dpq::ParseOptions(argc, argv, &options);
  if (s.ok()) s = dpq::Run(options);
  if (!s.ok()) {
    std::fprintf(stderr, "ledger_debit_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
