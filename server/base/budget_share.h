// Splitting a privacy parameter into equal shares without ever overspending it.
#ifndef DPQ_SERVER_BASE_BUDGET_SHARE_H_
#define DPQ_SERVER_BASE_BUDGET_SHARE_H_

#include <cstdint>

namespace dpq {

// One of `parts` equal shares of an epsilon or delta (ε/2 of a mean, ε/3 of a variance, ε/2/m of a
// per-group quantile selection, ε/q per quantile level), rounded toward zero: the largest double s
// with s * parts <= total exactly. Basic composition (Dwork & Roth 2014, Thm. 3.16) then gives at
// most `total` for the parts together; rounded to nearest, ε/3 can be one ulp above the exact third
// and three of them more than ε. total finite >= 0; 1 <= parts <= 2^53.
double ShareOf(double total, int64_t parts);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_BUDGET_SHARE_H_
