#include "server/sql/number_literal.h"

#include <cmath>
#include <cstdlib>

#include "server/query/dataset_schema.h"

namespace dpq::sql {

absl::optional<double> NumberOf(const Expr& e) {
  if (e.kind == Expr::Kind::kUnary && (e.op == "-" || e.op == "+") && e.children.size() == 1) {
    absl::optional<double> inner = NumberOf(e.children[0]);
    if (!inner) return absl::nullopt;
    return e.op == "-" ? -*inner : *inner;
  }
  if (e.kind != Expr::Kind::kNumber) return absl::nullopt;
  char* end = nullptr;
  const double v = std::strtod(e.text.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(v)) return absl::nullopt;
  return v;
}

absl::optional<double> BoundLiteral(const Expr& e) {
  absl::optional<double> v = NumberOf(e);
  if (!v || std::fabs(*v) > query::kMaxBoundMagnitude) return absl::nullopt;
  return *v + 0.0;
}

}  // namespace dpq::sql
