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

TEST(LedgerFiguresTest, PoolFiguresCopyEveryPoolAndRouterCounter) {
  store::PoolStats pool{1, 2, 3, 4, 5, 6};
  store::ScanRouteStats routes;
  routes.has_standby = true;
  routes.standby_up = false;
  routes.scans_on_standby = 7;
  routes.scans_on_primary = 8;
  routes.fallbacks_lagging = 9;
  routes.fallbacks_unavailable = 10;
  const metrics::PoolFigures figures = PoolFiguresOf(pool, routes);
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
}

}  // namespace
}  // namespace dpq::daemon
