// The FFT convolution the PLD accountant relies on, against the direct O(n m) sum, and the
// tree-shaped composition built on it.
#include "server/dp/accounting/fft.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/accounting/pld.h"

namespace dpq::dp::accounting::internal {
namespace {

std::vector<double> DirectConvolution(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size() + b.size() - 1, 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b.size(); ++j) out[i + j] += a[i] * b[j];
  }
  return out;
}

std::vector<double> RandomPmf(size_t n, std::mt19937_64& gen) {
  std::exponential_distribution<double> draw(1.0);
  std::vector<double> p(n);
  double total = 0;
  for (double& x : p) total += x = draw(gen);
  for (double& x : p) x /= total;
  return p;
}

// Error bound: a radix-2 FFT convolution of length m has relative error O(eps log2 m) in the
// L2 norm (Schatzman 1996, "Accuracy of the discrete Fourier transform and the fast Fourier
// transform", SIAM J. Sci. Comput.); with PMFs (entries <= 1, sums 1) 1e-13 absolute per entry is
// a few hundred times that bound at these sizes and far below the 1e-10-scale tail masses the
// accountant trims.
TEST(ConvolveRealTest, MatchesDirectSumAtEverySizePair) {
  std::mt19937_64 gen(7);
  for (size_t na : {1, 2, 3, 17, 64, 1000}) {
    for (size_t nb : {1, 5, 64, 333, 2049}) {
      const std::vector<double> a = RandomPmf(na, gen), b = RandomPmf(nb, gen);
      const std::vector<double> fast = ConvolveReal(a, b), slow = DirectConvolution(a, b);
      ASSERT_EQ(fast.size(), slow.size());
      for (size_t i = 0; i < fast.size(); ++i) {
        ASSERT_NEAR(fast[i], slow[i], 1e-13) << "sizes " << na << " x " << nb << " at " << i;
      }
    }
  }
}

TEST(ConvolveRealTest, EmptyInputGivesEmptyOutput) {
  EXPECT_TRUE(ConvolveReal({}, {1.0}).empty());
  EXPECT_TRUE(ConvolveReal({1.0}, {}).empty());
}

// The twiddle table is cached per thread for the largest size seen; a later, smaller transform
// must read it with the right stride.
TEST(FftTest, SmallTransformAfterLargeOneIsStillExact) {
  std::vector<std::complex<double>> large(1 << 16, {1.0, 0.0});
  Fft(large, false);
  EXPECT_NEAR(large[0].real(), 65536.0, 1e-9);
  std::vector<std::complex<double>> x = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  Fft(x, false);  // DFT of 1,2,3,4: 10, -2+2i, -2, -2-2i
  EXPECT_NEAR(x[0].real(), 10, 1e-12);
  EXPECT_NEAR(x[1].real(), -2, 1e-12);
  EXPECT_NEAR(x[1].imag(), 2, 1e-12);
  EXPECT_NEAR(x[2].real(), -2, 1e-12);
  EXPECT_NEAR(x[3].imag(), -2, 1e-12);
  Fft(x, true);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i].real() / 4, i + 1, 1e-12);
}

}  // namespace
}  // namespace dpq::dp::accounting::internal

// (In this file because it is the FFT path's consumer.) The balanced-tree composition the PLD
// accountant uses must price like the left fold it replaced. Compared as delta(eps), where the
// difference is bounded directly: each of the 12 pairwise Trims moves at most 1e-15 of mass
// (<= 2.4e-14 in both orders), and the FFT adds at most ~eps_mach log2(m) = 2e-15 per bin over
// <= 2^17 bins (Schatzman 1996), so |delta_tree - delta_fold| <= 3e-10; 1e-9 is that bound with
// room. (Epsilon at a fixed delta is not compared: near delta = 1e-9 the curve is so flat that a
// 1e-14 change in mass moves epsilon by 1e-8.)
namespace dpq::dp::accounting {
namespace {

TEST(ComposeAllPldTest, TreeCompositionPricesLikeTheLeftFold) {
  std::vector<PldPmf> parts;
  PldPmf fold = PldPmf::Identity(kDefaultPldInterval);
  for (int i = 0; i < 13; ++i) {
    auto e = i % 3 == 2 ? PrivacyEvent::PoissonSubsampledGaussian(0.05, 2.0 + i / 10.0)
                        : PrivacyEvent::Laplace(10.0 + 7 * i);
    auto pmf = PldForEvent(e, kDefaultPldInterval, PldDirection::kRemove);
    ASSERT_TRUE(pmf.ok()) << pmf.status();
    parts.push_back(*pmf);
    auto next = ComposePld(fold, *pmf);
    ASSERT_TRUE(next.ok()) << next.status();
    fold = *std::move(next);
  }
  auto tree = ComposeAllPld(parts, kDefaultPldInterval);
  ASSERT_TRUE(tree.ok()) << tree.status();
  for (double eps : {0.0, 0.3, 0.6, 1.0, 2.0}) {
    EXPECT_NEAR(PldDelta(*tree, eps), PldDelta(fold, eps), 1e-9) << "eps " << eps;
  }
  EXPECT_GT(PldDelta(fold, 0.0), 1e-2);  // the comparisons are not all between near-zeros
}

TEST(ComposeAllPldTest, NoPartsIsTheIdentityAndOnePartIsItself) {
  auto none = ComposeAllPld({}, kDefaultPldInterval);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->probs, std::vector<double>{1.0});
  EXPECT_EQ(PldEpsilon(*none, 1e-6), 0.0);
  auto one = PldForEvent(PrivacyEvent::Laplace(2.0), kDefaultPldInterval, PldDirection::kRemove);
  ASSERT_TRUE(one.ok());
  auto same = ComposeAllPld({*one}, kDefaultPldInterval);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->probs, one->probs);
  EXPECT_EQ(same->lower, one->lower);
}

}  // namespace
}  // namespace dpq::dp::accounting
