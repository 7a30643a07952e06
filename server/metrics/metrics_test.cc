#include "server/metrics/metrics.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The text exposition of one scrape of `m`, as /metrics serves it.
std::string Scrape(const Metrics& m) { return prometheus::TextSerializer().Serialize(m.Collect()); }

LedgerFigures OnePopulation(const std::string& name) {
  LedgerFigures f;
  f.budgets.push_back({name, "basic", 3, 2.5, 1e-6, 1e-6});
  f.spent.push_back({name, "alice", 0.5, 0});
  f.history.push_back({name, 2, {0, 0.25, 0.5, 0.5, 0.5}});
  f.caps.push_back({name, "alice", true, 1, 0.5, false, 0, 0});
  return f;
}

TEST(MetricsTest, LedgerSeriesAreLabelledByPopulation) {
  const LedgerFigures figures = OnePopulation("clinic");
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return figures; });
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_budget_remaining{population=\"clinic\",param=\"epsilon\"} 2.5"));
  EXPECT_THAT(text, HasSubstr("dpq_budget_limit{population=\"clinic\",param=\"epsilon\"} 3"));
  EXPECT_THAT(
      text, HasSubstr("dpq_budget_accountant_info{accountant=\"basic\",population=\"clinic\"} 1"));
  EXPECT_THAT(text, HasSubstr("dpq_epsilon_spent_total{analyst=\"alice\",population=\"clinic\"}"));
  EXPECT_THAT(text, HasSubstr("dpq_audit_rows_total{population=\"clinic\"} 2"));
  EXPECT_THAT(text, HasSubstr("dpq_epsilon_spent_recent{population=\"clinic\",window=\"6h\"}"));
  EXPECT_THAT(text,
              HasSubstr("dpq_analyst_epsilon_cap_remaining{analyst=\"alice\",population=\"clinic\"}"
                        " 0.5"));
  EXPECT_THAT(text, Not(HasSubstr("dataset=")));
}

// Before any verification the series exist at 0, so DpqAuditVerifyStale (time() - timestamp)
// fires for a population nobody verifies instead of finding no series.
TEST(MetricsTest, EveryListedPopulationHasVerificationSeriesBeforeAnyVerification) {
  const LedgerFigures figures = OnePopulation("clinic");
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return figures; });
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_audit_verify_timestamp_seconds{population=\"clinic\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("dpq_audit_verify_ok{population=\"clinic\"} 0\n"));
}

TEST(MetricsTest, ARecordedVerificationIsKeptByLaterScrapes) {
  const LedgerFigures figures = OnePopulation("clinic");
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return figures; });
  Scrape(m);
  m.RecordAuditVerify("clinic", true, 1700000000);
  Scrape(m);
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_audit_verify_ok{population=\"clinic\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("dpq_audit_verify_timestamp_seconds{population=\"clinic\"} 1700000000\n"));
}

// A per-block population: its two blocks, and no dpq_budget_* series.
LedgerFigures PerBlockPopulation() {
  LedgerFigures f;
  // The current block began on 2026-03-02 (1772409600), the previous one on 2026-02-23.
  f.blocks.push_back({"visits", "current", 1772409600, 1, 0.25, 0.75, 1e-6, 0, 1e-6});
  f.blocks.push_back({"visits", "previous", 1771804800, 2, 2, 0, 0, 0, 0});
  f.history.push_back({"visits", 4, {0, 0, 0.25, 2.75, 2.75}});
  return f;
}

TEST(MetricsTest, BlockSeriesAreLabelledByPopulationBlockAndParam) {
  const LedgerFigures figures = PerBlockPopulation();
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return figures; });
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_block_budget_limit{population=\"visits\",block=\"current\","
                              "param=\"epsilon\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("dpq_block_budget_spent{population=\"visits\",block=\"current\","
                              "param=\"epsilon\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("dpq_block_budget_remaining{population=\"visits\",block=\"current\","
                              "param=\"epsilon\"} 0.75\n"));
  EXPECT_THAT(text, HasSubstr("dpq_block_budget_limit{population=\"visits\",block=\"current\","
                              "param=\"delta\"} 1e-06\n"));
  // The previous block, spent to the end.
  EXPECT_THAT(text, HasSubstr("dpq_block_budget_remaining{population=\"visits\",block=\"previous\","
                              "param=\"epsilon\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("dpq_block_start_timestamp_seconds{population=\"visits\","
                              "block=\"current\"} 1772409600\n"));
  EXPECT_THAT(text, HasSubstr("dpq_block_start_timestamp_seconds{population=\"visits\","
                              "block=\"previous\"} 1771804800\n"));
  EXPECT_THAT(text, Not(HasSubstr("dpq_budget_limit{")));
  EXPECT_THAT(text, Not(HasSubstr("dpq_budget_remaining{")));
}

// Its audit chain is verified like any other, so DpqAuditVerifyStale must see its series.
TEST(MetricsTest, APerBlockPopulationHasVerificationSeriesToo) {
  const LedgerFigures figures = PerBlockPopulation();
  Metrics m([&]() -> absl::StatusOr<LedgerFigures> { return figures; });
  EXPECT_THAT(Scrape(m),
              HasSubstr("dpq_audit_verify_timestamp_seconds{population=\"visits\"} 0\n"));
}

TEST(MetricsTest, AnUnreadableLedgerAddsNoVerificationSeries) {
  Metrics m([]() -> absl::StatusOr<LedgerFigures> { return absl::UnavailableError("down"); });
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_ledger_scrape_ok 0"));
  EXPECT_THAT(text, Not(HasSubstr("dpq_audit_verify_ok{")));
}

TEST(MetricsTest, VerifiedRowsAreCountedPerPopulationAndForTheAdminLog) {
  Metrics m([]() -> absl::StatusOr<LedgerFigures> { return LedgerFigures{}; });
  m.RecordAuditVerifyRows("clinic", 7);
  m.RecordAuditVerifyRows("clinic", 3);
  m.RecordAuditVerifyRows("", 2);
  const std::string text = Scrape(m);
  EXPECT_THAT(text, HasSubstr("dpq_audit_verify_rows_total{population=\"clinic\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("dpq_audit_verify_rows_total{population=\"\"} 2\n"));
}

}  // namespace
}  // namespace dpq::metrics
