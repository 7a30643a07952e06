#include "server/metrics/figure_families.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/logging.h"

namespace dpq::metrics {

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

namespace {

// The families of one scrape, one function per kind of ledger figure, in the order they are
// exposed.
std::vector<prometheus::MetricFamily> BudgetFamilies(
    const std::vector<LedgerFigures::Budget>& budgets) {
  prometheus::MetricFamily remaining{"dpq_budget_remaining",
                                     "Privacy budget left per population (param: epsilon or delta)",
                                     kGauge,
                                     {}};
  prometheus::MetricFamily total{"dpq_budget_limit",
                                 "Privacy budget set per population (param: epsilon or delta)",
                                 kGauge,
                                 {}};
  prometheus::MetricFamily accountant{
      "dpq_budget_accountant_info",
      "Always 1: the accountant composing the charges of each population's ledger",
      kGauge,
      {}};
  for (const auto& b : budgets) {
    remaining.metric.push_back(
        Sample({{"population", b.population}, {"param", "epsilon"}}, b.epsilon_remaining, kGauge));
    remaining.metric.push_back(
        Sample({{"population", b.population}, {"param", "delta"}}, b.delta_remaining, kGauge));
    total.metric.push_back(
        Sample({{"population", b.population}, {"param", "epsilon"}}, b.epsilon_total, kGauge));
    total.metric.push_back(
        Sample({{"population", b.population}, {"param", "delta"}}, b.delta_total, kGauge));
    accountant.metric.push_back(
        Sample({{"accountant", b.accountant}, {"population", b.population}}, 1, kGauge));
  }
  return {remaining, total, accountant};
}

// A per-block population's current and previous block.
std::vector<prometheus::MetricFamily> BlockFamilies(
    const std::vector<LedgerFigures::Block>& blocks) {
  prometheus::MetricFamily limit{
      "dpq_block_budget_limit",
      "Privacy budget of a time block of a per-block population (block: current, the one holding "
      "today UTC, or previous; param: epsilon or delta)",
      kGauge,
      {}};
  prometheus::MetricFamily spent{
      "dpq_block_budget_spent", "Privacy budget a time block has spent", kGauge, {}};
  prometheus::MetricFamily remaining{
      "dpq_block_budget_remaining", "Privacy budget a time block has left", kGauge, {}};
  prometheus::MetricFamily start{"dpq_block_start_timestamp_seconds",
                                 "Unix time of a time block's first day, 00:00 UTC",
                                 kGauge,
                                 {}};
  for (const auto& b : blocks) {
    auto add = [&](const char* param, double total, double used, double left) {
      const std::vector<prometheus::ClientMetric::Label> labels = {
          {"population", b.population}, {"block", b.block}, {"param", param}};
      limit.metric.push_back(Sample(labels, total, kGauge));
      spent.metric.push_back(Sample(labels, used, kGauge));
      remaining.metric.push_back(Sample(labels, left, kGauge));
    };
    add("epsilon", b.epsilon_limit, b.epsilon_spent, b.epsilon_remaining);
    add("delta", b.delta_limit, b.delta_spent, b.delta_remaining);
    start.metric.push_back(Sample({{"population", b.population}, {"block", b.block}},
                                  static_cast<double>(b.start_seconds), kGauge));
  }
  return {limit, spent, remaining, start};
}

std::vector<prometheus::MetricFamily> SpentFamilies(
    const std::vector<LedgerFigures::Spent>& spent) {
  // A counter: the audit table is append-only, so these sums never decrease.
  prometheus::MetricFamily eps{
      "dpq_epsilon_spent_total",
      "Epsilon charged to a population's ledger, per analyst (from the audit table)",
      kCounter,
      {}};
  prometheus::MetricFamily delta{
      "dpq_delta_spent_total",
      "Delta charged to a population's ledger, per analyst (from the audit table)",
      kCounter,
      {}};
  for (const auto& s : spent) {
    eps.metric.push_back(
        Sample({{"analyst", s.analyst}, {"population", s.population}}, s.epsilon, kCounter));
    delta.metric.push_back(
        Sample({{"analyst", s.analyst}, {"population", s.population}}, s.delta, kCounter));
  }
  return {eps, delta};
}

std::vector<prometheus::MetricFamily> HistoryFamilies(
    const std::vector<LedgerFigures::History>& history) {
  prometheus::MetricFamily rows{"dpq_audit_rows_total",
                                "Allocations in each population's audit chain (append-only)",
                                kCounter,
                                {}};
  prometheus::MetricFamily recent{
      "dpq_epsilon_spent_recent",
      "Nominal epsilon charged to a population's ledger during the last `window` (audit "
      "created_at, minute resolution)",
      kGauge,
      {}};
  for (const auto& h : history) {
    rows.metric.push_back(
        Sample({{"population", h.population}}, static_cast<double>(h.audit_rows), kCounter));
    for (int i = 0; i < kRecentWindowCount; ++i) {
      recent.metric.push_back(
          Sample({{"population", h.population}, {"window", kRecentWindows[i].label}},
                 h.epsilon_recent[i], kGauge));
    }
  }
  return {rows, recent};
}

std::vector<prometheus::MetricFamily> CapFamilies(const std::vector<LedgerFigures::Cap>& caps) {
  prometheus::MetricFamily eps_cap{
      "dpq_analyst_epsilon_cap",
      "Epsilon cap of an analyst's grant on a population (grants with a cap)",
      kGauge,
      {}};
  prometheus::MetricFamily eps_cap_left{"dpq_analyst_epsilon_cap_remaining",
                                        "Epsilon the analyst may still spend under the cap",
                                        kGauge,
                                        {}};
  prometheus::MetricFamily delta_cap{
      "dpq_analyst_delta_cap",
      "Delta cap of an analyst's grant on a population (grants with one)",
      kGauge,
      {}};
  prometheus::MetricFamily delta_cap_left{"dpq_analyst_delta_cap_remaining",
                                          "Delta the analyst may still spend under the cap",
                                          kGauge,
                                          {}};
  for (const auto& c : caps) {
    std::vector<prometheus::ClientMetric::Label> labels = {{"analyst", c.analyst},
                                                           {"population", c.population}};
    if (c.has_epsilon_cap) {
      eps_cap.metric.push_back(Sample(labels, c.epsilon_cap, kGauge));
      eps_cap_left.metric.push_back(
          Sample(labels, std::max(0.0, c.epsilon_cap - c.epsilon_spent), kGauge));
    }
    if (c.has_delta_cap) {
      delta_cap.metric.push_back(Sample(labels, c.delta_cap, kGauge));
      delta_cap_left.metric.push_back(
          Sample(labels, std::max(0.0, c.delta_cap - c.delta_spent), kGauge));
    }
  }
  return {eps_cap, eps_cap_left, delta_cap, delta_cap_left};
}

}  // namespace

// dpq_ledger_scrape_ok, then the ledger's families when the snapshot was read.
std::vector<prometheus::MetricFamily> LedgerFamilies(const absl::StatusOr<LedgerFigures>& figures) {
  prometheus::MetricFamily up{
      "dpq_ledger_scrape_ok", "1 if the ledger figures were read from the database", kGauge, {}};
  up.metric.push_back(Sample({}, figures.ok() ? 1 : 0, kGauge));
  if (!figures.ok()) {
    LogWarning(absl::StrCat("metrics: cannot read ledger figures: ", figures.status().ToString()));
    return {up};
  }
  std::vector<prometheus::MetricFamily> families = {up};
  for (auto part : {BudgetFamilies(figures->budgets), BlockFamilies(figures->blocks),
                    SpentFamilies(figures->spent), HistoryFamilies(figures->history),
                    CapFamilies(figures->caps)}) {
    for (auto& family : part) families.push_back(std::move(family));
  }
  return families;
}

// dpq_shard_up and dpq_shard_probe_seconds, one sample per registered shard.
std::vector<prometheus::MetricFamily> ShardFamilies(const std::vector<ShardFigures>& shards) {
  prometheus::MetricFamily up{
      "dpq_shard_up",
      "1 if the shard server answered dpqd's last probe through the coordinator (postgres_fdw)",
      kGauge,
      {}};
  prometheus::MetricFamily seconds{
      "dpq_shard_probe_seconds", "Wall time of that probe, up or down", kGauge, {}};
  for (const ShardFigures& s : shards) {
    up.metric.push_back(Sample({{"shard", s.shard}}, s.up ? 1 : 0, kGauge));
    seconds.metric.push_back(Sample({{"shard", s.shard}}, s.probe_seconds, kGauge));
  }
  return {up, seconds};
}

}  // namespace dpq::metrics
