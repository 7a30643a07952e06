#include "server/daemon/ledger_figures.h"

#include "gtest/gtest.h"

namespace dpq::daemon {
namespace {

TEST(LedgerFiguresTest, ABudgetIsReportedInEpsilonAndDeltaWithWhatRemains) {
  store::BudgetState state;
  state.population = "visits";
  state.accountant = dp::accounting::AccountantKind::kRdp;
  state.epsilon_total_units = 3'000'000'000'000;  // 3.0
  state.epsilon_spent_units = 500'000'000'000;    // 0.5
  state.delta_total_units = 1'000'000'000'000;    // 1e-6
  state.delta_spent_units = 2'000'000'000'000;    // overspent: nothing remains, never less
  const metrics::LedgerFigures::Budget budget = BudgetFigure(state);
  EXPECT_EQ(budget.population, "visits");
  EXPECT_EQ(budget.accountant, "rdp");
  EXPECT_DOUBLE_EQ(budget.epsilon_total, 3.0);
  EXPECT_DOUBLE_EQ(budget.epsilon_remaining, 2.5);
  EXPECT_DOUBLE_EQ(budget.delta_total, 1e-6);
  EXPECT_DOUBLE_EQ(budget.delta_remaining, 0);
}

TEST(LedgerFiguresTest, ACapAndItsSpendAreConvertedFromPrivacyUnits) {
  store::AnalystCap cap;
  cap.population = "visits";
  cap.analyst = "alice";
  cap.has_epsilon_cap = true;
  cap.epsilon_cap_units = 1'000'000'000'000;  // 1.0
  cap.epsilon_spent_units = 250'000'000'000;  // 0.25
  cap.delta_spent_units = 1'000;              // 1e-15, spent without a delta cap
  const metrics::LedgerFigures::Cap figure = CapFigure(cap);
  EXPECT_EQ(figure.population, "visits");
  EXPECT_EQ(figure.analyst, "alice");
  EXPECT_TRUE(figure.has_epsilon_cap);
  EXPECT_DOUBLE_EQ(figure.epsilon_cap, 1.0);
  EXPECT_DOUBLE_EQ(figure.epsilon_spent, 0.25);
  EXPECT_FALSE(figure.has_delta_cap);
  EXPECT_DOUBLE_EQ(figure.delta_cap, 0);
  EXPECT_DOUBLE_EQ(figure.delta_spent, 1e-15);
}

TEST(LedgerFiguresTest, SpendIsCopiedAsIs) {
  const metrics::LedgerFigures::Spent spent = SpentFigure({"visits", "bob", 0.75, 1e-9});
  EXPECT_EQ(spent.population, "visits");
  EXPECT_EQ(spent.analyst, "bob");
  EXPECT_DOUBLE_EQ(spent.epsilon, 0.75);
  EXPECT_DOUBLE_EQ(spent.delta, 1e-9);
}

TEST(LedgerFiguresTest, RecentEpsilonKeepsTheOrderOfTheWindows) {
  const std::vector<int64_t> windows = RecentWindowSeconds();
  ASSERT_EQ(windows.size(), static_cast<size_t>(metrics::kRecentWindowCount));
  for (int i = 0; i < metrics::kRecentWindowCount; ++i) {
    EXPECT_EQ(windows[i], metrics::kRecentWindows[i].seconds);
  }
  store::PopulationHistory history{"visits", 42, {}};
  for (int i = 0; i < metrics::kRecentWindowCount; ++i) history.epsilon_recent.push_back(0.5 * i);
  const metrics::LedgerFigures::History figure = HistoryFigure(history);
  EXPECT_EQ(figure.population, "visits");
  EXPECT_EQ(figure.audit_rows, 42);
  for (int i = 0; i < metrics::kRecentWindowCount; ++i) {
    EXPECT_DOUBLE_EQ(figure.epsilon_recent[i], 0.5 * i) << metrics::kRecentWindows[i].label;
  }
}

TEST(LedgerFiguresTest, BlocksAreTheCurrentThenThePreviousWithTheirFirstDayInSeconds) {
  store::RecentBlocks recent;
  recent.population = "visits";
  recent.current.start = 20514;                            // 2026-03-02
  recent.current.epsilon_total_units = 1'000'000'000'000;  // 1.0
  recent.current.epsilon_spent_units = 250'000'000'000;    // 0.25
  recent.current.delta_total_units = 1'000'000'000'000;    // 1e-6
  std::vector<metrics::LedgerFigures::Block> blocks = BlockFigures(recent);
  ASSERT_EQ(blocks.size(), 1u);  // no previous block: the current one is the first
  EXPECT_EQ(blocks[0].population, "visits");
  EXPECT_EQ(blocks[0].block, "current");
  EXPECT_EQ(blocks[0].start_seconds, 1772409600);
  EXPECT_DOUBLE_EQ(blocks[0].epsilon_limit, 1.0);
  EXPECT_DOUBLE_EQ(blocks[0].epsilon_spent, 0.25);
  EXPECT_DOUBLE_EQ(blocks[0].epsilon_remaining, 0.75);
  EXPECT_DOUBLE_EQ(blocks[0].delta_limit, 1e-6);
  EXPECT_DOUBLE_EQ(blocks[0].delta_spent, 0);
  EXPECT_DOUBLE_EQ(blocks[0].delta_remaining, 1e-6);

  store::BlockBudget previous;
  previous.start = 20507;  // 2026-02-23
  previous.epsilon_total_units = 2'000'000'000'000;
  previous.epsilon_spent_units = 2'500'000'000'000;  // more than its budget: nothing remains
  previous.delta_spent_units = 3'000;                // 3e-15
  recent.previous = previous;
  blocks = BlockFigures(recent);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].block, "previous");
  EXPECT_EQ(blocks[1].start_seconds, 1771804800);
  EXPECT_DOUBLE_EQ(blocks[1].epsilon_limit, 2.0);
  EXPECT_DOUBLE_EQ(blocks[1].epsilon_remaining, 0);
  EXPECT_DOUBLE_EQ(blocks[1].delta_spent, 3e-15);
}

TEST(LedgerFiguresTest, PoolFiguresCopyEveryPoolAndRouterCounter) {
  store::PoolStats pool{1, 2, 3, 4, 5, 6};
  store::ScanRouteStats routes;
  routes.has_standby = true;
  routes.standby_up = false;
  routes.scans_on_standby = 7;
  routes.scans_on_primary = 8;
  routes.fallbacks_lagging = 9;
  routes.fallbacks_unavailable = 10;
  store::KnownLedgers::Stats debits;
  debits.one_trip = 11;
  debits.changed = 12;
  const metrics::PoolFigures figures = PoolFiguresOf(pool, routes, debits);
  EXPECT_EQ(figures.opened, 1);
  EXPECT_EQ(figures.connect_failures, 2);
  EXPECT_EQ(figures.closed_after_error, 3);
  EXPECT_EQ(figures.closed_by_server, 4);
  EXPECT_EQ(figures.in_use, 5);
  EXPECT_EQ(figures.idle, 6);
  EXPECT_EQ(figures.scans_on_primary, 8);
  EXPECT_EQ(figures.scans_on_standby, 7);
  EXPECT_TRUE(figures.has_standby);
  EXPECT_FALSE(figures.standby_up);
  EXPECT_EQ(figures.standby_fallbacks_lagging, 9);
  EXPECT_EQ(figures.standby_fallbacks_unavailable, 10);
  EXPECT_EQ(figures.debits_one_trip, 11);
  EXPECT_EQ(figures.debits_rows_changed, 12);
}

}  // namespace
}  // namespace dpq::daemon
