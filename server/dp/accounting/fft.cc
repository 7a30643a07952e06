#include "server/dp/accounting/fft.h"

#include <cmath>
#include <utility>

namespace dpq::dp::accounting::internal {
namespace {

// Forward twiddles e^{-2 pi i k / n}, k < n/2, for the largest n this thread has transformed;
// a smaller power of two m reads every (n/m)-th entry. Each entry is computed directly (not by
// recurrence) so rounding error does not grow with n, and only once per thread: the cos/sin
// calls were 5 % of a 100-event PLD price when every transform recomputed them.
const std::vector<std::complex<double>>& ForwardTwiddles(size_t n) {
  thread_local std::vector<std::complex<double>> table;
  if (table.size() < n / 2) {
    table.resize(n / 2);
    for (size_t k = 0; k < n / 2; ++k) {
      const double ang = -2 * M_PI * double(k) / double(n);
      table[k] = {std::cos(ang), std::sin(ang)};
    }
  }
  return table;
}

}  // namespace

size_t NextPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

void Fft(std::vector<std::complex<double>>& a, bool inverse) {
  const size_t n = a.size();
  if (n < 2) return;
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  const std::vector<std::complex<double>>& table = ForwardTwiddles(n);
  const size_t table_n = 2 * table.size();
  const double sign = inverse ? -1.0 : 1.0;  // the inverse uses conjugate twiddles
  // The butterflies multiply by hand: std::complex's operator* must check for NaN and call
  // __muldc3 (C99 Annex G), which kept the loop from vectorising. The inputs here are finite.
  double* d = reinterpret_cast<double*>(a.data());  // [re, im] pairs, as the standard allows
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2, step = table_n / len;
    for (size_t i = 0; i < n; i += len) {
      for (size_t k = 0; k < half; ++k) {
        const double wr = table[k * step].real(), wi = sign * table[k * step].imag();
        double* u = d + 2 * (i + k);
        double* v = d + 2 * (i + k + half);
        const double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
        v[0] = u[0] - vr;
        v[1] = u[1] - vi;
        u[0] += vr;
        u[1] += vi;
      }
    }
  }
}

std::vector<double> ConvolveReal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return {};
  const size_t out_size = a.size() + b.size() - 1;
  const size_t m = NextPowerOfTwo(out_size);
  // Both real inputs in one complex transform: z = a + i b, Z = FFT(z); then
  // A[k] = (Z[k] + conj Z[m-k]) / 2 and B[k] = (Z[k] - conj Z[m-k]) / 2i (Press et al. 2007,
  // Numerical Recipes 3rd ed., Sec. 12.3.2), so A[k] B[k] = (Z[k]^2 - conj(Z[m-k])^2) / 4i.
  std::vector<std::complex<double>> z(m);
  for (size_t i = 0; i < a.size(); ++i) z[i].real(a[i]);
  for (size_t j = 0; j < b.size(); ++j) z[j].imag(b[j]);
  Fft(z, false);
  std::vector<std::complex<double>> product(m);
  for (size_t k = 0; k < m; ++k) {
    const std::complex<double> zk = z[k], zr = std::conj(z[(m - k) & (m - 1)]);
    const std::complex<double> x = zk * zk - zr * zr;
    product[k] = {x.imag() / 4, -x.real() / 4};  // x / 4i
  }
  Fft(product, true);
  std::vector<double> out(out_size);
  for (size_t i = 0; i < out_size; ++i) out[i] = product[i].real() / double(m);
  return out;
}

}  // namespace dpq::dp::accounting::internal
