// The status page served on the metrics port (GET / and /status): what an operator opens first,
// before any Grafana exists. Plain HTML with inline SVG and inline CSS; no script, nothing loaded
// from anywhere (the server also sends a Content-Security-Policy of default-src 'none').
//
// It is rendered from the metric families of one collection, the very vector a /metrics scrape
// serialises, so by construction it shows nothing /metrics does not: per population (one ledger
// each) the budget bars (spent = limit - remaining, remaining, limit of epsilon and delta; the
// accountant) or, for a population whose budget is per time block, a bar per exported block
// (current and previous: spent, remaining, limit, first day), nominal epsilon spent over time (dpq_epsilon_spent_total minus
// dpq_epsilon_spent_recent{window}), audit rows and the last verification, spend per analyst with
// caps where a grant has one, and the database's health (ledger read, connection pool).
//
// DOM contract (tests rely on it): each population is <section class="population"
// data-population=NAME data-accountant=A>, with data-budget="per-block" and a table.blocks whose
// rows are <tr data-block=current|previous data-param=epsilon|delta data-block-start=YYYY-MM-DD>
// for a per-block population; each figure is an element with
// data-field="epsilon-spent" (etc.) and data-value holding the exact value (%.17g); visible text
// is rounded to 6 significant digits.
#ifndef DPQ_SERVER_METRICS_STATUS_PAGE_H_
#define DPQ_SERVER_METRICS_STATUS_PAGE_H_

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "absl/time/time.h"

namespace dpq::metrics {

std::string RenderStatusPage(const std::vector<prometheus::MetricFamily>& families, absl::Time now);

}  // namespace dpq::metrics

#endif  // DPQ_SERVER_METRICS_STATUS_PAGE_H_
