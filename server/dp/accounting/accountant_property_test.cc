// Properties every accountant must have: composition is monotone, order-independent where the
// bound is a function of sums (basic, advanced, rdp, zcdp), never worse than basic composition for
// pure / (eps, delta) events, and its state round-trips exactly through SerializeState.
#include "server/dp/accounting/accountant.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/pld.h"
#include "server/dp/accounting/zcdp.h"
#include "tests/support/status_matchers.h"

namespace dpq::dp::accounting {
namespace {

using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;

const std::vector<std::string> kAll = {"basic", "advanced", "rdp", "zcdp", "pld"};
const std::vector<std::string> kSums = {"basic", "advanced", "rdp", "zcdp"};
constexpr double kDelta = 1e-5;

std::unique_ptr<Accountant> Make(const std::string& name) {
  if (name == "pld") return std::move(CreatePldAccountant(1e-3)).value();  // coarse: fast tests
  return std::move(CreateAccountant(name)).value();
}

// Deterministic pseudo-random workload (test data only, not a noise source).
std::vector<PrivacyEvent> PureApproxEvents(uint32_t seed, int n) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> eps(0.01, 0.5);
  std::vector<PrivacyEvent> out;
  for (int i = 0; i < n; ++i) {
    switch (gen() % 3) {
      case 0: out.push_back(PrivacyEvent::Laplace(1 / eps(gen), 1.0, 1 + gen() % 5)); break;
      case 1: out.push_back(PrivacyEvent::PureDp(eps(gen), 1 + gen() % 3)); break;
      default: out.push_back(PrivacyEvent::ApproxDp(eps(gen), 1e-8 * (1 + gen() % 10))); break;
    }
  }
  return out;
}

std::vector<PrivacyEvent> AllKindsEvents(uint32_t seed, int n) {
  std::mt19937 gen(seed);
  std::vector<PrivacyEvent> out = PureApproxEvents(seed, n);
  std::uniform_real_distribution<double> z(0.8, 4);
  for (int i = 0; i < n / 2; ++i) {
    if (gen() % 2)
      out.push_back(PrivacyEvent::Gaussian(z(gen), 1.0, 1 + gen() % 4));
    else
      out.push_back(PrivacyEvent::PoissonSubsampledGaussian(0.01, z(gen), 10 + gen() % 50));
  }
  std::shuffle(out.begin(), out.end(), gen);
  return out;
}

bool Accepts(const std::string& name, const PrivacyEvent& e) {
  return (name != "basic" && name != "advanced") || e.kind == EventKind::kLaplace ||
         e.kind == EventKind::kPureDp || e.kind == EventKind::kApproxDp;
}

TEST(AccountantPropertyTest, CompositionIsMonotone) {
  for (const auto& name : kAll) {
    SCOPED_TRACE(name);
    auto acc = Make(name);
    double prev = 0;
    const auto events = name == "pld" ? PureApproxEvents(1, 6) : AllKindsEvents(1, 12);
    for (const auto& e : events) {
      if (!Accepts(name, e)) continue;
      ASSERT_TRUE(acc->Compose(e).ok());
      auto eps = acc->Epsilon(kDelta);
      ASSERT_TRUE(eps.ok()) << eps.status();
      EXPECT_GE(*eps, prev * (1 - 1e-12)) << e.ToSpec();
      prev = *eps;
    }
    EXPECT_GT(prev, 0);
  }
}

TEST(AccountantPropertyTest, CompositionIsOrderIndependent) {
  for (const auto& name : kSums) {
    SCOPED_TRACE(name);
    auto events = AllKindsEvents(2, 16);
    events.erase(std::remove_if(events.begin(), events.end(),
                                [&](const PrivacyEvent& e) { return !Accepts(name, e); }),
                 events.end());
    auto a = Make(name), b = Make(name);
    for (const auto& e : events) ASSERT_TRUE(a->Compose(e).ok());
    std::reverse(events.begin(), events.end());
    for (const auto& e : events) ASSERT_TRUE(b->Compose(e).ok());
    EXPECT_NEAR(*a->Epsilon(kDelta), *b->Epsilon(kDelta), 1e-12 * *a->Epsilon(kDelta));
  }
  // PLD is a multiset of mechanisms: order changes nothing at all.
  auto events = PureApproxEvents(3, 5);
  auto a = Make("pld"), b = Make("pld");
  for (const auto& e : events) ASSERT_TRUE(a->Compose(e).ok());
  std::reverse(events.begin(), events.end());
  for (const auto& e : events) ASSERT_TRUE(b->Compose(e).ok());
  EXPECT_NEAR(*a->Epsilon(kDelta), *b->Epsilon(kDelta), 1e-12);
}

TEST(AccountantPropertyTest, EveryAccountantIsAtMostBasic) {
  for (uint32_t seed : {4u, 5u, 6u}) {
    for (int n : {1, 3, 20}) {
      const auto events = PureApproxEvents(seed, n);
      auto basic = Make("basic");
      for (const auto& e : events) ASSERT_TRUE(basic->Compose(e).ok());
      const double b = *basic->Epsilon(kDelta);
      for (const auto& name : kAll) {
        auto acc = Make(name);
        for (const auto& e : events) ASSERT_TRUE(acc->Compose(e).ok());
        EXPECT_LE(*acc->Epsilon(kDelta), b * (1 + 1e-12)) << name << " seed " << seed << " n " << n;
      }
    }
  }
}

TEST(AccountantPropertyTest, StateRoundTripsExactly) {
  for (const auto& name : kAll) {
    SCOPED_TRACE(name);
    auto acc = Make(name);
    const auto events = name == "pld" ? PureApproxEvents(7, 4) : AllKindsEvents(7, 10);
    for (const auto& e : events) {
      if (Accepts(name, e)) {
        ASSERT_TRUE(acc->Compose(e).ok());
      }
    }
    const std::string state = acc->SerializeState();
    auto back = Accountant::Deserialize(state);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << state;
    EXPECT_EQ((*back)->name(), name);
    EXPECT_EQ((*back)->SerializeState(), state);
    EXPECT_EQ(*(*back)->Epsilon(kDelta), *acc->Epsilon(kDelta));
    // Composing after a round trip equals composing without one.
    const auto more = PrivacyEvent::PureDp(0.05, 2);
    ASSERT_TRUE(acc->Compose(more).ok());
    ASSERT_TRUE((*back)->Compose(more).ok());
    EXPECT_EQ((*back)->SerializeState(), acc->SerializeState());
  }
}

TEST(AccountantPropertyTest, DeserializeRejectsMalformedState) {
  for (const char* bad :
       {"", "hello", "dpq-accountant/2 rdp\n", "dpq-accountant/1 magic\n",
        "dpq-accountant/1 basic\nsum_eps=1\n", "dpq-accountant/1 basic\nsum_eps=x\nsum_delta=0\n",
        "dpq-accountant/1 rdp\ngrid=other\n",
        "dpq-accountant/1 pld\ninterval=0.001\nevent=laplace:scale=-1\n"}) {
    EXPECT_THAT(Accountant::Deserialize(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(AccountantPropertyTest, FilterValidityFlags) {
  for (const auto& name : kSums) EXPECT_TRUE(Make(name)->valid_for_adaptive_filter()) << name;
  EXPECT_FALSE(Make("pld")->valid_for_adaptive_filter());
}

TEST(AccountantPropertyTest, BasicAndAdvancedRejectGaussianNoise) {
  for (const char* name : {"basic", "advanced"}) {
    auto acc = Make(name);
    EXPECT_THAT(acc->Compose(PrivacyEvent::Gaussian(1.0)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("approx")));
    EXPECT_EQ(*acc->Epsilon(kDelta), 0);  // state unchanged
  }
}

TEST(AccountantPropertyTest, RejectsBadInputsNamingThem) {
  EXPECT_THAT(CreateAccountant("moments"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("accountant")));
  auto acc = Make("rdp");
  EXPECT_THAT(acc->Epsilon(0), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delta")));
  EXPECT_THAT(acc->Compose(PrivacyEvent::Laplace(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scale")));
  EXPECT_THAT(CalibrateNoiseMultiplier("rdp", 0, 1e-5, 0.01, 100),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("target_epsilon")));
  EXPECT_THAT(CalibrateNoiseMultiplier("basic", 1, 1e-5, 0.01, 100),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AccountantPropertyTest, AdditiveDeltaIsSpentBeforeConversion) {
  for (const char* name : {"rdp", "zcdp"}) {
    auto acc = Make(name);
    ASSERT_TRUE(acc->Compose(PrivacyEvent::Gaussian(2.0, 1.0, 10)).ok());
    const double before = *acc->Epsilon(kDelta);
    ASSERT_TRUE(acc->Compose(PrivacyEvent::ApproxDp(0.3, 4e-6)).ok());
    // eps(delta - 4e-6) of the Gaussian part, plus 0.3.
    EXPECT_GT(*acc->Epsilon(kDelta), before + 0.3);
    ASSERT_TRUE(acc->Compose(PrivacyEvent::ApproxDp(0.3, 7e-6)).ok());
    EXPECT_TRUE(std::isinf(*acc->Epsilon(kDelta))) << name;
  }
}

TEST(AccountantPropertyTest, ZcdpCksIsNeverLooserThanSimpleNorBelowGrid) {
  for (double rho : {1e-4, 0.01, 0.5, 5.0, 50.0}) {
    for (double delta : {1e-3, 1e-5, 1e-9}) {
      const double cks = ZcdpEpsilonCks(rho, delta);
      EXPECT_LE(cks, ZcdpEpsilonSimple(rho, delta));
      // A fine order grid never beats the continuous infimum by more than rounding.
      for (double a = 1.001; a < 1e4; a *= 1.001) {
        const double v = a * rho + std::log1p(-1 / a) - (std::log(delta) + std::log(a)) / (a - 1);
        ASSERT_GE(v, cks - 1e-9 * cks) << rho << " " << delta << " " << a;
      }
    }
  }
}

TEST(AccountantPropertyTest, PldDeltaAndEpsilonAreInverse) {
  auto one = PldForEvent(PrivacyEvent::Laplace(10), 1e-4, PldDirection::kRemove);
  ASSERT_TRUE(one.ok());
  auto many = SelfComposePld(*one, 100);
  ASSERT_TRUE(many.ok());
  const double eps = PldEpsilon(*many, 1e-5);
  EXPECT_NEAR(PldDelta(*many, eps), 1e-5, 1e-12);
  EXPECT_GT(PldDelta(*many, eps * 0.99), 1e-5);
}

// The reference workload: 100 Laplace queries at eps0 = 0.1 (b = 10), delta = 1e-5.
TEST(AccountantPropertyTest, HundredLaplaceBatchCosts) {
  const std::vector<PrivacyEvent> batch = {PrivacyEvent::Laplace(10.0, 1.0, 100)};
  for (const auto& name : kAll) {
    auto price = PriceEvents(name, kDelta, batch);
    ASSERT_TRUE(price.ok()) << price.status();
    std::cout << "100 x Laplace(b=10), delta=1e-5: " << name << " eps = " << price->epsilon << "\n";
    EXPECT_LE(price->epsilon, 10.0);
    if (name == "pld") {
      EXPECT_LE(price->epsilon, 4.25);
    }
    if (name == "rdp") {
      EXPECT_NEAR(price->epsilon, 4.5327, 1e-3);
    }
  }
}

}  // namespace
}  // namespace dpq::dp::accounting
