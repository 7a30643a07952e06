// WIDTH_BUCKET in GROUP BY: SQL's spelling of the flag histogram over numeric bins
// (`dpqctl query --aggregate histogram --bins ...`, QuerySpec::bins). The bucket grid comes from
// the query text alone, so it is public: every bucket of every released group is released, no
// partition selection picks them.
//
//   WIDTH_BUCKET(col, low, high, n)       n equal-width buckets: edges low + (high - low) i / n
//   WIDTH_BUCKET(col, (e0, e1, ..., ek))  buckets [e0, e1), ..., [e(k-1), ek] (PostgreSQL's
//                                         width_bucket(col, ARRAY[e0, ..., ek]))
//
// Bucket numbers are 1..n (1..k). Like the flag histogram, values are clamped into [e0, en] before
// they are binned: a value below e0 counts in bucket 1 and a value at or above en in bucket n, so
// dpq's WIDTH_BUCKET(x, ...) is PostgreSQL's LEAST(GREATEST(width_bucket(x, ...), 1), n), not its
// 0 and n + 1 buckets; rows whose value is NULL are dropped (no NULL bucket). docs/decisions.md
// ("DP SQL front end", WIDTH_BUCKET) says why.
#ifndef DPQ_SERVER_SQL_WIDTH_BUCKET_H_
#define DPQ_SERVER_SQL_WIDTH_BUCKET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// The flag histogram's limit: at most 1000 buckets (1001 edges, query::kMaxBinEdges).
inline constexpr int kMaxWidthBuckets = 1000;

bool IsWidthBucket(const Expr& e);

// The bucket edges of a WIDTH_BUCKET call (its first argument, the column, is the caller's to
// resolve): strictly increasing, magnitude <= query::kMaxBoundMagnitude, 2..1001 of them.
// INVALID_ARGUMENT with the offending argument's line and column otherwise.
absl::StatusOr<std::vector<double>> WidthBucketEdges(const Expr& call);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_WIDTH_BUCKET_H_
