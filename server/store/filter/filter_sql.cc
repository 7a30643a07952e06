#include "server/store/filter/filter_sql.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dpq::store {
namespace {

using query::filter::CompareOpText;
using query::filter::Expr;
using query::filter::TypedExpr;
using query::filter::TypedFilter;
using query::filter::TypedValue;

constexpr int64_t kMaxParams = 65535;  // PostgreSQL: at most 65535 bind parameters per statement

absl::string_view CastFor(TypedValue::Kind kind) {
  switch (kind) {
    case TypedValue::Kind::kInteger: return "bigint";
    case TypedValue::Kind::kDecimal: return "numeric";
    case TypedValue::Kind::kDouble: return "float8";
    case TypedValue::Kind::kText: return "text";
    case TypedValue::Kind::kDate: return "date";
    case TypedValue::Kind::kTimestamp: return "timestamp";
  }
  return "text";
}

class Renderer {
 public:
  Renderer(int first_param, const std::function<std::string(const std::string&)>& quote_ident)
      : next_(first_param), quote_ident_(quote_ident) {}

  // Every node is parenthesised, so the output never depends on SQL operator precedence.
  void Render(const TypedExpr& e, std::string* sql) {
    switch (e.kind) {
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr:
        sql->push_back('(');
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i > 0) sql->append(e.kind == Expr::Kind::kAnd ? " AND " : " OR ");
          Render(e.children[i], sql);
        }
        sql->push_back(')');
        return;
      case Expr::Kind::kNot:
        sql->append("(NOT ");
        Render(e.children[0], sql);
        sql->push_back(')');
        return;
      case Expr::Kind::kCompare: {
        const std::string column = Column(e);
        absl::StrAppend(sql, "(", column, " ", CompareOpText(e.op), " ", Param(e.values[0]), ")");
        return;
      }
      case Expr::Kind::kIn:
        absl::StrAppend(sql, "(", Column(e), e.negated ? " NOT IN (" : " IN (");
        for (size_t i = 0; i < e.values.size(); ++i) {
          if (i > 0) sql->append(", ");
          sql->append(Param(e.values[i]));
        }
        sql->append("))");
        return;
      case Expr::Kind::kBetween: {
        // Two statements: the order of evaluation of function arguments is unspecified, and the
        // placeholders must be numbered left to right.
        const std::string column = Column(e);
        absl::StrAppend(sql, "(", column, e.negated ? " NOT BETWEEN " : " BETWEEN ",
                        Param(e.values[0]));
        absl::StrAppend(sql, " AND ", Param(e.values[1]), ")");
        return;
      }
      case Expr::Kind::kIsNull:
        absl::StrAppend(sql, "(", quote_ident_(e.column),
                        e.negated ? " IS NOT NULL)" : " IS NULL)");
        return;
    }
  }

  std::vector<std::string> TakeParams() { return std::move(params_); }

 private:
  // The column as compared: a date or timestamp clamped into its declared bounds first (its
  // placeholders numbered before the literals', which follow it in the text).
  std::string Column(const TypedExpr& e) {
    const std::string column = quote_ident_(e.column);
    if (e.clamp.size() != 2) return column;
    const std::string lower = Param(e.clamp[0]);
    return ClampedCalendarSql(column, CastFor(e.clamp[0].kind), lower, Param(e.clamp[1]));
  }

  std::string Param(const TypedValue& v) {
    params_.push_back(v.text);
    return absl::StrCat("$", next_++, "::", CastFor(v.kind));
  }

  int64_t next_;
  const std::function<std::string(const std::string&)>& quote_ident_;
  std::vector<std::string> params_;
};

}  // namespace

std::string ClampedCalendarSql(absl::string_view column, absl::string_view type,
                               absl::string_view lower, absl::string_view upper) {
  // date_smaller / date_larger (timestamp_*) are strict: NULL stays NULL, and compares or groups
  // as every other NULL does. Not least / greatest, which skip a NULL argument and which
  // postgres_fdw never ships to a shard.
  return absl::StrCat(type, "_smaller(", type, "_larger(", column, ", ", lower, "), ", upper, ")");
}

absl::StatusOr<SqlFragment> RenderFilter(
    const TypedFilter& filter, int first_param,
    const std::function<std::string(const std::string&)>& quote_ident) {
  if (first_param < 1) {
    return absl::InvalidArgumentError(absl::StrCat("first_param must be >= 1, got ", first_param));
  }
  if (int64_t{first_param} + filter.value_count - 1 > kMaxParams) {
    return absl::InvalidArgumentError(absl::StrCat("where: filter needs placeholders up to $",
                                                   int64_t{first_param} + filter.value_count - 1,
                                                   ", above PostgreSQL's limit of ", kMaxParams));
  }
  Renderer renderer(first_param, quote_ident);
  SqlFragment out;
  renderer.Render(filter.root, &out.sql);
  out.params = renderer.TakeParams();
  return out;
}

}  // namespace dpq::store
