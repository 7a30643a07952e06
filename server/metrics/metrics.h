// dpq's Prometheus metrics (DESIGN.md §8). Three kinds:
//  * per-process counters of RPC outcomes and latency (dpq_queries_total, dpq_query_duration_seconds,
//    dpq_budget_rejections_total), kept in a prometheus-cpp registry;
//  * ledger figures (dpq_budget_remaining, dpq_budget_limit, dpq_epsilon_spent_total), read from the
//    database at scrape time through a snapshot function, so every replica reports the same truth;
//  * this process's database connection pool (dpq_db_connections_opened_total,
//    dpq_db_connections_closed_total{reason}, dpq_db_connect_failures_total,
//    dpq_db_connections{state}), read from memory at scrape time, so they are there even when the
//    database is not: a restart or a run of errors shows as sessions closed and opened again.
#ifndef DPQ_SERVER_METRICS_METRICS_H_
#define DPQ_SERVER_METRICS_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prometheus {
class Registry;
class Exposer;
template <typename T> class Family;
class Counter;
class Histogram;
}  // namespace prometheus

namespace dpq::metrics {

struct LedgerFigures {
  struct Budget {
    std::string dataset;
    double epsilon_total = 0, epsilon_remaining = 0, delta_total = 0, delta_remaining = 0;
  };
  struct Spent {
    std::string dataset, analyst;
    double epsilon = 0, delta = 0;
  };
  std::vector<Budget> budgets;
  std::vector<Spent> spent;
};
using LedgerSnapshot = std::function<absl::StatusOr<LedgerFigures>()>;

// Mirrors store::PoolStats (this layer knows nothing of the store; dpqd's main copies the fields).
struct PoolFigures {
  int64_t opened = 0, connect_failures = 0, closed_after_error = 0, closed_by_server = 0;
  int in_use = 0, idle = 0;
};
using PoolSnapshot = std::function<PoolFigures()>;

class Metrics {
 public:
  // `pool` may be empty: then no dpq_db_* series are exported.
  explicit Metrics(LedgerSnapshot snapshot, PoolSnapshot pool = nullptr);
  ~Metrics();

  // outcome: "ok", "replayed", or the lower-case gRPC code name ("resource_exhausted", ...).
  // Callers pass dataset "" when the request named no existing dataset, to bound label cardinality.
  void RecordQuery(absl::string_view dataset, absl::string_view aggregate, absl::string_view outcome,
                   double seconds);

  // Serves /metrics on `listen` ("host:port"). UNAVAILABLE if the port cannot be bound.
  absl::Status Serve(const std::string& listen);
  // Stops serving /metrics and waits for any scrape in progress: after it, no scrape reads the
  // ledger or the pool any more, so the database may be closed (dpqd's shutdown order).
  void StopServing();

 private:
  class LedgerCollector;
  class PoolCollector;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<LedgerCollector> ledger_;
  std::shared_ptr<PoolCollector> pool_;  // null without a pool snapshot
  prometheus::Family<prometheus::Counter>* queries_;
  prometheus::Family<prometheus::Counter>* rejections_;
  prometheus::Family<prometheus::Histogram>* duration_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace dpq::metrics

#endif  // DPQ_SERVER_METRICS_METRICS_H_
