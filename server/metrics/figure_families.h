// The Prometheus families of the figures dpqd reads rather than counts: the ledger's (budgets,
// time blocks, analysts' spend and caps, recent history) and the shard servers' probes. Built
// afresh at each scrape from a snapshot (metrics.h), one function per kind of figure.
#ifndef DPQ_SERVER_METRICS_FIGURE_FAMILIES_H_
#define DPQ_SERVER_METRICS_FIGURE_FAMILIES_H_

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <vector>

#include "absl/status/statusor.h"
#include "server/metrics/metrics.h"

namespace dpq::metrics {

inline constexpr auto kCounter = prometheus::MetricType::Counter;
inline constexpr auto kGauge = prometheus::MetricType::Gauge;

// One sample of a counter or gauge.
prometheus::ClientMetric Sample(std::vector<prometheus::ClientMetric::Label> labels, double value,
                                prometheus::MetricType type);

// dpq_ledger_scrape_ok, then the ledger's families when the snapshot was read (a failed read is
// logged and leaves only dpq_ledger_scrape_ok = 0).
std::vector<prometheus::MetricFamily> LedgerFamilies(const absl::StatusOr<LedgerFigures>& figures);

// dpq_shard_up and dpq_shard_probe_seconds, one sample per registered shard.
std::vector<prometheus::MetricFamily> ShardFamilies(const std::vector<ShardFigures>& shards);

}  // namespace dpq::metrics

#endif  // DPQ_SERVER_METRICS_FIGURE_FAMILIES_H_
