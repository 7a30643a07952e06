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
#include "server/sql/expression_lowering.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {

absl::StatusOr<const ColumnSchema*> Analyzer::Column(const Expr& e, bool calendar_ok) {
  if (!e.qualifier.empty() && e.qualifier != st_.table && e.qualifier != st_.table_alias) {
    return Invalid(e.pos, absl::StrCat("unknown table ", e.qualifier, ": FROM names ",
                                       st_.table_alias.empty() ? st_.table : st_.table_alias));
  }
  const ColumnSchema* c = schema_.FindColumn(e.name);
  if (c == nullptr) {
    return Invalid(e.pos,
                   absl::StrCat("column ", e.name, " does not exist in dataset ", schema_.name));
  }
  if (c->is_calendar() && !calendar_ok) {
    // Dates are read only clamped, as the flag interface reads them (docs/decisions.md).
    return Unsupported(
        e.pos,
        absl::StrCat(
            "column ", c->name, " is a ", query::ColumnTypeName(c->type),
            ": DP SQL reads it only compared with a literal in WHERE (", c->name,
            " >= ", c->type == query::ColumnType::kDate ? "DATE 'YYYY-MM-DD'" : "TIMESTAMP '...'",
            ", BETWEEN, IN, IS NULL) and grouped by DATE_TRUNC(", c->name, ", DAY|WEEK|MONTH)"));
  }
  return c;
}

absl::Status Analyzer::GroupBy() {
  for (const Expr& g : st_.group_by) {
    const Expr& trunc = SelectedTrunc(g);
    if (IsCalendarTrunc(trunc)) {
      RETURN_IF_ERROR(GroupByTrunc(trunc, g.pos));
      continue;
    }
    const Expr& by = SelectedWidthBucket(g);
    if (IsWidthBucket(by)) {
      RETURN_IF_ERROR(GroupByWidthBucket(by, g.pos));
      continue;
    }
    const SelectItem* aliased = SelectedByAlias(g);
    if (aliased != nullptr && aliased->expr.kind != Expr::Kind::kColumn) {
      RETURN_IF_ERROR(GroupByExpression(aliased->expr, aliased->alias, g.pos));
      continue;
    }
    if (g.kind != Expr::Kind::kColumn) {
      RETURN_IF_ERROR(GroupByExpression(g, "", g.pos));
      continue;
    }
    ASSIGN_OR_RETURN(const ColumnSchema* c,
                     Column(aliased != nullptr ? aliased->expr : g, /*calendar_ok=*/true));
    if (c->is_calendar()) {
      // As --group-by day is refused: a date's groups are its declared calendar buckets.
      return Invalid(g.pos, absl::StrCat("GROUP BY a ", query::ColumnTypeName(c->type),
                                         " column groups by calendar bucket: write DATE_TRUNC(",
                                         c->name, ", DAY), DATE_TRUNC(", c->name,
                                         ", WEEK) or DATE_TRUNC(", c->name, ", MONTH)"));
    }
    if (c->name == schema_.privacy_unit) {
      return Invalid(g.pos, "GROUP BY the privacy unit column would make every group one unit");
    }
    if (std::find(out_.group_by.begin(), out_.group_by.end(), c->name) != out_.group_by.end()) {
      return Invalid(g.pos, absl::StrCat("GROUP BY lists ", c->name, " twice"));
    }
    if (out_.group_by.size() == 3) return Invalid(g.pos, "GROUP BY takes at most 3 columns");
    out_.group_by.push_back(c->name);
    key_types_.push_back(c->type);
    out_.group_types.push_back(c->type);
    group_expressions_.push_back(nullptr);
    group_canonical_.push_back("");
    if (c->categories.empty()) needs_selection_ = true;
  }
  // A single key computed by a CASE (IF, COALESCE) of literals: its literal results are the
  // public key list, as a WHERE key list is (DeclaredKeys).
  if (out_.group_by.size() != 1) keys_.clear();
  if (!bucket_column_.empty()) {
    // The bucket number is the key's last value (sql_execution.cc appends it to each row).
    out_.width_bucket = true;
    key_types_.push_back(query::ColumnType::kInteger);
    out_.group_types.push_back(query::ColumnType::kInteger);
  }
  return absl::OkStatus();
}

absl::Status Analyzer::DeclaredKeys() {
  // A computed key states its own domain (GroupByExpression), never a WHERE list on a column.
  if (out_.group_by.size() != 1 || group_expressions_[0] != nullptr) return absl::OkStatus();
  std::vector<const Expr*> conjuncts;
  std::vector<const Expr*> todo = {&st_.where};
  while (!todo.empty()) {
    const Expr* e = todo.back();
    todo.pop_back();
    if (e->kind == Expr::Kind::kBinary && e->op == "AND") {
      todo.push_back(&e->children[1]);
      todo.push_back(&e->children[0]);
    } else {
      conjuncts.push_back(e);
    }
  }
  absl::optional<std::vector<std::string>> keys;
  Position pos;
  for (const Expr* c : conjuncts) {
    absl::optional<std::vector<std::string>> list = KeyList(*c);
    if (!list) continue;
    if (!keys) {
      keys = std::move(list);
      pos = c->pos;
      continue;
    }
    std::vector<std::string> both;
    for (const std::string& k : *keys) {
      if (std::find(list->begin(), list->end(), k) != list->end()) both.push_back(k);
    }
    keys = std::move(both);
  }
  if (!keys) return absl::OkStatus();
  const std::string& column = out_.group_by[0];
  if (keys->empty()) {
    return Invalid(pos, absl::StrCat("WHERE admits no value of the GROUP BY column ", column,
                                     ": its key lists have nothing in common"));
  }
  // The planner's limits of a --keys list (planner.cc PlanGroups), here with their position.
  if (keys->size() > query::kMaxKeys) {
    return Invalid(pos,
                   absl::StrCat("WHERE lists more than ", query::kMaxKeys, " keys of ", column));
  }
  for (const std::string& k : *keys) {
    if (k.size() > query::kMaxCategoryLength || k.find('\0') != std::string::npos) {
      return Invalid(pos, absl::StrCat("a key of ", column, " is at most ",
                                       query::kMaxCategoryLength, " bytes without NUL"));
    }
  }
  keys_ = std::move(*keys);
  needs_selection_ = false;
  return absl::OkStatus();
}

absl::optional<std::vector<std::string>> Analyzer::KeyList(const Expr& e) const {
  std::vector<const Expr*> literals;
  const Expr* col = nullptr;
  if (e.kind == Expr::Kind::kIn && !e.negated) {
    col = &e.children[0];
    for (size_t i = 1; i < e.children.size(); ++i) literals.push_back(&e.children[i]);
  } else if (e.kind == Expr::Kind::kBinary && e.op == "=") {
    col = &e.children[0];
    literals.push_back(&e.children[1]);
    if (col->kind != Expr::Kind::kColumn) std::swap(col, literals[0]);
  } else {
    return absl::nullopt;
  }
  if (col->kind != Expr::Kind::kColumn || col->name != out_.group_by[0]) return absl::nullopt;
  if (!col->qualifier.empty() && col->qualifier != st_.table && col->qualifier != st_.table_alias) {
    return absl::nullopt;
  }
  const query::ColumnType type = out_.group_types[0];
  std::vector<std::string> keys;
  for (const Expr* l : literals) {
    std::string key;
    if (type == query::ColumnType::kText && l->kind == Expr::Kind::kString) {
      key = l->text;
    } else if (type == query::ColumnType::kInteger) {
      absl::optional<double> v = NumberOf(*l);
      // Whole and exactly representable: printed as PostgreSQL prints the integer.
      if (!v || *v != std::floor(*v) || std::fabs(*v) > 9007199254740992.0) return absl::nullopt;
      key = absl::StrFormat("%.0f", *v + 0.0);
    } else {
      return absl::nullopt;
    }
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(std::move(key));
  }
  return keys;
}

const Expr& Analyzer::SelectedWidthBucket(const Expr& g) const {
  if (g.kind != Expr::Kind::kColumn || !g.qualifier.empty() ||
      schema_.FindColumn(g.name) != nullptr) {
    return g;
  }
  for (const SelectItem& item : st_.select) {
    if (item.alias == g.name && IsWidthBucket(item.expr)) return item.expr;
  }
  return g;
}

absl::StatusOr<std::pair<std::string, std::vector<double>>> Analyzer::WidthBucketGrid(
    const Expr& call) {
  if (call.children.empty()) {
    return Invalid(call.pos, "WIDTH_BUCKET's first argument is a numeric column or expression");
  }
  if (call.children[0].kind != Expr::Kind::kColumn) {
    // A per-row expression: the histogram over its value (QuerySpec::value_expression), named
    // by its canonical text.
    ASSIGN_OR_RETURN(query::expression::CheckedExpression checked, Checked(call.children[0]));
    const query::expression::ValueType type = checked.root.type;
    if (type != query::expression::ValueType::kInt64 &&
        type != query::expression::ValueType::kFloat64) {
      return Invalid(call.children[0].pos,
                     absl::StrCat("WIDTH_BUCKET needs a numeric value; this expression is ",
                                  query::expression::ValueTypeName(type)));
    }
    ASSIGN_OR_RETURN(std::vector<double> edges, WidthBucketEdges(call));
    return std::make_pair(checked.canonical, std::move(edges));
  }
  ASSIGN_OR_RETURN(const ColumnSchema* c, Column(call.children[0]));
  if (!c->is_numeric()) {
    return Invalid(call.children[0].pos,
                   absl::StrCat("WIDTH_BUCKET needs a numeric column; ", c->name, " is text"));
  }
  if (c->name == schema_.privacy_unit) {
    return Invalid(call.children[0].pos,
                   "WIDTH_BUCKET of the privacy unit column would bucket units");
  }
  ASSIGN_OR_RETURN(std::vector<double> edges, WidthBucketEdges(call));
  return std::make_pair(c->name, std::move(edges));
}

absl::Status Analyzer::GroupByWidthBucket(const Expr& call, Position at) {
  if (!bucket_column_.empty()) return Invalid(at, "GROUP BY takes at most one WIDTH_BUCKET");
  ASSIGN_OR_RETURN(auto grid, WidthBucketGrid(call));
  bucket_column_ = grid.first;
  bucket_edges_ = std::move(grid.second);
  if (call.children[0].kind != Expr::Kind::kColumn) {
    ASSIGN_OR_RETURN(query::expression::Expr lowered, LowerExpression(call.children[0]));
    bucket_expression_ = std::make_shared<const query::expression::Expr>(std::move(lowered));
  }
  return absl::OkStatus();
}

absl::StatusOr<OutputExpr> Analyzer::WidthBucketKey(const Expr& call) {
  if (bucket_column_.empty()) {
    return Invalid(call.pos, "WIDTH_BUCKET(...) must be in GROUP BY to be selected");
  }
  ASSIGN_OR_RETURN(auto grid, WidthBucketGrid(call));
  if (grid.first != bucket_column_ || grid.second != bucket_edges_) {
    return Invalid(call.pos, "this WIDTH_BUCKET differs from the one in GROUP BY");
  }
  OutputExpr o;
  o.kind = OutputExpr::Kind::kKey;
  o.index = static_cast<int>(out_.group_by.size());
  return o;
}

}  // namespace dpq::sql::internal
