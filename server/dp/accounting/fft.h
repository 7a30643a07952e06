// Minimal in-place radix-2 complex FFT (Cooley & Tukey 1965), used for PLD convolution.
#ifndef DPQ_SERVER_DP_ACCOUNTING_FFT_H_
#define DPQ_SERVER_DP_ACCOUNTING_FFT_H_

#include <complex>
#include <vector>

namespace dpq::dp::accounting::internal {

// data.size() must be a power of two. inverse = true computes the unnormalised inverse transform
// (divide by size afterwards).
void Fft(std::vector<std::complex<double>>& data, bool inverse);

// Smallest power of two >= n (n >= 1).
size_t NextPowerOfTwo(size_t n);

}  // namespace dpq::dp::accounting::internal

#endif  // DPQ_SERVER_DP_ACCOUNTING_FFT_H_
