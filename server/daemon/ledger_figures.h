// What dpqd's metrics read at each scrape: the ledger's figures (budgets, spend, recent epsilon,
// grant caps) and the connection pool's and scan router's counters, copied from the store's types
// into the metrics layer's own (that layer knows nothing of the store).
#ifndef DPQ_SERVER_DAEMON_LEDGER_FIGURES_H_
#define DPQ_SERVER_DAEMON_LEDGER_FIGURES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/metrics/metrics.h"
#include "server/store/allocation.h"
#include "server/store/block_ledger.h"
#include "server/store/budget_ledger.h"
#include "server/store/cap_figures.h"
#include "server/store/database.h"
#include "server/store/known_ledgers.h"
#include "server/store/scan_router.h"
#include "server/store/spend_tally.h"

namespace dpq::daemon {

// One scrape's ledger figures: every population-wide budget, the current and previous block of
// every per-block population on `today` (days since 1970-01-01: the engine's
// QueryEngine::Today(), so the metrics and the queries agree on which block is current), the
// per-analyst spend (`spend` reads only the audit rows appended since its last refresh), each
// population's recent epsilon over metrics::kRecentWindows, and every capped grant. The first read
// that fails fails the scrape.
absl::StatusOr<metrics::LedgerFigures> ReadLedgerFigures(store::BudgetLedger& ledger,
                                                         store::BlockLedger& blocks, int64_t today,
                                                         store::SpendTally& spend,
                                                         store::Database* db);

// The pool's and the scan router's counters now.
metrics::PoolFigures ReadPoolFigures(const store::Database& db, const store::ScanRouter& router);

// The conversions, one store row to one metrics row (pure).
metrics::LedgerFigures::Budget BudgetFigure(const store::BudgetState& budget);
// A population's current block, then its previous one if it has one; privacy units back to
// epsilon and delta.
std::vector<metrics::LedgerFigures::Block> BlockFigures(const store::RecentBlocks& blocks);
metrics::LedgerFigures::Spent SpentFigure(const store::AnalystSpend& spend);
// `history.epsilon_recent` holds one value per window of metrics::kRecentWindows, in that order.
metrics::LedgerFigures::History HistoryFigure(const store::PopulationHistory& history);
// Privacy units back to epsilon and delta (query/privacy_units.h).
metrics::LedgerFigures::Cap CapFigure(const store::AnalystCap& cap);
metrics::PoolFigures PoolFiguresOf(const store::PoolStats& pool,
                                   const store::ScanRouteStats& routes,
                                   const store::KnownLedgers::Stats& debits);

// The lengths of metrics::kRecentWindows, in seconds, in their order.
std::vector<int64_t> RecentWindowSeconds();

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_LEDGER_FIGURES_H_
