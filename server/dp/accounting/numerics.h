// Small numerical helpers shared by the accountants (log-space arithmetic, normal tails).
#ifndef DPQ_SERVER_DP_ACCOUNTING_NUMERICS_H_
#define DPQ_SERVER_DP_ACCOUNTING_NUMERICS_H_

namespace dpq::dp::accounting::internal {

// log(e^a + e^b), exact for -inf arguments.
double LogAdd(double a, double b);
// log(e^a - e^b) for a >= b; -inf when equal.
double LogSub(double a, double b);
// log Phi(x), Phi the standard normal CDF; accurate in the far left tail (asymptotic series).
double LogNormalCdf(double x);
// Phi(x) and 1 - Phi(x) without cancellation.
double NormalCdf(double x);
double NormalSf(double x);

}  // namespace dpq::dp::accounting::internal

#endif  // DPQ_SERVER_DP_ACCOUNTING_NUMERICS_H_
