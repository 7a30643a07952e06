#include "server/metrics/status_page.h"

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/metrics.h"

namespace dpq::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A Metrics object whose ledger snapshot returns `figures`: the page is rendered from its
// collection, as the HTTP handler does.
std::string Render(const LedgerFigures& figures, bool ledger_ok = true) {
  Metrics m(
      [&]() -> absl::StatusOr<LedgerFigures> {
        if (!ledger_ok) return absl::UnavailableError("down");
        return figures;
      },
      []() { return PoolFigures{3, 1, 0, 2, 1, 2}; }, BuildInfo{"0.1.0", "abc123"});
  return RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000000));
}

LedgerFigures TwoPopulations() {
  LedgerFigures f;
  f.budgets.push_back({"salaries", "basic", 3, 2.5, 1e-6, 1e-6});
  f.budgets.push_back({"slid", "rdp", 1, 0.05, 1e-6, 9e-7});
  f.spent.push_back({"slid", "alice", 0.95, 1e-7});
  f.spent.push_back({"salaries", "bob", 0.25, 0});
  f.spent.push_back({"salaries", "alice", 0.25, 0});
  LedgerFigures::History h{"slid", 3, {0.7, 0.85, 0.95, 0.95, 0.95}};
  f.history.push_back(h);
  f.history.push_back({"salaries", 2, {0, 0.25, 0.5, 0.5, 0.5}});
  f.caps.push_back({"salaries", "bob", true, 1, 0.25, false, 0, 0});
  f.caps.push_back({"salaries", "carol", true, 0.5, 0, false, 0, 0});
  return f;
}

TEST(StatusPageTest, ShowsEveryPopulationsBudgetFromTheScrape) {
  const std::string html = Render(TwoPopulations());
  EXPECT_THAT(html, HasSubstr("data-population=\"slid\" data-accountant=\"rdp\""));
  EXPECT_THAT(html, HasSubstr("data-population=\"salaries\" data-accountant=\"basic\""));
  // spent = limit - remaining, exact in data-value, 6 digits in the text.
  EXPECT_THAT(html, HasSubstr("data-field=\"epsilon-spent\" data-value=\"0.5\">0.5<"));
  EXPECT_THAT(
      html,
      HasSubstr("data-field=\"epsilon-remaining\" data-value=\"0.050000000000000003\">0.05<"));
  EXPECT_THAT(html,
              HasSubstr("data-field=\"delta-total\" data-value=\"9.9999999999999995e-07\">1e-06<"));
  EXPECT_THAT(html, HasSubstr("id=\"version\">0.1.0<"));
  EXPECT_THAT(html, HasSubstr("id=\"git-sha\">abc123<"));
}

TEST(StatusPageTest, SpentOverTimeIsTheTotalMinusEachWindow) {
  const std::string html = Render(TwoPopulations());
  // salaries: nominal 0.5 now; 0.25 spent in the last 6 h, none in the last hour.
  EXPECT_THAT(html, HasSubstr("data-at=\"−30d\" data-value=\"0\">0<"));
  EXPECT_THAT(html, HasSubstr("data-at=\"−6h\" data-value=\"0.25\">0.25<"));
  EXPECT_THAT(html, HasSubstr("data-at=\"now\" data-value=\"0.5\">0.5<"));
  EXPECT_THAT(html, HasSubstr("<svg class=\"chart\""));
}

TEST(StatusPageTest, AnalystsWithCapsAndWithout) {
  const std::string html = Render(TwoPopulations());
  EXPECT_THAT(html, HasSubstr("data-analyst=\"bob\""));
  EXPECT_THAT(html,
              HasSubstr("data-field=\"analyst-epsilon-cap-remaining\" data-value=\"0.75\">0.75<"));
  EXPECT_THAT(html, HasSubstr("data-analyst=\"carol\""));  // capped, nothing spent yet
  EXPECT_THAT(html, HasSubstr("data-field=\"analyst-epsilon-cap\" data-value=\"none\">no cap<"));
}

TEST(StatusPageTest, DatabaseHealthAndAnUnreadableLedger) {
  EXPECT_THAT(Render(TwoPopulations()), HasSubstr("data-ledger-ok=\"1\""));
  const std::string down = Render(TwoPopulations(), /*ledger_ok=*/false);
  EXPECT_THAT(down, HasSubstr("data-ledger-ok=\"0\""));
  EXPECT_THAT(down, HasSubstr("UNREADABLE"));
  EXPECT_THAT(down, Not(HasSubstr("class=\"population\"")));
  EXPECT_THAT(down, HasSubstr("data-field=\"db-closed-server\" data-value=\"2\""));
}

TEST(StatusPageTest, NoScriptAndEscapedNames) {
  LedgerFigures f;
  f.budgets.push_back({"a<b>&\"c", "basic", 1, 1, 0, 0});
  const std::string html = Render(f);
  EXPECT_THAT(html, HasSubstr("a&lt;b&gt;&amp;&quot;c"));
  EXPECT_THAT(html, Not(HasSubstr("<b>")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST(StatusPageTest, AuditVerificationShown) {
  LedgerFigures f = TwoPopulations();
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return f; });
  m.RecordAuditVerify("slid", false, 1700000000);
  m.RecordAuditVerify("salaries", true, 1700000000);
  const std::string html = RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000100));
  EXPECT_THAT(html, HasSubstr("data-field=\"audit-verify\" data-value=\"broken\""));
  EXPECT_THAT(html, HasSubstr("data-field=\"audit-verify\" data-value=\"ok\""));
  EXPECT_THAT(html, HasSubstr("2023-11-14 22:13:20 UTC"));
  EXPECT_THAT(html, HasSubstr("data-field=\"audit-rows\" data-value=\"3\""));
}

// Metrics exports ok 0 and timestamp 0 for a population it has not verified: that is "none
// yet", not a broken chain.
TEST(StatusPageTest, APopulationNotVerifiedYetIsNotShownBroken) {
  LedgerFigures f = TwoPopulations();
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return f; });
  m.RecordAuditVerify("slid", true, 1700000000);
  const std::string html = RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000100));
  EXPECT_THAT(html, HasSubstr("data-field=\"audit-verify\" data-value=\"ok\""));
  EXPECT_THAT(html, HasSubstr("data-field=\"audit-verify\" data-value=\"none\">none yet<"));
  EXPECT_THAT(html, Not(HasSubstr("BROKEN")));
}

TEST(StatusPageTest, ShardServersAndTheirStateFromTheLastProbe) {
  Metrics m([]() -> absl::StatusOr<LedgerFigures> { return LedgerFigures{}; });
  EXPECT_THAT(RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000000)),
              HasSubstr("No shard servers registered."));
  m.SetShards({{"west", false, 2.0}, {"east", true, 0.004}});
  const std::string html = RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000000));
  EXPECT_THAT(html, HasSubstr("data-shard=\"east\"><td>east</td><td data-field=\"shard-state\" "
                              "data-value=\"up\" class=\"good\">up</td>"));
  EXPECT_THAT(html, HasSubstr("data-shard=\"west\"><td>west</td><td data-field=\"shard-state\" "
                              "data-value=\"down\" class=\"bad\">DOWN</td>"));
  EXPECT_LT(html.find("data-shard=\"east\""), html.find("data-shard=\"west\""));
  // A removed shard is gone at the next probe's figures.
  m.SetShards({{"east", true, 0.004}});
  EXPECT_THAT(RenderStatusPage(m.Collect(), absl::FromUnixSeconds(1700000000)),
              Not(HasSubstr("west")));
}

// A per-block population next to a population-wide one: its blocks are shown with their first
// day and a bar each, and no population-wide budget row is made up for it.
TEST(StatusPageTest, APerBlockPopulationShowsItsBlocksAndNoPopulationTotal) {
  LedgerFigures f = TwoPopulations();
  f.blocks.push_back({"visits", "current", 1772409600, 1, 0.25, 0.75, 1e-6, 0, 1e-6});
  f.blocks.push_back({"visits", "previous", 1771804800, 1, 0.95, 0.05, 1e-6, 0, 1e-6});
  f.history.push_back({"visits", 4, {0, 0, 0.25, 1.2, 1.2}});
  f.spent.push_back({"visits", "alice", 1.2, 0});
  const std::string html = Render(f);
  EXPECT_THAT(html, HasSubstr("data-population=\"visits\" data-accountant=\"basic\" "
                              "data-budget=\"per-block\""));
  EXPECT_THAT(html, HasSubstr("budget per time block"));
  const std::string visits = html.substr(html.find("data-population=\"visits\""));
  const std::string current =
      visits.substr(visits.find("<tr data-block=\"current\" data-param=\"epsilon\" "
                                "data-block-start=\"2026-03-02\">"));
  EXPECT_THAT(current.substr(0, current.find("</tr>")),
              HasSubstr("data-field=\"epsilon-spent\" data-value=\"0.25\">0.25<"));
  const std::string previous =
      visits.substr(visits.find("<tr data-block=\"previous\" data-param=\"epsilon\" "
                                "data-block-start=\"2026-02-23\">"));
  // 95 % spent: the bar is full to 228 of 240 pixels, in the alarm colour.
  EXPECT_THAT(previous.substr(0, previous.find("</tr>")), HasSubstr("aria-label=\"95% spent\""));
  EXPECT_THAT(previous.substr(0, previous.find("</tr>")), HasSubstr("#c0392b"));
  // The section has no population-wide budget table (its rows carry no data-block).
  EXPECT_THAT(visits.substr(0, visits.find("</section>")), Not(HasSubstr("class=\"budget\"")));
  // Its analysts and audit rows are still there.
  EXPECT_THAT(visits, HasSubstr("data-field=\"audit-rows\" data-value=\"4\""));
  // The population-wide ones keep their table.
  EXPECT_THAT(html, HasSubstr("data-population=\"salaries\" data-accountant=\"basic\"><h2>"));
}

// A population whose first block is the current one: one block, no "previous" row.
TEST(StatusPageTest, AFirstBlockHasNoPreviousRow) {
  LedgerFigures f;
  f.blocks.push_back({"visits", "current", 1772409600, 1, 0, 1, 0, 0, 0});
  const std::string html = Render(f);
  EXPECT_THAT(html, HasSubstr("data-block=\"current\""));
  EXPECT_THAT(html, Not(HasSubstr("data-block=\"previous\"")));
  EXPECT_THAT(html, Not(HasSubstr("No populations yet")));
}

}  // namespace
}  // namespace dpq::metrics
