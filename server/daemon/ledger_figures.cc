#include "server/daemon/ledger_figures.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/base/status_macros.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/query/calendar.h"
#include "server/query/privacy_units.h"

namespace dpq::daemon {

metrics::LedgerFigures::Budget BudgetFigure(const store::BudgetState& b) {
  return {b.population,      std::string(dp::accounting::AccountantName(b.accountant)),
          b.epsilon_total(), b.epsilon_remaining(),
          b.delta_total(),   b.delta_remaining()};
}

std::vector<metrics::LedgerFigures::Block> BlockFigures(const store::RecentBlocks& blocks) {
  // Remaining in exact units, as `budget show --blocks` reports it.
  auto figure = [&](const char* which, const store::BlockBudget& b) {
    metrics::LedgerFigures::Block f;
    f.population = blocks.population;
    f.block = which;
    f.start_seconds = b.start * (query::kMicrosPerDay / query::kMicrosPerSecond);
    f.epsilon_limit = query::EpsilonFromUnits(b.epsilon_total_units);
    f.epsilon_spent = query::EpsilonFromUnits(b.epsilon_spent_units);
    f.epsilon_remaining = query::EpsilonFromUnits(b.epsilon_remaining_units());
    f.delta_limit = query::DeltaFromUnits(b.delta_total_units);
    f.delta_spent = query::DeltaFromUnits(b.delta_spent_units);
    f.delta_remaining = query::DeltaFromUnits(b.delta_remaining_units());
    return f;
  };
  std::vector<metrics::LedgerFigures::Block> out = {figure("current", blocks.current)};
  if (blocks.previous.has_value()) out.push_back(figure("previous", *blocks.previous));
  return out;
}

metrics::LedgerFigures::Spent SpentFigure(const store::AnalystSpend& s) {
  return {s.population, s.analyst, s.epsilon, s.delta};
}

metrics::LedgerFigures::History HistoryFigure(const store::PopulationHistory& h) {
  metrics::LedgerFigures::History out{h.population, h.audit_rows, {}};
  std::copy(h.epsilon_recent.begin(), h.epsilon_recent.end(), out.epsilon_recent);
  return out;
}

metrics::LedgerFigures::Cap CapFigure(const store::AnalystCap& c) {
  return {c.population,
          c.analyst,
          c.has_epsilon_cap,
          query::EpsilonFromUnits(c.epsilon_cap_units),
          query::EpsilonFromUnits(c.epsilon_spent_units),
          c.has_delta_cap,
          query::DeltaFromUnits(c.delta_cap_units),
          query::DeltaFromUnits(c.delta_spent_units)};
}

metrics::PoolFigures PoolFiguresOf(const store::PoolStats& s, const store::ScanRouteStats& r,
                                   const store::KnownLedgers::Stats& d) {
  return metrics::PoolFigures{s.opened,
                              s.connect_failures,
                              s.closed_after_error,
                              s.closed_by_server,
                              s.in_use,
                              s.idle,
                              r.scans_on_primary,
                              r.scans_on_standby,
                              r.has_standby,
                              r.standby_up,
                              r.fallbacks_lagging,
                              r.fallbacks_unavailable,
                              d.one_trip,
                              d.changed};
}

std::vector<int64_t> RecentWindowSeconds() {
  std::vector<int64_t> windows;
  for (const auto& w : metrics::kRecentWindows) windows.push_back(w.seconds);
  return windows;
}

absl::StatusOr<metrics::LedgerFigures> ReadLedgerFigures(store::BudgetLedger& ledger,
                                                         store::BlockLedger& blocks, int64_t today,
                                                         store::SpendTally& spend,
                                                         store::Database* db) {
  metrics::LedgerFigures f;
  ASSIGN_OR_RETURN(auto budgets, ledger.ListBudgets());
  for (const auto& b : budgets) {
    // A per-block budget has no one remaining figure: its total is each block's and its spent is
    // over all blocks, so their difference means nothing (and would fire DpqPopulationBudgetLow
    // as soon as a few blocks were queried). Its current and previous blocks are exported instead.
    if (b.per_block) continue;
    f.budgets.push_back(BudgetFigure(b));
  }
  ASSIGN_OR_RETURN(auto recent, blocks.ListRecentBlocks(today));
  for (const auto& r : recent) {
    for (auto& figure : BlockFigures(r)) f.blocks.push_back(std::move(figure));
  }
  ASSIGN_OR_RETURN(auto spent, spend.Refresh());
  for (const auto& s : spent) f.spent.push_back(SpentFigure(s));
  for (const auto& h : spend.History(RecentWindowSeconds())) f.history.push_back(HistoryFigure(h));
  ASSIGN_OR_RETURN(auto caps, store::ListAnalystCaps(db));
  for (const auto& c : caps) f.caps.push_back(CapFigure(c));
  return f;
}

metrics::PoolFigures ReadPoolFigures(const store::Database& db, const store::ScanRouter& router) {
  // Every session dpqd holds to the primary: the main pool and the scan pool.
  return PoolFiguresOf(db.Stats() + router.PrimaryScanPoolStats(), router.Stats(),
                       store::KnownLedgers::Shared().stats());
}

}  // namespace dpq::daemon
