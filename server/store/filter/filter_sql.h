// Renders a type-checked `--where` filter (server/query/filter) as a SQL boolean expression with
// bound parameters. The filter never reaches PostgreSQL as spliced text: column names come from the
// dataset's schema and are quoted by the caller; every literal becomes a $n parameter, bound as text
// and converted by an explicit cast in the SQL.
#ifndef DPQ_SERVER_STORE_FILTER_FILTER_SQL_H_
#define DPQ_SERVER_STORE_FILTER_FILTER_SQL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/filter/ast.h"

namespace dpq::store {

struct SqlFragment {
  // A parenthesised boolean expression, e.g. (("age" > $3::bigint) AND ("sex" = $4::text)),
  // to be used as `WHERE <sql>` (or ANDed with other conditions). SQL three-valued logic applies:
  // a row is kept when the expression is TRUE, exactly the filter language's semantics.
  std::string sql;
  // params[i] is the text value of placeholder $(first_param + i), in order.
  std::vector<std::string> params;
};

// Casts: integer values ::bigint, decimal values ::numeric (integer column against a non-int64
// literal: exact comparison), double values ::float8, strings ::text, dates ::date and timestamps
// ::timestamp (TypedValue in ast.h). A date or timestamp column is compared clamped into its
// declared bounds (TypedExpr::clamp, ClampedCalendarSql), never raw.
// `quote_ident` must quote an identifier for PostgreSQL (pqxx::transaction_base::quote_name);
// it is applied to schema column names only.
// INVALID_ARGUMENT when first_param < 1 or the last placeholder would exceed $65535 (PostgreSQL's
// limit on parameters per statement).
// `column` clamped into [lower, upper] (SQL expressions of the column's `type`, "date" or
// "timestamp"), NULL kept NULL:
// how every read of a date or timestamp column sees it, so no stored value ('infinity', a year
// beyond the bounds) reaches a comparison, a bucket or a key unclamped.
std::string ClampedCalendarSql(absl::string_view column, absl::string_view type,
                               absl::string_view lower, absl::string_view upper);

absl::StatusOr<SqlFragment> RenderFilter(
    const query::filter::TypedFilter& filter, int first_param,
    const std::function<std::string(const std::string&)>& quote_ident);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_FILTER_FILTER_SQL_H_
