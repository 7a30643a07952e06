// The query of `dpqctl query`, `dpqctl plan` and each entry of `dpqctl query-batch --file`, as
// plain values (QueryArgs), and its translation into dpq.v1.QueryRequest. Everything here runs
// before any byte is sent: errors are INVALID_ARGUMENT and name the flag (or, for a batch file,
// the array index and key) at fault. Ranges (epsilon > 0, quantile levels in [0, 1], increasing
// bin edges, ...) are the server's to judge, with one message per field; only what cannot be sent
// at all (a word that is no enum value, text that is no number, NaN, an int32 overflow) is refused.
#ifndef DPQ_CLIENT_DPQCTL_QUERY_REQUEST_H_
#define DPQ_CLIENT_DPQCTL_QUERY_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dpq/v1/dpq.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

// At most this many queries in one QueryBatchRequest (dpq.proto: 1..1000).
inline constexpr size_t kMaxBatchQueries = 1000;

struct QueryArgs {
  std::string dataset;
  std::string aggregate;  // count | sum | mean | variance | stddev | quantile | histogram
  std::string column;
  std::optional<double> lower;
  std::optional<double> upper;
  double epsilon = 0;
  std::string mechanism;  // empty: the server's default (Laplace)
  double delta = 0;
  int32_t max_contributions = 0;      // 0: the server's default (1)
  std::string request_id;             // empty: the server assigns one
  double confidence = 0;              // 0: the server's default (0.95)
  std::string where;                  // row filter; empty: none
  std::vector<double> quantiles;      // QUANTILE: the levels
  std::vector<double> bins;           // HISTOGRAM over a numeric column: the bin edges
  std::vector<std::string> group_by;  // group-by columns, in order
  std::vector<std::string> keys;      // declared keys of a single group-by column
  int32_t max_partitions = 0;         // 0: the server's default (1)
  bool per_unit = false;  // COUNT/SUM/MEAN: per-unit pre-aggregation (QueryRequest.per_unit)
};

// Parses a comma-separated list of finite decimals ("0.1,0.5,0.9", "-10,0,1e3"). Every element of
// `parts` (one per repetition of the flag) is split at commas and the results are concatenated.
// INVALID_ARGUMENT naming `flag` for an empty list, an empty element ("1,,2") or an element that
// is not a finite number.
absl::StatusOr<std::vector<double>> ParseNumberList(const std::vector<std::string>& parts,
                                                    absl::string_view flag);

// Same for a comma-separated list of non-empty strings ("age,city"); no trimming, so a key may
// contain spaces. INVALID_ARGUMENT naming `flag` for an empty list or an empty element.
absl::StatusOr<std::vector<std::string>> ParseNameList(const std::vector<std::string>& parts,
                                                       absl::string_view flag);

// QueryArgs -> QueryRequest. Checks the aggregate and mechanism words (INVALID_ARGUMENT naming
// `flag_prefix` + "aggregate" / "mechanism", e.g. "--aggregate" or "queries[3].aggregate");
// every other field is copied as it is (an absent bound stays unset).
absl::StatusOr<dpq::v1::QueryRequest> BuildQueryRequest(const QueryArgs& args,
                                                        absl::string_view flag_prefix = "--");

// The queries of a `query-batch --file`: a JSON array (1..kMaxBatchQueries entries) of objects
// whose keys mirror the query flags: aggregate (string, required), epsilon (number, required),
// column, mechanism, where (strings), lower, upper, delta, confidence (numbers), max_contributions,
// max_partitions (non-negative integers), quantiles, bins (arrays of numbers), group_by, keys
// (arrays of strings). Unknown keys, wrong types and non-finite numbers are INVALID_ARGUMENT
// naming the entry as "queries[i].key" (i from 0, as in the file). `dataset` is copied into every
// entry.
absl::StatusOr<std::vector<QueryArgs>> ParseQueryBatchJson(const nlohmann::json& document,
                                                           absl::string_view dataset);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_QUERY_REQUEST_H_
