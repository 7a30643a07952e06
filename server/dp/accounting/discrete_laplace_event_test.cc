// The discrete-Laplace privacy event: spec syntax and validation, the exact RDP and the pessimistic
// PLD checked against brute-force sums over the integers, every accountant at most basic
// composition, and the production workload (100 releases at eps = 0.1 with D = 2^20 + 1 steps).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/pld.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/dp/accounting/rdp.h"
#include "server/dp/accounting/zcdp.h"
#include "tests/support/status_matchers.h"

namespace dpq::dp::accounting {
namespace {

using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kProductionD = (int64_t{1} << 20) + 1;
const double kProductionT = static_cast<double>(kProductionD) / 0.1;

// ---------------------------------------------------------------------------------------------
// Brute force over the integers (test reference, independent of the closed forms).

// log P(Z = k) for the discrete Laplace of scale t: log((1-r)/(1+r)) - |k|/t, r = e^{-1/t}
// (1 - r by expm1: for t ~ 1e4 the plain difference loses 12 digits).
double LogDlap(double t, int64_t k) {
  const double r = std::exp(-1 / t);
  return std::log(-std::expm1(-1 / t)) - std::log1p(r) - std::fabs(static_cast<double>(k)) / t;
}

// Outputs k in [-K, d + K]: beyond, both P and Q are below e^{-K/t} relative.
int64_t Reach(double t) { return static_cast<int64_t>(std::ceil(80 * t)) + 10; }

// Exact loss distribution of n-fold composition, as integer m (loss m/t) -> P-mass.
std::map<int64_t, double> BruteLossDistribution(double t, int64_t d, int n) {
  std::map<int64_t, double> one;
  const int64_t reach = Reach(t);
  for (int64_t k = -reach; k <= d + reach; ++k) {
    one[std::llabs(k - d) - std::llabs(k)] += std::exp(LogDlap(t, k));
  }
  std::map<int64_t, double> acc = {{0, 1.0}};
  for (int i = 0; i < n; ++i) {
    std::map<int64_t, double> next;
    for (const auto& [m1, p1] : acc) {
      for (const auto& [m2, p2] : one) next[m1 + m2] += p1 * p2;
    }
    acc = std::move(next);
  }
  return acc;
}

// delta(eps) = sum_o max(0, P(o) - e^eps Q(o)) = E_P[(1 - e^{eps - L})_+].
double BruteDelta(const std::map<int64_t, double>& dist, double t, double eps) {
  double d = 0;
  for (const auto& [m, p] : dist) {
    const double loss = static_cast<double>(m) / t;
    if (loss > eps) d += p * -std::expm1(eps - loss);
  }
  return d;
}

// Smallest eps with BruteDelta <= delta (bisection; delta(eps) is non-increasing).
double BruteEpsilon(const std::map<int64_t, double>& dist, double t, double delta) {
  double lo = 0, hi = 1;
  while (BruteDelta(dist, t, hi) > delta) hi *= 2;
  if (BruteDelta(dist, t, 0) <= delta) return 0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (BruteDelta(dist, t, mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

// D_alpha(P || Q) = 1/(alpha-1) log sum_k P(k)^alpha Q(k)^{1-alpha} (Mironov 2017, Def. 3),
// log-sum-exp over k in [-K, d + K].
double BruteRdp(double t, int64_t d, double alpha) {
  const int64_t reach = Reach(t);
  std::vector<double> terms;
  for (int64_t k = -reach; k <= d + reach; ++k) {
    terms.push_back(alpha * LogDlap(t, k) + (1 - alpha) * LogDlap(t, k - d));
  }
  const double mx = *std::max_element(terms.begin(), terms.end());
  double s = 0;
  for (double x : terms) s += std::exp(x - mx);
  return (mx + std::log(s)) / (alpha - 1);
}

double BruteKl(double t, int64_t d) {
  double kl = 0;
  for (int64_t k = -Reach(t); k <= d + Reach(t); ++k) {
    kl += std::exp(LogDlap(t, k)) * (LogDlap(t, k) - LogDlap(t, k - d));
  }
  return kl;
}

double MassOf(const PldPmf& p) {
  // Kahan summation so that the check measures the PLD, not the test's own rounding.
  double s = p.infinity_mass, c = 0;
  for (double x : p.probs) {
    const double y = x - c;
    const double t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Event syntax and validation.

TEST(DiscreteLaplaceEventTest, SpecRoundTripsExactly) {
  for (const PrivacyEvent& e :
       {PrivacyEvent::DiscreteLaplace(0.1 + 0.2, 3, 7), PrivacyEvent::DiscreteLaplace(2, 1),
        PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD, 100),
        PrivacyEvent::DiscreteLaplace(1e30, int64_t{1} << 53, kMaxEventCount)}) {
    ASSERT_TRUE(e.Validate().ok()) << e.Validate();
    auto parsed = ParsePrivacyEvent(e.ToSpec());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->kind, EventKind::kDiscreteLaplace);
    EXPECT_TRUE(parsed->SameMechanism(e)) << e.ToSpec();
    EXPECT_EQ(parsed->scale, e.scale);
    EXPECT_EQ(parsed->sensitivity, e.sensitivity);
    EXPECT_EQ(parsed->count, e.count);
    EXPECT_EQ(parsed->ToSpec(), e.ToSpec());
  }
  EXPECT_EQ(PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD).ToSpec(),
            "discrete-laplace:scale=10485770,sensitivity=1048577,count=1");
}

TEST(DiscreteLaplaceEventTest, ParsesCliSyntax) {
  auto e = ParsePrivacyEvent("discrete-laplace:scale=2.5,sensitivity=3,count=10");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind, EventKind::kDiscreteLaplace);
  EXPECT_EQ(e->scale, 2.5);
  EXPECT_EQ(e->sensitivity, 3);
  EXPECT_EQ(e->count, 10);
  EXPECT_DOUBLE_EQ(e->DiscreteLaplaceEpsilon(), 1.2);
  auto f = ParsePrivacyEvent("discrete-laplace:sensitivity=1e6,scale=1e7");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->sensitivity, 1e6);
  EXPECT_EQ(f->count, 1);
  EXPECT_DOUBLE_EQ(f->DiscreteLaplaceEpsilon(), 0.1);
}

TEST(DiscreteLaplaceEventTest, ValidationNamesTheParameter) {
  const auto bad = [](const PrivacyEvent& e, const char* what) {
    EXPECT_THAT(e.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)))
        << e.ToSpec();
  };
  bad(PrivacyEvent::DiscreteLaplace(0, 1), "scale");
  bad(PrivacyEvent::DiscreteLaplace(-2, 1), "scale");
  bad(PrivacyEvent::DiscreteLaplace(std::nan(""), 1), "scale");
  bad(PrivacyEvent::DiscreteLaplace(kInf, 1), "scale");
  bad(PrivacyEvent::DiscreteLaplace(1e-320, int64_t{1} << 40), "scale");  // D/T overflows
  bad(PrivacyEvent::DiscreteLaplace(2, 0), "sensitivity");
  bad(PrivacyEvent::DiscreteLaplace(2, -3), "sensitivity");
  // 2^53 + 1 would round to 2^53 in a double: rejected, not silently lowered.
  bad(PrivacyEvent::DiscreteLaplace(2, (int64_t{1} << 53) + 1), "sensitivity");
  bad(PrivacyEvent::DiscreteLaplace(2, 1, 0), "count");
  PrivacyEvent fractional = PrivacyEvent::DiscreteLaplace(2, 1);
  fractional.sensitivity = 1.5;
  bad(fractional, "sensitivity");
  fractional.sensitivity = std::nan("");
  bad(fractional, "sensitivity");
  EXPECT_TRUE(PrivacyEvent::DiscreteLaplace(2, int64_t{1} << 53).Validate().ok());
}

TEST(DiscreteLaplaceEventTest, RejectsMalformedSpecs) {
  const auto bad = [](const char* spec, const char* what) {
    EXPECT_THAT(ParsePrivacyEvent(spec),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)))
        << spec;
  };
  bad("discrete-laplace:scale=2", "sensitivity");  // sensitivity is required
  bad("discrete-laplace:sensitivity=2", "scale");
  bad("discrete-laplace:scale=2,sensitivity=1.5", "sensitivity");
  bad("discrete-laplace:scale=2,sensitivity=0", "sensitivity");
  bad("discrete-laplace:scale=2,sensitivity=9007199254740994", "sensitivity");
  bad("discrete-laplace:scale=0,sensitivity=1", "scale");
  bad("discrete-laplace:scale=nan,sensitivity=1", "scale");
  bad("discrete-laplace:scale=2,sensitivity=1,sigma=1", "sigma");
  bad("discrete-laplace:scale=2,sensitivity=1,count=0", "count");
  bad("discrete-laplace:scale=2,scale=3,sensitivity=1", "scale");
  bad("discrete_laplace:scale=2,sensitivity=1", "discrete-laplace");  // the error lists the kinds
}

TEST(DiscreteLaplaceEventTest, SameMechanismComparesKindAndParameters) {
  const PrivacyEvent e = PrivacyEvent::DiscreteLaplace(4, 2, 3);
  EXPECT_TRUE(e.SameMechanism(PrivacyEvent::DiscreteLaplace(4, 2, 9)));
  EXPECT_FALSE(e.SameMechanism(PrivacyEvent::DiscreteLaplace(4, 3)));
  EXPECT_FALSE(e.SameMechanism(PrivacyEvent::DiscreteLaplace(4.5, 2)));
  EXPECT_FALSE(e.SameMechanism(PrivacyEvent::Laplace(4, 2)));  // same fields, other kind
  EXPECT_DOUBLE_EQ(e.DiscreteLaplaceEpsilon(), 0.5);
  EXPECT_EQ(EventMaxDivergence(e), 0.5);
  EXPECT_DOUBLE_EQ(EventRho(e), 0.125);
}

// ---------------------------------------------------------------------------------------------
// RDP.

TEST(DiscreteLaplaceRdpTest, MatchesBruteForceSum) {
  for (auto [t, d] :
       std::vector<std::pair<double, int64_t>>{{2, 1}, {2, 3}, {0.7, 5}, {10, 7}, {0.25, 2}}) {
    for (double alpha : DefaultRdpOrders()) {
      const double want = BruteRdp(t, d, alpha);
      const double got = DiscreteLaplaceRdp(t, static_cast<double>(d), alpha);
      EXPECT_NEAR(got, want, 1e-10 * std::max(1.0, want))
          << "t=" << t << " d=" << d << " alpha=" << alpha;
      EXPECT_LE(got, PureDpRdp(d / t, alpha));
    }
    EXPECT_NEAR(DiscreteLaplaceRdp(t, static_cast<double>(d), 1.0), BruteKl(t, d), 1e-12)
        << t << " " << d;
    EXPECT_EQ(DiscreteLaplaceRdp(t, static_cast<double>(d), kInf), d / t);
  }
}

TEST(DiscreteLaplaceRdpTest, SensitivityOneIsRandomizedResponse) {
  // D = 1: loss +-1/t with P-masses 1/(1+r), r/(1+r): exactly the dominating pair of pure
  // (1/t)-DP, whose D_alpha is 1/(alpha-1) log((e^{a e} + e^{-(a-1) e}) / (1 + e^e)), e = 1/t.
  const double t = 3, e = 1 / t;
  for (double alpha : {1.5, 2.0, 10.0, 128.0}) {
    const double rr =
        std::log((std::exp(alpha * e) + std::exp(-(alpha - 1) * e)) / (1 + std::exp(e))) /
        (alpha - 1);
    EXPECT_NEAR(DiscreteLaplaceRdp(t, 1, alpha), rr, 1e-14);
  }
}

TEST(DiscreteLaplaceRdpTest, ApproachesContinuousLaplaceForFineGrids) {
  // t -> inf with d/t fixed: the discrete pair tends to the continuous one (Mironov 2017, Prop. 6).
  for (double alpha : DefaultRdpOrders()) {
    const double cont = LaplaceRdp(0.1, alpha);
    const double disc = DiscreteLaplaceRdp(kProductionT, static_cast<double>(kProductionD), alpha);
    EXPECT_NEAR(disc, cont, 1e-5 * cont) << alpha;
    EXPECT_LE(disc, PureDpRdp(kProductionD / kProductionT, alpha));
  }
  // A coarse grid (d = 1) sits above the continuous Laplace at the same eps: the continuous RDP is
  // not an upper bound for the discrete mechanism.
  EXPECT_GT(DiscreteLaplaceRdp(10, 1, 2.0), LaplaceRdp(0.1, 2.0));
}

TEST(DiscreteLaplaceRdpTest, HugeOrdersAndSensitivitiesStayFinite) {
  for (double alpha : {1.1, 63.0, 1024.0, 1e6}) {
    for (auto [t, d] : std::vector<std::pair<double, double>>{
             {1e-3, 1}, {1, 9007199254740992.0}, {1e15, 3}, {1e-300, 1}, {1e-300, 2}}) {
      const double v = DiscreteLaplaceRdp(t, d, alpha);
      EXPECT_TRUE(std::isfinite(v)) << t << " " << d << " " << alpha;
      EXPECT_GE(v, 0);
      EXPECT_LE(v, PureDpRdp(d / t, alpha));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// PLD.

TEST(DiscreteLaplacePldTest, MassSumsToOne) {
  for (auto [t, d] : std::vector<std::pair<double, int64_t>>{{2, 1},
                                                             {2, 3},
                                                             {0.5, 4},
                                                             {1000, 3000},
                                                             {kProductionT, kProductionD},
                                                             {1e8, int64_t{1} << 30},
                                                             {9e14, int64_t{1} << 53},
                                                             {kProductionT / 20, kProductionD}}) {
    for (double h : {1e-4, 1e-3}) {
      auto pmf = PldForEvent(PrivacyEvent::DiscreteLaplace(t, d), h, PldDirection::kRemove);
      ASSERT_TRUE(pmf.ok()) << pmf.status();
      EXPECT_NEAR(MassOf(*pmf), 1.0, 1e-15) << "t=" << t << " d=" << d << " h=" << h;
      EXPECT_EQ(pmf->infinity_mass, 0);
      for (double p : pmf->probs) EXPECT_GE(p, 0);
      // Support: from ceil(-eps0/h) to ceil(eps0/h) (the pessimistic grid points of -+eps0).
      const double eps0 = d / t;
      EXPECT_EQ(pmf->lower, static_cast<int64_t>(std::ceil(-eps0 / h - 1e-12)));
      EXPECT_EQ(pmf->lower + static_cast<int64_t>(pmf->probs.size()) - 1,
                static_cast<int64_t>(std::ceil(eps0 / h - 1e-12)));
    }
  }
}

TEST(DiscreteLaplacePldTest, SensitivityOneEqualsPureDpPld) {
  // D = 1 is randomized response: the same pessimistic PLD as the pure (1/t)-DP dominating pair.
  const double t = 2.5;
  auto a = PldForEvent(PrivacyEvent::DiscreteLaplace(t, 1), 1e-4, PldDirection::kRemove);
  auto b = PldForEvent(PrivacyEvent::PureDp(1 / t), 1e-4, PldDirection::kRemove);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->lower, b->lower);
  ASSERT_EQ(a->probs.size(), b->probs.size());
  for (size_t i = 0; i < a->probs.size(); ++i) EXPECT_NEAR(a->probs[i], b->probs[i], 1e-16) << i;
}

TEST(DiscreteLaplacePldTest, ClosedFormBucketsMatchAtomByAtomPlacement) {
  // The bucket walk against direct placement of each output's mass on ceil(loss/h - 1e-12):
  // 50 and 5000 atoms per bucket, and a coarse t with mostly empty buckets.
  for (auto [t, d, h] : std::vector<std::tuple<double, int64_t, double>>{
           {1e4, 20000, 1e-2}, {1e4, 20000, 1.0}, {0.3, 7, 1e-4}, {37.5, 1001, 3e-3}}) {
    auto pmf = PldForEvent(PrivacyEvent::DiscreteLaplace(t, d), h, PldDirection::kRemove);
    ASSERT_TRUE(pmf.ok());
    std::vector<double> want(pmf->probs.size(), 0.0), comp(want.size(), 0.0);
    const int64_t reach = static_cast<int64_t>(40 * t) + 40;  // e^-40 ~ 4e-18 of mass left out
    for (int64_t k = -reach; k <= d + reach; ++k) {
      const int64_t j = std::clamp<int64_t>(k, 0, d);
      const double loss = static_cast<double>(d - 2 * j) / t;
      const int64_t n = static_cast<int64_t>(std::ceil(loss / h - 1e-12)) - pmf->lower;
      ASSERT_GE(n, 0);
      ASSERT_LT(n, static_cast<int64_t>(want.size()));
      // Kahan: 4e5 plain additions into one bucket would be off by ~1e-13.
      const double y = std::exp(LogDlap(t, k)) - comp[n];
      const double sum = want[n] + y;
      comp[n] = (sum - want[n]) - y;
      want[n] = sum;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(pmf->probs[i], want[i], 1e-14)
          << "t=" << t << " d=" << d << " h=" << h << " bin " << i;
    }
  }
}

TEST(DiscreteLaplacePldTest, PessimisticAndCloseToBruteForceHockeyStick) {
  const double h = 1e-4;
  for (auto [t, d] : std::vector<std::pair<double, int64_t>>{{2, 1}, {2, 3}, {0.8, 4}, {7, 5}}) {
    for (int n : {1, 3}) {
      const auto dist = BruteLossDistribution(t, d, n);
      auto acc = CreatePldAccountant(h);
      ASSERT_TRUE(acc.ok());
      ASSERT_TRUE((*acc)->Compose(PrivacyEvent::DiscreteLaplace(t, d, n)).ok());
      auto one = PldForEvent(PrivacyEvent::DiscreteLaplace(t, d), h, PldDirection::kRemove);
      ASSERT_TRUE(one.ok());
      auto many = SelfComposePld(*one, n);
      ASSERT_TRUE(many.ok());
      for (double delta : {1e-1, 1e-3, 1e-5, 1e-8}) {
        const double exact = BruteEpsilon(dist, t, delta);
        auto got = (*acc)->Epsilon(delta);
        ASSERT_TRUE(got.ok());
        // Never below the exact value; above by at most one grid step per release (each loss is
        // rounded up by less than h).
        EXPECT_GE(*got, exact - 1e-12)
            << "t=" << t << " d=" << d << " n=" << n << " delta=" << delta;
        EXPECT_LE(*got, exact + n * h + 1e-9)
            << "t=" << t << " d=" << d << " n=" << n << " delta=" << delta;
      }
      for (double eps : {0.0, 0.1, 0.5, 1.0, 2.0}) {
        EXPECT_GE(PldDelta(*many, eps), BruteDelta(dist, t, eps) - 1e-15)
            << t << " " << d << " " << eps;
      }
    }
  }
}

TEST(DiscreteLaplacePldTest, SmallerShiftsAreDominatedBySensitivity) {
  // The event prices the shift D; neighbours that move the integer by d < D must cost no more
  // (monotone likelihood ratio of the log-concave discrete Laplace; see privacy_event.h).
  for (double t : {0.6, 2.0, 9.0}) {
    const int64_t d_max = 6;
    const auto worst = BruteLossDistribution(t, d_max, 2);
    for (int64_t d = 1; d < d_max; ++d) {
      const auto dist = BruteLossDistribution(t, d, 2);
      for (double eps = 0; eps < 2.0 * d_max / t; eps += 0.05) {
        EXPECT_LE(BruteDelta(dist, t, eps), BruteDelta(worst, t, eps) + 1e-15)
            << t << " " << d << " " << eps;
      }
      for (double alpha : {1.5, 4.0, 32.0}) {
        EXPECT_LE(DiscreteLaplaceRdp(t, static_cast<double>(d), alpha),
                  DiscreteLaplaceRdp(t, static_cast<double>(d_max), alpha));
      }
    }
  }
}

TEST(DiscreteLaplacePldTest, ContinuousLaplacePldIsNotAnUpperBound) {
  // Why the event exists: the continuous-Laplace PLD under-reports the discrete mechanism.
  const double t = 2;
  const int64_t d = 1;
  const auto dist = BruteLossDistribution(t, d, 1);
  auto cont = PldForEvent(PrivacyEvent::Laplace(t, 1), 1e-4, PldDirection::kRemove);
  auto disc = PldForEvent(PrivacyEvent::DiscreteLaplace(t, d), 1e-4, PldDirection::kRemove);
  ASSERT_TRUE(cont.ok() && disc.ok());
  EXPECT_LT(PldDelta(*cont, 0.1), BruteDelta(dist, t, 0.1));
  EXPECT_GE(PldDelta(*disc, 0.1), BruteDelta(dist, t, 0.1));
}

TEST(DiscreteLaplacePldTest, LargeSensitivityNeedsTooManyBinsIsResourceExhausted) {
  // eps0 = 2^40: the grid would need ~2^54 bins.
  auto pmf =
      PldForEvent(PrivacyEvent::DiscreteLaplace(1, int64_t{1} << 40), 1e-4, PldDirection::kRemove);
  EXPECT_THAT(pmf.status(), StatusIs(absl::StatusCode::kResourceExhausted));
}

// ---------------------------------------------------------------------------------------------
// Accountants.

const std::vector<std::string> kAll = {"basic", "advanced", "rdp", "zcdp", "pld"};

TEST(DiscreteLaplaceAccountantTest, EveryAccountantAcceptsItAndIsAtMostBasic) {
  const std::vector<std::vector<PrivacyEvent>> workloads = {
      {PrivacyEvent::DiscreteLaplace(2, 3, 5)},
      {PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD, 100)},
      {PrivacyEvent::DiscreteLaplace(kProductionT / 5, kProductionD, 10),
       PrivacyEvent::DiscreteLaplace(40, 7, 4), PrivacyEvent::PureDp(0.2, 3),
       PrivacyEvent::Laplace(10, 1, 2)},
      {PrivacyEvent::DiscreteLaplace(1.5, 1, 1)},
  };
  for (const auto& events : workloads) {
    for (double delta : {1e-3, 1e-5, 1e-9}) {
      auto basic = PriceEvents("basic", delta, events);
      ASSERT_TRUE(basic.ok()) << basic.status();
      for (const auto& name : kAll) {
        auto price = PriceEvents(name, delta, events);
        ASSERT_TRUE(price.ok()) << name << ": " << price.status();
        EXPECT_LE(price->epsilon, basic->epsilon * (1 + 1e-12)) << name << " delta=" << delta;
        EXPECT_GT(price->epsilon, 0) << name;
      }
    }
  }
}

TEST(DiscreteLaplaceAccountantTest, BasicAndAdvancedChargeThePureEpsilon) {
  const std::vector<PrivacyEvent> dl = {PrivacyEvent::DiscreteLaplace(25, 3, 40)};
  const std::vector<PrivacyEvent> pure = {PrivacyEvent::PureDp(3.0 / 25, 40)};
  for (const char* name : {"basic", "advanced", "zcdp"}) {
    auto a = PriceEvents(name, 1e-6, dl);
    auto b = PriceEvents(name, 1e-6, pure);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_DOUBLE_EQ(a->epsilon, b->epsilon) << name;
  }
  // RDP: the exact discrete curve is below the generic pure-DP one.
  auto a = PriceEvents("rdp", 1e-6, dl);
  auto b = PriceEvents("rdp", 1e-6, pure);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->epsilon, b->epsilon);
}

TEST(DiscreteLaplaceAccountantTest, StateRoundTrips) {
  for (const auto& name : kAll) {
    auto acc = CreateAccountant(name);
    ASSERT_TRUE(acc.ok());
    ASSERT_TRUE((*acc)->Compose(PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD, 3)).ok());
    ASSERT_TRUE((*acc)->Compose(PrivacyEvent::DiscreteLaplace(2, 3)).ok());
    ASSERT_TRUE((*acc)->Compose(PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD, 2)).ok());
    const std::string state = (*acc)->SerializeState();
    auto back = Accountant::Deserialize(state);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)->SerializeState(), state);
    auto e1 = (*acc)->Epsilon(1e-6);
    auto e2 = (*back)->Epsilon(1e-6);
    ASSERT_TRUE(e1.ok() && e2.ok());
    EXPECT_EQ(*e1, *e2) << name;
    if (name == "pld") {
      EXPECT_THAT(state,
                  HasSubstr("event=discrete-laplace:scale=10485770,sensitivity=1048577,count=5"));
    }
  }
}

TEST(DiscreteLaplaceAccountantTest, InvalidEventLeavesStateUnchanged) {
  for (const auto& name : kAll) {
    auto acc = CreateAccountant(name);
    ASSERT_TRUE(acc.ok());
    const std::string before = (*acc)->SerializeState();
    EXPECT_THAT((*acc)->Compose(PrivacyEvent::DiscreteLaplace(2, 0)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sensitivity")));
    EXPECT_EQ((*acc)->SerializeState(), before) << name;
  }
}

// The production workload: 100 discrete-Laplace releases at eps = 0.1 each, D = 2^20 + 1 grid
// steps (gamma = Delta 2^-20 plus one step for rounding), T = D / 0.1. The continuous Laplace PLD
// gives 4.2203 at delta = 1e-5 and the generic pure-DP RDP 4.53; basic is 10.
TEST(DiscreteLaplaceAccountantTest, ProductionWorkloadPricesNearContinuousLaplace) {
  const double delta = 1e-5;
  const std::vector<PrivacyEvent> events = {
      PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD, 100)};
  std::map<std::string, double> eps;
  for (const auto& name : kAll) {
    auto p = PriceEvents(name, delta, events);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    eps[name] = p->epsilon;
  }
  auto cont = PriceEvents("pld", delta, {PrivacyEvent::Laplace(10, 1, 100)});
  auto cont_rdp = PriceEvents("rdp", delta, {PrivacyEvent::Laplace(10, 1, 100)});
  auto pure_rdp = PriceEvents("rdp", delta, {PrivacyEvent::PureDp(0.1, 100)});
  ASSERT_TRUE(cont.ok() && cont_rdp.ok() && pure_rdp.ok());
  std::cout << "100 x discrete-laplace eps=0.1, D=2^20+1, delta=1e-5:\n"
            << absl::StrFormat("  pld %.6f  rdp %.6f  zcdp %.6f  advanced %.6f  basic %.6f\n",
                               eps["pld"], eps["rdp"], eps["zcdp"], eps["advanced"], eps["basic"])
            << absl::StrFormat("  continuous laplace: pld %.6f  rdp %.6f; pure-DP rdp %.6f\n",
                               cont->epsilon, cont_rdp->epsilon, pure_rdp->epsilon);
  EXPECT_LE(eps["pld"], 4.25);
  EXPECT_GE(eps["pld"], 4.20);  // the exact value is close to the continuous 4.2203
  EXPECT_LT(eps["rdp"], pure_rdp->epsilon);
  EXPECT_NEAR(eps["rdp"], cont_rdp->epsilon, 1e-3);
  EXPECT_NEAR(eps["basic"], 10, 1e-9);
}

TEST(DiscreteLaplaceAccountantTest, OneReleaseComposesInMilliseconds) {
  const PrivacyEvent e = PrivacyEvent::DiscreteLaplace(kProductionT, kProductionD);
  const auto t0 = std::chrono::steady_clock::now();
  auto pmf = PldForEvent(e, kDefaultPldInterval, PldDirection::kRemove);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(pmf.ok());
  auto rdp = CreateAccountant("rdp");
  ASSERT_TRUE(rdp.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*rdp)->Compose(e).ok());
  const auto t2 = std::chrono::steady_clock::now();
  const double pld_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double rdp_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / 100;
  std::cout << absl::StrFormat("PLD build %.3f ms (%d bins); RDP compose %.4f ms per event\n",
                               pld_ms, static_cast<int>(pmf->probs.size()), rdp_ms);
  // Generous bounds (shared 2-core machine); measured values are printed above.
  EXPECT_LT(pld_ms, 200);
  EXPECT_LT(rdp_ms, 5);
}

}  // namespace
}  // namespace dpq::dp::accounting
