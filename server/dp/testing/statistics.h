// TEST ONLY: small statistics helpers for the stochastic tests (chi-square, Clopper-Pearson).
#ifndef DPQ_SERVER_DP_TESTING_STATISTICS_H_
#define DPQ_SERVER_DP_TESTING_STATISTICS_H_

#include <cstdint>
#include <vector>

namespace dpq::dp::testing {

// Regularized incomplete beta I_x(a, b) by the continued fraction of Press et al., Numerical
// Recipes 3rd ed., Sec. 6.4 (modified Lentz).
double RegularizedIncompleteBeta(double a, double b, double x);

// One-sided Clopper-Pearson (1934) bounds for k successes in n trials at level alpha:
// lower = Beta^-1(alpha; k, n-k+1), upper = Beta^-1(1-alpha; k+1, n-k).
double ClopperPearsonLower(int64_t k, int64_t n, double alpha);
double ClopperPearsonUpper(int64_t k, int64_t n, double alpha);

// Pearson chi-square statistic of observed counts against expected probabilities (summing to 1).
double ChiSquare(const std::vector<int64_t>& observed, const std::vector<double>& probabilities);

// Rejection threshold for a chi-square with df degrees of freedom at false-alarm rate ~1e-6:
// Wilson-Hilferty (1931) normal approximation with z = 4.75.
double ChiSquareCritical(int df);

}  // namespace dpq::dp::testing

#endif  // DPQ_SERVER_DP_TESTING_STATISTICS_H_
