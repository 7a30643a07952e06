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
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {

absl::StatusOr<std::string> Analyzer::RenderWhere(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kBinary: {
      if (e.op == "AND" || e.op == "OR") {
        ASSIGN_OR_RETURN(std::string l, RenderWhere(e.children[0]));
        ASSIGN_OR_RETURN(std::string r, RenderWhere(e.children[1]));
        return absl::StrCat("(", l, " ", e.op, " ", r, ")");
      }
      static const std::map<std::string, std::string> kFlip = {
          {"=", "="}, {"<>", "<>"}, {"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
      auto flip = kFlip.find(e.op);
      if (flip == kFlip.end()) break;
      const Expr* col = &e.children[0];
      const Expr* lit = &e.children[1];
      std::string op = e.op;
      if (col->kind != Expr::Kind::kColumn) {
        std::swap(col, lit);
        op = flip->second;
      }
      if (col->kind != Expr::Kind::kColumn) {
        return Unsupported(e.pos, "WHERE compares a column with a literal");
      }
      ASSIGN_OR_RETURN(const ColumnSchema* c, Column(*col, /*calendar_ok=*/true));
      if (lit->kind == Expr::Kind::kNull) {
        return Invalid(lit->pos,
                       "a comparison with NULL is never true: write IS NULL or IS NOT NULL");
      }
      // A date compares only with a literal of its type (refused otherwise, not lowered).
      RETURN_IF_ERROR(CalendarOperand(*c, *lit));
      absl::optional<std::string> l = FilterLiteral(*lit);
      if (!l)
        return Unsupported(lit->pos,
                           "WHERE compares a column with a literal (a number or a 'string')");
      return absl::StrCat(c->name, " ", op, " ", *l);
    }
    case Expr::Kind::kUnary:
      if (e.op == "NOT") {
        ASSIGN_OR_RETURN(std::string inner, RenderWhere(e.children[0]));
        return absl::StrCat("NOT (", inner, ")");
      }
      break;
    case Expr::Kind::kIn:
    case Expr::Kind::kBetween: {
      if (e.children[0].kind != Expr::Kind::kColumn) {
        return Unsupported(e.children[0].pos, "IN and BETWEEN test a column");
      }
      ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e.children[0], /*calendar_ok=*/true));
      std::vector<std::string> lits;
      for (size_t i = 1; i < e.children.size(); ++i) {
        RETURN_IF_ERROR(CalendarOperand(*c, e.children[i]));
        absl::optional<std::string> l = FilterLiteral(e.children[i]);
        if (!l)
          return Unsupported(e.children[i].pos, "expected a literal (a number or a 'string')");
        lits.push_back(*l);
      }
      if (e.kind == Expr::Kind::kIn) {
        return absl::StrCat(c->name, e.negated ? " NOT IN (" : " IN (", absl::StrJoin(lits, ", "),
                            ")");
      }
      return absl::StrCat(c->name, e.negated ? " NOT BETWEEN " : " BETWEEN ", lits[0], " AND ",
                          lits[1]);
    }
    case Expr::Kind::kIsNull: {
      if (e.children[0].kind != Expr::Kind::kColumn) {
        return Unsupported(e.children[0].pos, "IS NULL tests a column");
      }
      ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e.children[0], /*calendar_ok=*/true));
      return absl::StrCat(c->name, e.negated ? " IS NOT NULL" : " IS NULL");
    }
    case Expr::Kind::kCall: return Unsupported(e.pos, "WHERE cannot call functions or aggregates");
    default: break;
  }
  return Unsupported(e.pos,
                     "WHERE supports comparisons of a column with a literal, IN, BETWEEN, "
                     "IS [NOT] NULL, AND, OR and NOT");
}

}  // namespace dpq::sql::internal
