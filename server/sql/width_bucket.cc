#include "server/sql/width_bucket.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"

namespace dpq::sql {
namespace {

constexpr char kForms[] =
    "WIDTH_BUCKET takes (column, low, high, buckets) or (column, (edge, edge, ...))";

// n equal-width buckets over [low, high]: low + (high - low) i / n, as the planner's quantile grid
// computes its edges (7.1, not 7.1000000000000005), the scaled form when the span overflows.
std::vector<double> EqualWidthEdges(double low, double high, int n) {
  std::vector<double> edges(static_cast<size_t>(n) + 1);
  const double span = high - low;
  for (int i = 0; i <= n; ++i) {
    edges[i] = std::isfinite(span * n) ? low + span * i / n : low + (high / n - low / n) * i;
  }
  edges.back() = high;
  return edges;
}

}  // namespace

bool IsWidthBucket(const Expr& e) {
  return e.kind == Expr::Kind::kCall && e.name == "WIDTH_BUCKET";
}

absl::StatusOr<std::vector<double>> WidthBucketEdges(const Expr& call) {
  for (const Expr& arg : call.children) {
    if (arg.kind == Expr::Kind::kNamedArg) return Invalid(arg.pos, kForms);
  }
  const std::vector<Expr>& a = call.children;
  const auto bound = [](const Expr& e) -> absl::StatusOr<double> {
    absl::optional<double> v = BoundLiteral(e);
    if (!v) {
      return Invalid(e.pos, "a WIDTH_BUCKET bound is a number literal of magnitude at most 1e15");
    }
    return *v;
  };
  if (a.size() == 4) {
    absl::StatusOr<double> low = bound(a[1]);
    if (!low.ok()) return low.status();
    absl::StatusOr<double> high = bound(a[2]);
    if (!high.ok()) return high.status();
    if (!(*low < *high)) return Invalid(a[1].pos, "WIDTH_BUCKET's low must be < high");
    absl::optional<double> n = BoundLiteral(a[3]);
    if (!n || *n != std::floor(*n) || *n < 1 || *n > kMaxWidthBuckets) {
      return Invalid(a[3].pos,
                     absl::StrCat("WIDTH_BUCKET's number of buckets is a whole number in [1, ",
                                  kMaxWidthBuckets, "]"));
    }
    return EqualWidthEdges(*low, *high, static_cast<int>(*n));
  }
  if (a.size() == 2) {
    if (a[1].kind != Expr::Kind::kTuple) {
      return Invalid(a[1].pos, "WIDTH_BUCKET's edges are a list of numbers: (e0, e1, ...)");
    }
    if (a[1].children.size() > static_cast<size_t>(kMaxWidthBuckets) + 1) {
      return Invalid(a[1].pos,
                     absl::StrCat("WIDTH_BUCKET takes at most ", kMaxWidthBuckets + 1, " edges"));
    }
    std::vector<double> edges;
    for (const Expr& e : a[1].children) {
      absl::StatusOr<double> v = bound(e);
      if (!v.ok()) return v.status();
      if (!edges.empty() && !(edges.back() < *v)) {
        return Invalid(e.pos, "WIDTH_BUCKET's edges must be strictly increasing");
      }
      edges.push_back(*v);
    }
    return edges;
  }
  return Invalid(call.pos, kForms);
}

}  // namespace dpq::sql
