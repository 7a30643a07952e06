#include "server/sql/analyzer_clauses.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/calendar_literal.h"
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {

absl::StatusOr<OutputExpr> Analyzer::Output(const Expr& e) {
  OutputExpr o;
  switch (e.kind) {
    case Expr::Kind::kCall:
      if (IsWidthBucket(e)) {
        if (e.distinct) return Unsupported(e.pos, "WIDTH_BUCKET takes no DISTINCT");
        return WidthBucketKey(e);
      }
      if (IsCalendarTrunc(e)) return TruncKey(e);
      return Aggregate(e);
    case Expr::Kind::kColumn: {
      ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e, /*calendar_ok=*/true));
      if (c->is_calendar()) {
        return Invalid(e.pos,
                       absl::StrCat("column ", c->name, " is a ", query::ColumnTypeName(c->type),
                                    ": select its GROUP BY bucket, DATE_TRUNC(", c->name,
                                    ", DAY|WEEK|MONTH)"));
      }
      auto it = std::find(out_.group_by.begin(), out_.group_by.end(), c->name);
      if (it == out_.group_by.end()) {
        return Invalid(
            e.pos, absl::StrCat("column ", c->name, " must be in GROUP BY or inside an aggregate"));
      }
      o.kind = OutputExpr::Kind::kKey;
      o.index = static_cast<int>(it - out_.group_by.begin());
      return o;
    }
    case Expr::Kind::kNumber: {
      absl::optional<double> v = NumberOf(e);
      if (!v) return Invalid(e.pos, "a number out of range");
      o.kind = OutputExpr::Kind::kNumber;
      o.number = *v;
      o.text = e.text;
      return o;
    }
    case Expr::Kind::kString:
      o.kind = OutputExpr::Kind::kString;
      o.text = e.text;
      return o;
    case Expr::Kind::kNull: o.kind = OutputExpr::Kind::kNull; return o;
    case Expr::Kind::kUnary:
      if (e.op == "-" || e.op == "+") {
        ASSIGN_OR_RETURN(OutputExpr inner, Output(e.children[0]));
        RETURN_IF_ERROR(Numeric(inner, e.children[0].pos));
        if (e.op == "+") return inner;
        o.kind = OutputExpr::Kind::kNegate;
        o.children.push_back(std::move(inner));
        return o;
      }
      break;
    case Expr::Kind::kBinary:
      if (e.op == "+" || e.op == "-" || e.op == "*" || e.op == "/") {
        o.kind = OutputExpr::Kind::kBinary;
        o.op = e.op[0];
        for (const Expr& child : e.children) {
          ASSIGN_OR_RETURN(OutputExpr c, Output(child));
          RETURN_IF_ERROR(Numeric(c, child.pos));
          o.children.push_back(std::move(c));
        }
        return o;
      }
      break;
    default: break;
  }
  return Unsupported(e.pos,
                     "the select list holds group keys, aggregates, literals and + - * / "
                     "over them");
}

absl::Status Analyzer::Numeric(const OutputExpr& o, Position p) {
  const std::string t = TypeOf(o);
  if (t == "string" || t == "array<float64>") {
    return Invalid(p, absl::StrCat("arithmetic needs numbers, not a ", t));
  }
  return absl::OkStatus();
}

std::string Analyzer::TypeOf(const OutputExpr& o) const {
  switch (o.kind) {
    case OutputExpr::Kind::kPart: {
      const PartInfo& info = out_.part_info[o.index];
      if (info.array) return "array<float64>";
      return info.function == "COUNT" ? "int64" : "float64";
    }
    case OutputExpr::Kind::kKey: return OutputTypeOf(key_types_[o.index]);
    case OutputExpr::Kind::kString: return "string";
    case OutputExpr::Kind::kNumber:
      return o.text.find_first_not_of("0123456789") == std::string::npos ? "int64" : "float64";
    case OutputExpr::Kind::kNull: return "float64";
    default: return "float64";
  }
}

absl::Status Analyzer::OrderBy() {
  for (const OrderItem& item : st_.order_by) {
    int found = -1;
    if (item.expr.kind == Expr::Kind::kNumber) {
      absl::optional<double> v = NumberOf(item.expr);
      if (!v || *v != std::floor(*v) || *v < 1 || *v > static_cast<double>(out_.columns.size())) {
        return Invalid(
            item.pos, absl::StrCat("ORDER BY position must lie in [1, ", out_.columns.size(), "]"));
      }
      found = static_cast<int>(*v) - 1;
    } else if (item.expr.kind == Expr::Kind::kColumn && item.expr.qualifier.empty()) {
      for (size_t i = 0; i < out_.columns.size(); ++i) {
        if (out_.columns[i].name != item.expr.name) continue;
        if (found >= 0) {
          return Invalid(item.pos, absl::StrCat("ORDER BY ", item.expr.name, " is ambiguous"));
        }
        found = static_cast<int>(i);
      }
    }
    if (found < 0) {
      return Unsupported(item.pos,
                         "ORDER BY names an output column (its alias or name) or its "
                         "position: it acts on the released rows only");
    }
    if (out_.columns[found].type == "array<float64>") {
      return Invalid(item.pos, "ORDER BY cannot sort by an array");
    }
    out_.order_by.push_back({found, item.descending});
  }
  return absl::OkStatus();
}

}  // namespace dpq::sql::internal
