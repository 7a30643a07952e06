// dpq's Prometheus metrics (DESIGN.md §8) and the status page, served together on the metrics port.
// Four kinds of series:
//  * per-process counters of RPC outcomes and latency (dpq_queries_total, dpq_query_duration_seconds,
//    dpq_budget_rejections_total, dpq_grpc_server_handled_total{grpc_service,grpc_method,grpc_code},
//    dpq_debit_duration_seconds, dpq_ldp_reports_total{collection,outcome}), kept in a
//    prometheus-cpp registry, and dpq_build_info;
//  * ledger figures (dpq_budget_remaining, dpq_budget_limit, dpq_budget_accountant_info,
//    dpq_epsilon_spent_total, dpq_delta_spent_total, dpq_epsilon_spent_recent{window},
//    dpq_audit_rows_total, dpq_analyst_{epsilon,delta}_cap and their _remaining), labelled by
//    population (one ledger per population), read from the database at scrape time through a
//    snapshot function, so every replica reports the same truth; a population whose budget is per
//    time block has no dpq_budget_* series but dpq_block_budget_{limit,spent,remaining}{block,
//    param} and dpq_block_start_timestamp_seconds{block} for its current and previous block;
//  * the last audit verification this process ran per population (dpq_audit_verify_ok,
//    dpq_audit_verify_timestamp_seconds), from the VerifyAudit RPC and dpqd's periodic check,
//    and the rows those verifications read (dpq_audit_verify_rows_total). Every population the
//    ledger snapshot lists has both series from the first scrape on: one this process has not
//    verified yet reads timestamp 0 and ok 0, so an alert on the age of the last verification
//    fires rather than staying silent on an absent series (alerts.yml: DpqAuditVerifyStale);
//  * this process's database connection pool (dpq_db_connections_opened_total,
//    dpq_db_connections_closed_total{reason}, dpq_db_connect_failures_total,
//    dpq_db_connections{state}), read from memory at scrape time, so they are there even when the
//    database is not: a restart or a run of errors shows as sessions closed and opened again; and
//    the debit groups written in one statement on rows this process remembered, or that found a
//    row changed (dpq_debit_one_trip_total{outcome}): a steady rate of `changed` means another
//    writer (a second dpqd) debits the same population;
//  * the shard servers' health as dpqd's last background probe found it (dpq_shard_up{shard},
//    dpq_shard_probe_seconds{shard}), set by SetShards: only registered shards, by name; and the
//    wall time of each shard's part of the scans dpqd sends to the shards itself
//    (dpq_shard_scan_seconds{shard}, store/shard_fan_out.h).
//
// HTTP (Serve): GET /metrics is the text exposition; GET / and /status is the status page
// (status_page.h), rendered from the same collection as a scrape, so it shows nothing /metrics
// does not. No authentication: see docs/threat-model.md ("The metrics port").
#ifndef DPQ_SERVER_METRICS_METRICS_H_
#define DPQ_SERVER_METRICS_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
class Histogram;
struct MetricFamily;
}  // namespace prometheus

namespace dpq::metrics {

// The windows of dpq_epsilon_spent_recent, in seconds, and their label values.
struct RecentWindow {
  int64_t seconds;
  const char* label;
};
inline constexpr RecentWindow kRecentWindows[] = {
    {3600, "1h"}, {6 * 3600, "6h"}, {86400, "1d"}, {7 * 86400, "7d"}, {30 * 86400, "30d"}};
inline constexpr int kRecentWindowCount = sizeof(kRecentWindows) / sizeof(kRecentWindows[0]);

struct LedgerFigures {
  struct Budget {
    std::string population;
    std::string accountant = "basic";
    double epsilon_total = 0, epsilon_remaining = 0, delta_total = 0, delta_remaining = 0;
  };
  struct Spent {
    std::string population, analyst;
    double epsilon = 0, delta = 0;
  };
  // Per population: audit rows so far, and the nominal epsilon charged in each of kRecentWindows.
  struct History {
    std::string population;
    int64_t audit_rows = 0;
    double epsilon_recent[kRecentWindowCount] = {};
  };
  // A grant with a cap on epsilon, delta or both (grants.*_cap_units) and the grant's spend.
  struct Cap {
    std::string population, analyst;
    bool has_epsilon_cap = false;
    double epsilon_cap = 0, epsilon_spent = 0;
    bool has_delta_cap = false;
    double delta_cap = 0, delta_spent = 0;
  };
  // One time block of a population whose budget is per block (block composition; such a
  // population has no Budget): its current block (the one holding today, UTC) or the one before.
  struct Block {
    std::string population;
    std::string block;          // "current" or "previous"
    int64_t start_seconds = 0;  // the block's first day at 00:00 UTC, Unix seconds
    double epsilon_limit = 0, epsilon_spent = 0, epsilon_remaining = 0;
    double delta_limit = 0, delta_spent = 0, delta_remaining = 0;
  };
  std::vector<Budget> budgets;
  std::vector<Block> blocks;  // at most two per per-block population: bounded label values
  std::vector<Spent> spent;
  std::vector<History> history;
  std::vector<Cap> caps;
};
using LedgerSnapshot = std::function<absl::StatusOr<LedgerFigures>()>;

// Mirrors store::PoolStats and store::ScanRouteStats (this layer knows nothing of the store;
// dpqd's main copies the fields).
struct PoolFigures {
  int64_t opened = 0, connect_failures = 0, closed_after_error = 0, closed_by_server = 0;
  int in_use = 0, idle = 0;
  int64_t scans_on_primary = 0, scans_on_standby = 0;
  bool has_standby = false, standby_up = false;  // dpq_read_standby_* only with a standby
  int64_t standby_fallbacks_lagging = 0, standby_fallbacks_unavailable = 0;
  // Debit groups written by one statement on remembered rows, and groups whose statement found a
  // row changed (store::KnownLedgers::Stats).
  int64_t debits_one_trip = 0, debits_rows_changed = 0;
};
using PoolSnapshot = std::function<PoolFigures()>;

// One shard server's last probe through the coordinator (store::ShardProbe, copied by dpqd).
struct ShardFigures {
  std::string shard;
  bool up = false;
  double probe_seconds = 0;
};

struct BuildInfo {
  std::string version, git_sha;
};

class Metrics {
 public:
  // `pool` may be empty: then no dpq_db_* series are exported.
  explicit Metrics(LedgerSnapshot snapshot, PoolSnapshot pool = nullptr, BuildInfo build = {});
  ~Metrics();

  // outcome: "ok", "replayed", or the lower-case gRPC code name ("resource_exhausted", ...).
  // Callers pass dataset "" when the request named no existing dataset, to bound label cardinality.
  void RecordQuery(absl::string_view dataset, absl::string_view aggregate,
                   absl::string_view outcome, double seconds);

  // One finished gRPC call. `full_method` is the gRPC path "/package.Service/Method"; anything
  // else is counted as service "unknown", method "unknown" (bounded cardinality). `code` is the
  // upper-case canonical code name ("OK", "RESOURCE_EXHAUSTED").
  void RecordRpc(absl::string_view full_method, absl::string_view code);

  // Wall time of one ledger debit as its caller saw it (group-commit wait included).
  void RecordDebit(double seconds);

  // The result of an audit verification of `population`'s ledger finished at `unix_seconds`.
  void RecordAuditVerify(absl::string_view population, bool ok, double unix_seconds);

  // `rows` audit rows read by one verification of `population`'s chain; population "" for the
  // admin log's chain (no population is named "": names match ^[a-z_][a-z0-9_]{0,62}$).
  void RecordAuditVerifyRows(absl::string_view population, int64_t rows);

  // One local-DP report submission (dpq_ldp_reports_total): outcome "accepted" or the lower-case
  // code of the refusal. Callers pass collection "" unless the collection exists (bounded labels).
  void RecordLdpReport(absl::string_view collection, absl::string_view outcome);

  // A scan of `dataset` whose float8 statement raised a data exception and that the numeric
  // fallback answered (dpq_scan_data_errors_total; an alert fires on any increase).
  void RecordScanDataError(absl::string_view dataset);

  // One shard's part of a fan-out scan took `seconds` (dpq_shard_scan_seconds{shard}). Labels are
  // registered shard names only, so the series stay few.
  void RecordShardScan(absl::string_view shard, double seconds);

  // The shards and their last probe, replacing the previous set (a removed shard's series go).
  void SetShards(std::vector<ShardFigures> shards);

  // Everything one scrape shows, in exposition order (registry, ledger, pool). Reads the ledger
  // snapshot once; a population it lists that this process has not verified gets its
  // verification series at 0 first.
  std::vector<prometheus::MetricFamily> Collect() const;

  // Serves /metrics and the status page (/ and /status) on `listen` ("host:port").
  // UNAVAILABLE if the port cannot be bound.
  absl::Status Serve(const std::string& listen);
  // Stops serving and waits for any request in progress: after it, no scrape reads the ledger or
  // the pool any more, so the database may be closed (dpqd's shutdown order).
  void StopServing();

 private:
  class PoolCollector;
  // Creates dpq_audit_verify_ok and _timestamp_seconds at 0 for each population of `figures`
  // without them; a recorded verification keeps its values.
  void ExpectAuditVerifications(const LedgerFigures& figures) const;
  class HttpServer;
  std::shared_ptr<prometheus::Registry> registry_;
  LedgerSnapshot ledger_;
  std::shared_ptr<PoolCollector> pool_;  // null without a pool snapshot
  prometheus::Family<prometheus::Counter>* queries_;
  prometheus::Family<prometheus::Counter>* rejections_;
  prometheus::Family<prometheus::Histogram>* duration_;
  prometheus::Family<prometheus::Counter>* rpcs_;
  prometheus::Family<prometheus::Histogram>* debit_duration_;
  prometheus::Family<prometheus::Gauge>* verify_ok_;
  prometheus::Family<prometheus::Gauge>* verify_time_;
  prometheus::Family<prometheus::Counter>* ldp_reports_ = nullptr;
  prometheus::Family<prometheus::Counter>* scan_data_errors_ = nullptr;
  prometheus::Family<prometheus::Histogram>* shard_scan_duration_ = nullptr;
  prometheus::Family<prometheus::Counter>* verify_rows_ = nullptr;
  std::unique_ptr<HttpServer> http_;
  mutable absl::Mutex shards_mu_;
  std::vector<ShardFigures> shards_ ABSL_GUARDED_BY(shards_mu_);
};

}  // namespace dpq::metrics

#endif  // DPQ_SERVER_METRICS_METRICS_H_
