#include "server/sql/join_resolution.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/sql/diagnostics.h"

namespace dpq::sql {
namespace {

using query::DatasetSchema;
using TableColumn = std::pair<int, std::string>;  // (table index, column)

class JoinResolver {
 public:
  JoinResolver(const Statement& st, const std::vector<DatasetSchema>& tables)
      : st_(st), tables_(tables), request_(JoinTablesOf(st)) {}

  absl::StatusOr<ResolvedJoin> Resolve() {
    for (size_t i = 1; i < tables_.size(); ++i) RETURN_IF_ERROR(Condition(static_cast<int>(i)));
    query::JoinRefusal refusal;
    absl::StatusOr<DatasetSchema> joined = query::ResolveJoin(*request_, tables_, &refusal);
    if (!joined.ok()) {
      const Position at = refusal.table <= 0 ? st_.table_pos : st_.joins[refusal.table - 1].pos;
      return Invalid(at, joined.status().message());
    }
    ResolvedJoin out;
    out.schema = *std::move(joined);
    joined_ = &out.schema;
    out.statement = st_;
    RETURN_IF_ERROR(Rewrite(out.statement));
    out.request = request_;
    return out;
  }

 private:
  const std::string& Alias(int t) const { return request_->tables[t].alias; }

  std::string Choices(int upto) const {
    std::vector<std::string> names;
    for (int t = 0; t <= upto; ++t) names.push_back(Alias(t));
    return absl::StrJoin(names, ", ");
  }

  // The table among 0..upto a column reference names; for an unqualified one, the one table among
  // them that has the column (USING-equal columns counting once when `canonical`). `canonical`:
  // the equal column that stands for it (Canonical), else the column as written.
  absl::StatusOr<TableColumn> Lookup(const Expr& e, int upto, bool canonical = true) const {
    if (!e.qualifier.empty()) {
      for (int t = 0; t <= upto; ++t) {
        if (Alias(t) != e.qualifier) continue;
        if (tables_[t].FindColumn(e.name) == nullptr) {
          return Invalid(e.pos, absl::StrCat("column ", e.name, " does not exist in dataset ",
                                             tables_[t].name));
        }
        return canonical ? Canonical({t, e.name}) : TableColumn{t, e.name};
      }
      return Invalid(e.pos,
                     absl::StrCat("unknown table ", e.qualifier, ": FROM names ", Choices(upto)));
    }
    std::set<TableColumn> found;
    std::vector<std::string> spelled;
    for (int t = 0; t <= upto; ++t) {
      if (tables_[t].FindColumn(e.name) == nullptr) continue;
      if (found.insert(canonical ? Canonical({t, e.name}) : TableColumn{t, e.name}).second) {
        spelled.push_back(absl::StrCat(Alias(t), ".", e.name));
      }
    }
    if (found.empty()) {
      return Invalid(e.pos, absl::StrCat("column ", e.name, " does not exist in ", Choices(upto)));
    }
    if (found.size() > 1) {
      return Invalid(e.pos, absl::StrCat("column ", e.name, " is ambiguous: write ",
                                         absl::StrJoin(spelled, " or ")));
    }
    return *found.begin();
  }

  // Equal columns: a USING column is its left side's; a private table's unit is the anchor's.
  TableColumn Canonical(TableColumn c) const {
    for (auto it = same_.find(c); it != same_.end(); it = same_.find(c)) c = it->second;
    const DatasetSchema& s = tables_[c.first];
    if (!s.is_public && c.second == s.privacy_unit) {
      for (size_t t = 0; t < tables_.size(); ++t) {
        if (!tables_[t].is_public) return {static_cast<int>(t), tables_[t].privacy_unit};
      }
    }
    return c;
  }

  // joins[table - 1]'s condition, as request_->on[table - 1].
  absl::Status Condition(int table) {
    const JoinClause& j = st_.joins[table - 1];
    query::JoinEquality& eq = request_->on[table - 1];
    eq.right_table = table;
    if (!j.has_on) {
      if (j.using_columns.size() != 1) {
        return Invalid(j.using_pos,
                       "USING names one column: a join is on one equality (two "
                       "private datasets join on their privacy units alone)");
      }
      Expr left;
      left.pos = j.using_pos;
      left.name = j.using_columns[0];
      if (tables_[table].FindColumn(left.name) == nullptr) {
        return Invalid(
            j.using_pos,
            absl::StrCat("column ", left.name, " does not exist in dataset ", tables_[table].name));
      }
      ASSIGN_OR_RETURN(const TableColumn l, Lookup(left, table - 1));
      eq.left_table = l.first;
      eq.left_column = l.second;
      eq.right_column = left.name;
      same_[{table, left.name}] = l;
      return absl::OkStatus();
    }
    const Expr& on = j.on;
    if (on.kind != Expr::Kind::kBinary || on.op != "=" ||
        on.children[0].kind != Expr::Kind::kColumn || on.children[1].kind != Expr::Kind::kColumn) {
      return Invalid(on.pos,
                     "a join condition is one equality of two columns (a.x = b.y): two "
                     "private datasets join on their privacy units alone");
    }
    ASSIGN_OR_RETURN(TableColumn a, Lookup(on.children[0], table, false));
    ASSIGN_OR_RETURN(TableColumn b, Lookup(on.children[1], table, false));
    if (a.first == table) std::swap(a, b);
    if (b.first != table || a.first == table) {
      return Invalid(on.pos,
                     absl::StrCat("the ON condition must compare a column of ", Alias(table),
                                  " with a column of a table joined before it"));
    }
    eq.left_table = a.first;
    eq.left_column = a.second;
    eq.right_column = b.second;
    return absl::OkStatus();
  }

  absl::Status RewriteExpr(Expr& e) {
    if (e.kind == Expr::Kind::kColumn) {
      // An unqualified name no table has is left alone: a select-list alias, or the analyser's
      // "does not exist" refusal.
      if (e.qualifier.empty() && !AnyTableHas(e.name)) return absl::OkStatus();
      ASSIGN_OR_RETURN(const TableColumn c, Lookup(e, static_cast<int>(tables_.size()) - 1));
      e.name = NameOf(c);
      e.qualifier.clear();
      return absl::OkStatus();
    }
    for (Expr& child : e.children) RETURN_IF_ERROR(RewriteExpr(child));
    return absl::OkStatus();
  }

  bool AnyTableHas(const std::string& column) const {
    for (const DatasetSchema& s : tables_) {
      if (s.FindColumn(column) != nullptr) return true;
    }
    return false;
  }

  std::string NameOf(const TableColumn& c) const {
    const DatasetSchema& s = tables_[c.first];
    if (!s.is_public && c.second == s.privacy_unit) return joined_->privacy_unit;
    return query::JoinedColumnName(Alias(c.first), c.second);
  }

  absl::Status Rewrite(Statement& s) {
    for (SelectItem& item : s.select) {
      // The output column keeps the name the analyst wrote (`p.age` is called age).
      if (item.alias.empty() && item.expr.kind == Expr::Kind::kColumn) item.alias = item.expr.name;
      RETURN_IF_ERROR(RewriteExpr(item.expr));
    }
    if (s.has_where) RETURN_IF_ERROR(RewriteExpr(s.where));
    for (Expr& g : s.group_by) RETURN_IF_ERROR(RewriteExpr(g));
    for (OrderItem& o : s.order_by) RETURN_IF_ERROR(RewriteOrderItem(s, o.expr));
    for (DpOption& o : s.options) {
      if (o.name != "privacy_unit_column") continue;
      if (o.value.kind == Expr::Kind::kColumn) RETURN_IF_ERROR(RewriteExpr(o.value));
      if (o.value.kind == Expr::Kind::kString && AnyUnitIs(o.value.text)) {
        o.value.text = joined_->privacy_unit;
      }
    }
    s.table = joined_->name;
    s.table_alias.clear();
    s.joins.clear();
    return absl::OkStatus();
  }

  // ORDER BY sorts the released rows by an output column: a name the select list outputs stays
  // as written (`ORDER BY n`, `ORDER BY region` for `SELECT p.region`); a table column the select
  // list outputs (`ORDER BY p.region`, or `status` selected under an alias) becomes that output.
  absl::Status RewriteOrderItem(const Statement& s, Expr& e) {
    if (e.kind != Expr::Kind::kColumn) return RewriteExpr(e);
    if (e.qualifier.empty()) {
      for (const SelectItem& item : s.select) {
        if (item.alias == e.name) return absl::OkStatus();
      }
    }
    RETURN_IF_ERROR(RewriteExpr(e));
    for (const SelectItem& item : s.select) {
      if (item.expr.kind == Expr::Kind::kColumn && item.expr.name == e.name) {
        e.name = item.alias;
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  bool AnyUnitIs(const std::string& column) const {
    for (const DatasetSchema& s : tables_) {
      if (!s.is_public && s.privacy_unit == column) return true;
    }
    return false;
  }

  const Statement& st_;
  const std::vector<DatasetSchema>& tables_;
  std::shared_ptr<query::JoinRequest> request_;
  std::map<TableColumn, TableColumn> same_;  // a USING right side -> its left side
  const DatasetSchema* joined_ = nullptr;
};

}  // namespace

std::shared_ptr<query::JoinRequest> JoinTablesOf(const Statement& statement) {
  if (statement.joins.empty()) return nullptr;
  auto out = std::make_shared<query::JoinRequest>();
  const auto add = [&out](const std::string& table, const std::string& alias) {
    out->tables.push_back({table, alias.empty() ? table : alias});
  };
  add(statement.table, statement.table_alias);
  for (const JoinClause& j : statement.joins) add(j.table, j.table_alias);
  out->on.resize(statement.joins.size());
  return out;
}

absl::StatusOr<ResolvedJoin> ResolveJoin(const Statement& statement,
                                         const std::vector<query::DatasetSchema>& tables) {
  if (statement.joins.empty() || tables.size() != statement.joins.size() + 1) {
    return absl::InternalError("sql: ResolveJoin needs one schema per joined table");
  }
  return JoinResolver(statement, tables).Resolve();
}

absl::StatusOr<CompiledStatement> AnalyzeJoin(const ResolvedJoin& resolved) {
  absl::StatusOr<CompiledStatement> compiled = Analyze(resolved.statement, resolved.schema);
  if (!compiled.ok() && resolved.schema.join != nullptr) {
    return resolved.schema.join->WithWrittenNames(compiled.status());
  }
  return compiled;
}

}  // namespace dpq::sql
