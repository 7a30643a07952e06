// Domain types of one central-DP query, independent of the wire format (proto) and of SQL.
#ifndef DPQ_SERVER_QUERY_QUERY_SPEC_H_
#define DPQ_SERVER_QUERY_QUERY_SPEC_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace dpq::query {

enum class AggregateKind { kCount, kSum, kMean };
enum class MechanismKind { kLaplace, kGaussian };

absl::string_view AggregateName(AggregateKind kind);  // "count", "sum", "mean"
absl::string_view MechanismName(MechanismKind kind);  // "laplace", "gaussian"

// What the analyst asked for, after decoding but before any validation.
struct QuerySpec {
  std::string dataset;
  AggregateKind aggregate = AggregateKind::kCount;
  std::string column;                // value column; unused for kCount
  absl::optional<double> lower;      // requested clamp bounds (declared bounds when absent)
  absl::optional<double> upper;
  double epsilon = 0;
  double delta = 0;
  MechanismKind mechanism = MechanismKind::kLaplace;
  int max_contributions = 1;         // rows kept per privacy unit (K)
  double confidence = 0.95;          // level of the reported interval
  std::string where;                 // optional row filter (server/query/filter); empty: none
};

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_QUERY_SPEC_H_
