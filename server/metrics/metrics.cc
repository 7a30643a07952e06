#include "server/metrics/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "absl/strings/str_cat.h"
#include "server/base/logging.h"

namespace dpq::metrics {
namespace {

prometheus::ClientMetric Sample(std::vector<prometheus::ClientMetric::Label> labels, double value,
                                prometheus::MetricType type) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;
}

}  // namespace

class Metrics::LedgerCollector : public prometheus::Collectable {
 public:
  explicit LedgerCollector(LedgerSnapshot snapshot) : snapshot_(std::move(snapshot)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::StatusOr<LedgerFigures> figures = snapshot_();
    prometheus::MetricFamily up{"dpq_ledger_scrape_ok",
                                "1 if the ledger figures were read from the database", prometheus::MetricType::Gauge, {}};
    up.metric.push_back(Sample({}, figures.ok() ? 1 : 0, prometheus::MetricType::Gauge));
    if (!figures.ok()) {
      LogWarning(absl::StrCat("metrics: cannot read ledger figures: ", figures.status().ToString()));
      return {up};
    }
    prometheus::MetricFamily remaining{"dpq_budget_remaining",
                                       "Privacy budget left per dataset (param: epsilon or delta)",
                                       prometheus::MetricType::Gauge, {}};
    prometheus::MetricFamily total{"dpq_budget_limit", "Privacy budget set per dataset (param: epsilon or delta)",
                                   prometheus::MetricType::Gauge, {}};
    for (const auto& b : figures->budgets) {
      remaining.metric.push_back(Sample({{"dataset", b.dataset}, {"param", "epsilon"}},
                                        b.epsilon_remaining,
                                        prometheus::MetricType::Gauge));
      remaining.metric.push_back(Sample({{"dataset", b.dataset}, {"param", "delta"}},
                                        b.delta_remaining,
                                        prometheus::MetricType::Gauge));
      total.metric.push_back(Sample({{"dataset", b.dataset}, {"param", "epsilon"}}, b.epsilon_total,
                                    prometheus::MetricType::Gauge));
      total.metric.push_back(Sample({{"dataset", b.dataset}, {"param", "delta"}}, b.delta_total,
                                    prometheus::MetricType::Gauge));
    }
    // A counter: the audit table is append-only, so these sums never decrease.
    prometheus::MetricFamily eps{"dpq_epsilon_spent_total",
                                 "Epsilon charged to a dataset's ledger, per analyst (from the audit table)",
                                 prometheus::MetricType::Counter, {}};
    prometheus::MetricFamily delta{"dpq_delta_spent_total",
                                   "Delta charged to a dataset's ledger, per analyst (from the audit table)",
                                   prometheus::MetricType::Counter, {}};
    for (const auto& s : figures->spent) {
      eps.metric.push_back(Sample({{"dataset", s.dataset}, {"analyst", s.analyst}}, s.epsilon,
                                  prometheus::MetricType::Counter));
      delta.metric.push_back(Sample({{"dataset", s.dataset}, {"analyst", s.analyst}}, s.delta,
                                    prometheus::MetricType::Counter));
    }
    return {up, remaining, total, eps, delta};
  }

 private:
  LedgerSnapshot snapshot_;
};

class Metrics::PoolCollector : public prometheus::Collectable {
 public:
  explicit PoolCollector(PoolSnapshot snapshot) : snapshot_(std::move(snapshot)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const PoolFigures f = snapshot_();
    constexpr auto kCounter = prometheus::MetricType::Counter;
    constexpr auto kGauge = prometheus::MetricType::Gauge;
    prometheus::MetricFamily opened{"dpq_db_connections_opened_total",
                                    "Database sessions this process established", kCounter, {}};
    opened.metric.push_back(Sample({}, static_cast<double>(f.opened), kCounter));
    prometheus::MetricFamily failures{"dpq_db_connect_failures_total",
                                      "Attempts to establish a database session that failed",
                                      kCounter, {}};
    failures.metric.push_back(Sample({}, static_cast<double>(f.connect_failures), kCounter));
    prometheus::MetricFamily closed{
        "dpq_db_connections_closed_total",
        "Database sessions closed (reason: error = the work on it threw, so its state was unknown; "
        "server = closed or broken by the server)",
        kCounter, {}};
    closed.metric.push_back(
        Sample({{"reason", "error"}}, static_cast<double>(f.closed_after_error), kCounter));
    closed.metric.push_back(
        Sample({{"reason", "server"}}, static_cast<double>(f.closed_by_server), kCounter));
    prometheus::MetricFamily sessions{"dpq_db_connections",
                                      "Database sessions held now (state: in_use or idle in the pool)",
                                      kGauge, {}};
    sessions.metric.push_back(Sample({{"state", "in_use"}}, f.in_use, kGauge));
    sessions.metric.push_back(Sample({{"state", "idle"}}, f.idle, kGauge));
    return {opened, failures, closed, sessions};
  }

 private:
  PoolSnapshot snapshot_;
};

Metrics::Metrics(LedgerSnapshot snapshot, PoolSnapshot pool)
    : registry_(std::make_shared<prometheus::Registry>()),
      ledger_(std::make_shared<LedgerCollector>(std::move(snapshot))),
      pool_(pool ? std::make_shared<PoolCollector>(std::move(pool)) : nullptr),
      queries_(&prometheus::BuildCounter()
                    .Name("dpq_queries_total")
                    .Help("Query RPCs answered by this process, by dataset, aggregate and outcome")
                    .Register(*registry_)),
      rejections_(&prometheus::BuildCounter()
                       .Name("dpq_budget_rejections_total")
                       .Help("Queries refused because the privacy budget would be exceeded")
                       .Register(*registry_)),
      duration_(&prometheus::BuildHistogram()
                     .Name("dpq_query_duration_seconds")
                     .Help("Wall time of query RPCs in this process")
                     .Register(*registry_)) {}

Metrics::~Metrics() = default;

void Metrics::RecordQuery(absl::string_view dataset, absl::string_view aggregate,
                          absl::string_view outcome, double seconds) {
  const std::string ds(dataset);
  queries_->Add({{"dataset", ds}, {"aggregate", std::string(aggregate)}, {"outcome", std::string(outcome)}})
      .Increment();
  if (outcome == "resource_exhausted") rejections_->Add({{"dataset", ds}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  duration_->Add({}, kBuckets).Observe(seconds);
}

void Metrics::StopServing() { exposer_.reset(); }

absl::Status Metrics::Serve(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(ledger_);
  if (pool_ != nullptr) exposer_->RegisterCollectable(pool_);
  return absl::OkStatus();
}

}  // namespace dpq::metrics
