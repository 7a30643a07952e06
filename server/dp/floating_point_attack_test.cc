// Stochastic: why the exact samplers exist (Mironov 2012, "On significance of the least
// significant bits for differential privacy", CCS). Textbook Laplace noise -b ln(U) on doubles
// reaches only some doubles, and which doubles x + noise can take depends on x. An observer who
// sees one output can often rule out a neighbouring input with certainty: infinite privacy loss.
// The grid-released discrete mechanism has identical output support for neighbours.
#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"
#include "server/dp/additive_mechanism.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp {
namespace {

// Naive Laplace(b = 1): U uniform on the 2^-53 grid of (0, 1], noise = +-(-ln U).
double NaiveLaplaceNoise(RandomSource& rng) {
  const uint64_t bits = rng.NextUint64();
  const double u = static_cast<double>((bits >> 11) + 1) * 0x1p-53;
  const double magnitude = -std::log(u);
  return (bits & 1) ? magnitude : -magnitude;
}

// Can the naive sampler produce the noise value `noise` exactly? Invert: U ≈ exp(-|noise|), and
// check the grid points around it.
bool NaiveNoiseReachable(double noise) {
  const double a = std::fabs(noise);
  const double j0 = std::round(std::exp(-a) * 0x1p53);
  for (double j = j0 - 3; j <= j0 + 3; ++j) {
    if (j < 1 || j > 0x1p53) continue;
    if (-std::log(j * 0x1p-53) == a) return true;
  }
  return false;
}

// Can x + noise == y for some reachable noise? Enumerates the doubles n near y - x with
// fl(x + n) == y; if there are too many to enumerate, answers "reachable" (conservative: it can
// only make the naive sampler look better).
bool NaiveOutputReachable(double y, double x) {
  const double centre = y - x;
  double lo = centre, hi = centre;
  for (int i = 0; i < 64 && x + std::nextafter(lo, -INFINITY) == y; ++i)
    lo = std::nextafter(lo, -INFINITY);
  for (int i = 0; i < 64 && x + std::nextafter(hi, INFINITY) == y; ++i)
    hi = std::nextafter(hi, INFINITY);
  if (x + std::nextafter(lo, -INFINITY) == y || x + std::nextafter(hi, INFINITY) == y) return true;
  for (double n = lo; n <= hi; n = std::nextafter(n, INFINITY)) {
    if (x + n == y && NaiveNoiseReachable(n)) return true;
  }
  return false;
}

TEST(FloatingPointAttackTest, NaiveLaplaceLeaksThroughItsSupport) {
  SeededRandom rng(600);
  const int n = 20000;
  int reachable_from_self = 0, reachable_from_neighbour = 0;
  for (int i = 0; i < n; ++i) {
    const double y = 0.0 + NaiveLaplaceNoise(rng);  // true value 0; neighbour value 1
    reachable_from_self += NaiveOutputReachable(y, 0.0);
    reachable_from_neighbour += NaiveOutputReachable(y, 1.0);
  }
  EXPECT_EQ(reachable_from_self, n);  // sanity check of the reachability test itself
  // A large fraction of outputs is impossible under the neighbour: each such output proves the
  // true input was 0. (Observed: about half.)
  EXPECT_LT(reachable_from_neighbour, 0.8 * n);
}

TEST(FloatingPointAttackTest, GridMechanismOutputsAreReachableFromNeighbours) {
  auto m = CreateLaplaceMechanism(1, 1);
  ASSERT_TRUE(m.ok());
  const double gamma = (*m)->granularity();
  SeededRandom rng(601);
  for (int i = 0; i < 20000; ++i) {
    const double y = *(*m)->AddNoise(0.0, rng);
    // Discrete Laplace has full support on Z, so y is reachable from x' iff y/gamma - round(x'/gamma)
    // is an integer; it is, for both x = 0 and x' = 1 (and every x').
    const double steps_from_neighbour = y / gamma - std::round(1.0 / gamma);
    ASSERT_EQ(steps_from_neighbour, std::round(steps_from_neighbour));
  }
}

}  // namespace
}  // namespace dpq::dp
