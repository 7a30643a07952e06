// Training runs priced by the ledger rules (step_pricing.h) agree with the DP-SGD records of
// tests/reference/accounting.json (dp_accounting 0.6.0, Opacus 1.5.4). Checks as in
// server/dp/accounting/reference_agreement_test.cc (tests/reference/README.md): `ge` needs
// impl >= lower_bound (or value (1 - tol)) and, for the same method, |impl - value| <= tol value.
#include <cmath>
#include <fstream>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/dp/accounting/accountant.h"
#include "server/query/privacy_units.h"
#include "server/training/step_pricing.h"

namespace dpq::training {
namespace {

using nlohmann::json;

const json& Reference() {
  static const json* j = [] {
    std::ifstream in(DPQ_ACCOUNTING_REFERENCE_JSON);
    return new json(json::parse(in));
  }();
  return *j;
}

void CheckAgainst(const json& r, double impl, bool same_method) {
  const double v = r.at("value");
  const double tol = r.at("tolerance_rel");
  SCOPED_TRACE(std::string(r.at("id")));
  ASSERT_FALSE(std::isnan(impl));
  if (r.at("direction") == "eq") {
    EXPECT_LE(std::fabs(impl - v), tol * std::fabs(v)) << impl << " vs " << v;
    return;
  }
  if (r.contains("lower_bound")) {
    EXPECT_GE(impl, double(r.at("lower_bound")) * (1 - 1e-9));
  } else {
    EXPECT_GE(impl, v * (1 - tol));
  }
  if (same_method) {
    EXPECT_LE(std::fabs(impl - v), tol * v) << impl << " vs " << v;
  }
}

RunSpec RunOf(const json& p, double z) { return RunSpec{p.at("sampling_rate"), z, p.at("delta")}; }

int ForKind(const std::string& kind, const std::function<void(const json&)>& check) {
  int n = 0;
  for (const auto& r : Reference().at("records")) {
    if (r.at("kind") != kind) continue;
    check(r);
    ++n;
  }
  return n;
}

// An rdp ledger composes the steps: a run's epsilon and the charge of one report of all its steps
// are dp_accounting's RdpAccountant value (same method, within tolerance).
TEST(TrainingReferenceTest, RdpLedgerRunMatchesDpAccountingRdp) {
  for (const char* kind : {"dpsgd_rdp_epsilon", "dpsgd_opacus_rdp_epsilon"}) {
    EXPECT_GT(ForKind(kind,
                      [](const json& r) {
                        const auto& p = r.at("params");
                        const RunSpec run = RunOf(p, p.at("noise_multiplier"));
                        auto eps =
                            RunEpsilon(dp::accounting::AccountantKind::kRdp, run, p.at("steps"));
                        ASSERT_TRUE(eps.ok()) << eps.status();
                        CheckAgainst(r, *eps, /*same_method=*/true);
                        auto charge = PriceStepReport(dp::accounting::AccountantKind::kRdp, run,
                                                      p.at("steps"));
                        ASSERT_TRUE(charge.ok()) << charge.status();
                        CheckAgainst(r, query::EpsilonFromUnits(charge->epsilon_units),
                                     /*same_method=*/true);
                      }),
              0)
        << kind;
  }
}

// A pld ledger prices each report by min(RDP, PLD): at these sizes PLD wins, so the charge must
// agree with dp_accounting's pessimistic PLD within its tolerance (and never go below it).
TEST(TrainingReferenceTest, PldLedgerReportMatchesDpAccountingPld) {
  EXPECT_GT(ForKind("dpsgd_pld_epsilon",
                    [](const json& r) {
                      const auto& p = r.at("params");
                      const RunSpec run = RunOf(p, p.at("noise_multiplier"));
                      auto charge =
                          PriceStepReport(dp::accounting::AccountantKind::kPld, run, p.at("steps"));
                      ASSERT_TRUE(charge.ok()) << charge.status();
                      EXPECT_EQ(charge->method, "pld");
                      CheckAgainst(r, query::EpsilonFromUnits(charge->epsilon_units),
                                   /*same_method=*/true);
                    }),
            0);
}

// `training start --target-epsilon E --steps N` calibrates z with CalibrateNoiseMultiplier("rdp"):
// the z agrees with the reference, and a run of N steps at that z costs at most E on an rdp ledger.
TEST(TrainingReferenceTest, CalibratedRunStaysWithinTarget) {
  EXPECT_GT(ForKind("dpsgd_rdp_noise_calibration",
                    [](const json& r) {
                      const auto& p = r.at("params");
                      auto z = dp::accounting::CalibrateNoiseMultiplier(
                          "rdp", p.at("target_epsilon"), p.at("delta"), p.at("sampling_rate"),
                          p.at("steps"));
                      ASSERT_TRUE(z.ok());
                      CheckAgainst(r, *z, /*same_method=*/true);
                      auto eps = RunEpsilon(dp::accounting::AccountantKind::kRdp, RunOf(p, *z),
                                            p.at("steps"));
                      ASSERT_TRUE(eps.ok());
                      EXPECT_LE(*eps, double(p.at("target_epsilon")) * (1 + 1e-9));
                    }),
            0);
}

}  // namespace
}  // namespace dpq::training
