// Agreement with tests/reference/accounting.json (dp_accounting 0.6.0, Opacus 1.5.4, mpmath).
// Every record is either checked or belongs to a kind listed in kSkippedKinds with the reason.
// Checks follow tests/reference/README.md: `eq` is |impl - value| <= tol |value|; `ge` requires
// impl >= lower_bound (1e-9 relative slack) when present, else impl >= value (1 - tol), and an
// implementation of the same method must also be within tol of value.
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/advanced.h"
#include "server/dp/accounting/rdp.h"
#include "server/dp/accounting/zcdp.h"
#include "server/dp/analytic_gaussian.h"

namespace dpq::dp::accounting {
namespace {

using nlohmann::json;

const json& Reference() {
  static const json* j = [] {
    std::ifstream in(DPQ_ACCOUNTING_REFERENCE_JSON);
    auto* parsed = new json(json::parse(in));
    return parsed;
  }();
  return *j;
}

// Kinds no accountant here computes, with the reason (no silent skipping).
const std::map<std::string, std::string>& SkippedKinds() {
  static const auto* m = new std::map<std::string, std::string>{
      {"classic_gaussian_sigma",
       "Dwork-Roth Thm A.1 calibration is not used anywhere in dpq (analytic Gaussian is); listed "
       "in the file for comparison only"},
      {"dpsgd_opacus_prv_epsilon",
       "no PRV accountant (Gopi et al. 2021) here; its value is PRV's upper estimate with "
       "eps_error = 0.01, 1-4% above the pessimistic PLD (dpsgd_pld_epsilon, checked), so it is "
       "neither this method's value nor a floor for it"},
  };
  return *m;
}

enum class Method { kSame, kDifferent };

void Check(const json& r, double impl, Method method = Method::kSame) {
  const std::string id = r.at("id");
  const double v = r.at("value");
  const double tol = r.at("tolerance_rel");
  const std::string dir = r.at("direction");
  SCOPED_TRACE(id);
  ASSERT_FALSE(std::isnan(impl));
  if (dir == "eq") {
    EXPECT_LE(std::fabs(impl - v), tol * std::fabs(v)) << id << ": impl " << impl << " ref " << v;
    return;
  }
  ASSERT_EQ(dir, "ge");
  if (r.contains("lower_bound")) {
    const double lb = r.at("lower_bound");
    EXPECT_GE(impl, lb * (1 - 1e-9)) << id << ": impl " << impl << " below lower_bound " << lb;
  } else {
    EXPECT_GE(impl, v * (1 - tol)) << id << ": impl " << impl << " ref " << v;
  }
  if (method == Method::kSame) {
    EXPECT_LE(std::fabs(impl - v), tol * v) << id << ": impl " << impl << " ref " << v;
  }
}

double Eps(const std::string& name, double delta, const std::vector<PrivacyEvent>& events) {
  auto price = PriceEvents(name, delta, events);
  EXPECT_TRUE(price.ok()) << price.status();
  return price.ok() ? price->epsilon : std::nan("");
}

double PldEps(double interval, double delta, const std::vector<PrivacyEvent>& events) {
  auto acc = CreatePldAccountant(interval);
  EXPECT_TRUE(acc.ok());
  for (const auto& e : events) EXPECT_TRUE((*acc)->Compose(e).ok());
  auto eps = (*acc)->Epsilon(delta);
  EXPECT_TRUE(eps.ok()) << eps.status();
  return eps.ok() ? *eps : std::nan("");
}

std::vector<PrivacyEvent> MixedEvents(const json& params) {
  std::vector<PrivacyEvent> out;
  for (const auto& e : params.at("events")) {
    if (e.at("type") == "gaussian") {
      out.push_back(PrivacyEvent::Gaussian(e.at("noise_multiplier"), 1.0, e.at("count")));
    } else {
      out.push_back(PrivacyEvent::Laplace(e.at("laplace_scale_b"), 1.0, e.at("count")));
    }
  }
  return out;
}

PrivacyEvent DpsgdEvent(const json& p) {
  return PrivacyEvent::PoissonSubsampledGaussian(p.at("sampling_rate"), p.at("noise_multiplier"),
                                                 p.at("steps"));
}

using Handler = std::function<void(const json&)>;

const std::map<std::string, Handler>& Handlers() {
  static const auto* m = new std::map<std::string, Handler>{
      {"analytic_gaussian_sigma",
       [](const json& r) {  // server/dp/analytic_gaussian (reused, not duplicated here)
         const auto& p = r.at("params");
         auto s = AnalyticGaussianSigma(p.at("epsilon"), p.at("delta"), p.at("l2_sensitivity"));
         ASSERT_TRUE(s.ok());
         Check(r, *s);
       }},
      {"analytic_gaussian_epsilon",
       [](const json& r) {
         const auto& p = r.at("params");
         auto e = AnalyticGaussianEpsilon(p.at("sigma"), p.at("delta"), p.at("l2_sensitivity"));
         ASSERT_TRUE(e.ok());
         Check(r, *e);
       }},
      {"rdp_gaussian_composition_epsilon",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r, Eps("rdp", p.at("delta"),
                      {PrivacyEvent::Gaussian(p.at("noise_multiplier"), 1.0, p.at("count"))}));
       }},
      {"rdp_laplace_composition_epsilon",
       [](const json& r) {
         const auto& p = r.at("params");
         const double impl =
             Eps("rdp", p.at("delta"),
                 {PrivacyEvent::Laplace(p.at("laplace_scale_b"), 1.0, p.at("count"))});
         // README: reporting min(RDP eps, k eps0) is valid; order infinity gives k eps0.
         const double basic = r.at("basic_composition");
         if (std::fabs(impl - basic) <= 1e-12 * basic && basic < double(r.at("value"))) {
           EXPECT_LE(impl, double(r.at("value")));
           return;
         }
         Check(r, impl);
       }},
      {"rdp_mixed_composition_epsilon",
       [](const json& r) {
         Check(r, Eps("rdp", r.at("params").at("delta"), MixedEvents(r.at("params"))));
       }},
      {"pld_mixed_composition_epsilon",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r, PldEps(p.at("value_discretization_interval"), p.at("delta"), MixedEvents(p)));
       }},
      {"dpsgd_rdp_epsilon",
       [](const json& r) {
         Check(r, Eps("rdp", r.at("params").at("delta"), {DpsgdEvent(r.at("params"))}));
       }},
      {"dpsgd_opacus_rdp_epsilon",
       [](const json& r) {
         // Same conversion, exact fractional RDP; dp_accounting grid instead of Opacus alphas
         // (identical optima in these cases, see value_on_dp_accounting_orders).
         Check(r, Eps("rdp", r.at("params").at("delta"), {DpsgdEvent(r.at("params"))}));
       }},
      {"dpsgd_pld_epsilon",
       [](const json& r) {
         // Interval 1e-4 instead of the record's 1e-5 (coarser is valid, only larger; the 1e-4
         // reference is in values_by_discretization and within 1e-4 relative of value).
         const auto& p = r.at("params");
         Check(r, PldEps(1e-4, p.at("delta"), {DpsgdEvent(p)}));
       }},
      {"laplace_composition_comparison",
       [](const json& r) {
         const auto& p = r.at("params");
         const std::string method = p.at("method");
         const double delta = p.at("delta");
         const PrivacyEvent e = PrivacyEvent::Laplace(p.at("laplace_scale_b"), 1.0, p.at("count"));
         if (method == "basic") {
           Check(r, Eps("basic", delta, {e}));
         } else if (method == "advanced_kairouz_thm3_4") {
           Check(r, KairouzHomogeneousEpsilon(1 / double(p.at("laplace_scale_b")), p.at("count"),
                                              delta));
         } else if (method == "rdp") {
           Check(r, Eps("rdp", delta, {e}));
         } else if (method == "pld") {
           const double eps = PldEps(p.at("value_discretization_interval"), delta, {e});
           Check(r, eps);
           EXPECT_LE(eps, 4.25) << "target for the 100 x Laplace(b=10) batch";
         } else {
           ADD_FAILURE() << "unhandled laplace_composition_comparison method " << method;
         }
       }},
      {"zcdp_rho",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r, double(p.at("count")) *
                      EventRho(PrivacyEvent::Gaussian(p.at("sigma"), p.at("l2_sensitivity"))));
       }},
      {"zcdp_epsilon_simple",
       [](const json& r) {
         const auto& p = r.at("params");
         const double rho =
             double(p.at("count")) / (2 * double(p.at("sigma")) * double(p.at("sigma")));
         Check(r, ZcdpEpsilonSimple(rho, p.at("delta")));
       }},
      {"zcdp_epsilon_cks",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r,
               Eps("zcdp", p.at("delta"),
                   {PrivacyEvent::Gaussian(p.at("sigma"), p.at("l2_sensitivity"), p.at("count"))}));
       }},
      {"dpsgd_rdp_noise_calibration",
       [](const json& r) {
         const auto& p = r.at("params");
         auto z = CalibrateNoiseMultiplier("rdp", p.at("target_epsilon"), p.at("delta"),
                                           p.at("sampling_rate"), p.at("steps"));
         ASSERT_TRUE(z.ok()) << z.status();
         Check(r, *z);
         // Safe side: the returned z meets the target.
         EXPECT_LE(Eps("rdp", p.at("delta"),
                       {PrivacyEvent::PoissonSubsampledGaussian(p.at("sampling_rate"), *z,
                                                                p.at("steps"))}),
                   double(p.at("target_epsilon")));
       }},
      {"rdp_per_order_laplace",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r, LaplaceRdp(1 / double(p.at("laplace_scale_b")), p.at("order")));
       }},
      {"rdp_per_order_subsampled_gaussian",
       [](const json& r) {
         const auto& p = r.at("params");
         Check(r, SubsampledGaussianRdp(p.at("sampling_rate"), p.at("noise_multiplier"),
                                        p.at("order")));
       }},
  };
  return *m;
}

void RunKinds(const std::set<std::string>& kinds) {
  int checked = 0;
  for (const auto& r : Reference().at("records")) {
    const std::string kind = r.at("kind");
    if (!kinds.count(kind)) continue;
    Handlers().at(kind)(r);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ReferenceAgreementTest, EveryRecordKindIsCheckedOrExplicitlySkipped) {
  int total = 0;
  for (const auto& r : Reference().at("records")) {
    const std::string kind = r.at("kind");
    ++total;
    const bool handled = Handlers().count(kind) > 0;
    const bool skipped = SkippedKinds().count(kind) > 0;
    EXPECT_TRUE(handled != skipped) << "record " << r.at("id") << " of kind " << kind
                                    << " must be handled or listed as skipped";
    if (skipped)
      std::cout << "[ skipped ] " << r.at("id") << ": " << SkippedKinds().at(kind) << "\n";
  }
  EXPECT_GT(total, 70);
}

TEST(ReferenceAgreementTest, AnalyticGaussian) {
  RunKinds({"analytic_gaussian_sigma", "analytic_gaussian_epsilon"});
}
TEST(ReferenceAgreementTest, RdpPerOrder) {
  RunKinds({"rdp_per_order_laplace", "rdp_per_order_subsampled_gaussian"});
}
TEST(ReferenceAgreementTest, RdpComposition) {
  RunKinds({"rdp_gaussian_composition_epsilon", "rdp_laplace_composition_epsilon",
            "rdp_mixed_composition_epsilon", "dpsgd_rdp_epsilon", "dpsgd_opacus_rdp_epsilon"});
}
TEST(ReferenceAgreementTest, Zcdp) {
  RunKinds({"zcdp_rho", "zcdp_epsilon_simple", "zcdp_epsilon_cks"});
}
TEST(ReferenceAgreementTest, LaplaceComparison) { RunKinds({"laplace_composition_comparison"}); }
TEST(ReferenceAgreementTest, NoiseCalibration) { RunKinds({"dpsgd_rdp_noise_calibration"}); }
TEST(ReferenceAgreementTest, PldMixed) { RunKinds({"pld_mixed_composition_epsilon"}); }
TEST(ReferenceAgreementTest, PldDpsgd) { RunKinds({"dpsgd_pld_epsilon"}); }

}  // namespace
}  // namespace dpq::dp::accounting
