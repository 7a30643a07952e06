// Minimal in-place radix-2 complex FFT (Cooley & Tukey 1965), used for PLD convolution.
#ifndef DPQ_SERVER_DP_ACCOUNTING_FFT_H_
#define DPQ_SERVER_DP_ACCOUNTING_FFT_H_

#include <complex>
#include <vector>

namespace dpq::dp::accounting::internal {

// data.size() must be a power of two. inverse = true computes the unnormalised inverse transform
// (divide by size afterwards).
void Fft(std::vector<std::complex<double>>& data, bool inverse);

// Linear convolution of two real sequences (size a + b - 1; empty if either is empty) with one
// forward and one inverse transform of the next power of two. Rounding leaves entries that should
// be 0 at about 1e-16 of the largest, possibly negative.
std::vector<double> ConvolveReal(const std::vector<double>& a, const std::vector<double>& b);

// Smallest power of two >= n (n >= 1).
size_t NextPowerOfTwo(size_t n);

}  // namespace dpq::dp::accounting::internal

#endif  // DPQ_SERVER_DP_ACCOUNTING_FFT_H_
