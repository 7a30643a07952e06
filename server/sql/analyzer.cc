#include "server/sql/analyzer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql {
namespace {

using query::AggregateKind;
using query::ColumnSchema;
using query::DatasetSchema;
using query::QuerySpec;

// The literal's text as the filter language spells it (sign folded into the number).
absl::optional<std::string> FilterLiteral(const Expr& e) {
  if (e.kind == Expr::Kind::kString) {
    std::string out = "'";
    for (char c : e.text) {
      out.push_back(c);
      if (c == '\'') out.push_back('\'');
    }
    out.push_back('\'');
    return out;
  }
  if (e.kind == Expr::Kind::kNumber) return e.text;
  if (e.kind == Expr::Kind::kUnary && (e.op == "-" || e.op == "+") &&
      e.children[0].kind == Expr::Kind::kNumber) {
    return absl::StrCat(e.op == "-" ? "-" : "", e.children[0].text);
  }
  return absl::nullopt;
}

std::string OutputTypeOf(query::ColumnType t) {
  switch (t) {
    case query::ColumnType::kInteger:
      return "int64";
    case query::ColumnType::kDouble:
      return "float64";
    case query::ColumnType::kText:
      return "string";
  }
  return "string";
}

class Analyzer {
 public:
  Analyzer(const Statement& st, const DatasetSchema& schema) : st_(st), schema_(schema) {}

  absl::StatusOr<CompiledStatement> Run() {
    out_.dataset = schema_.name;
    RETURN_IF_ERROR(Options());
    RETURN_IF_ERROR(GroupBy());
    if (st_.has_where) {
      ASSIGN_OR_RETURN(where_, RenderWhere(st_.where));
      RETURN_IF_ERROR(DeclaredKeys());
    }
    int unnamed = 0;
    for (const SelectItem& item : st_.select) {
      OutputColumn column;
      if (item.expr.kind == Expr::Kind::kStar) {
        return Unsupported(item.pos, "SELECT * is not supported: name the group keys and aggregates");
      }
      ASSIGN_OR_RETURN(column.expr, Output(item.expr));
      column.name = !item.alias.empty() ? item.alias
                    : item.expr.kind == Expr::Kind::kColumn ? item.expr.name
                                                            : absl::StrCat("f", unnamed++, "_");
      column.type = TypeOf(column.expr);
      out_.columns.push_back(std::move(column));
    }
    if (out_.parts.empty()) {
      return Invalid(st_.pos, "a DP SELECT needs at least one aggregate (COUNT, SUM, AVG, VAR_POP, "
                              "STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILES)");
    }
    RETURN_IF_ERROR(SplitBudget());
    RETURN_IF_ERROR(OrderBy());
    if (st_.has_limit) out_.limit = st_.limit;
    return std::move(out_);
  }

 private:
  // ---- OPTIONS ----
  absl::Status Options() {
    std::set<std::string> seen;
    bool has_epsilon = false;
    for (const DpOption& o : st_.options) {
      if (!seen.insert(o.name).second) {
        return Invalid(o.pos, absl::StrCat("option ", o.name, " is given twice"));
      }
      if (o.name == "epsilon" || o.name == "delta" || o.name == "max_groups_contributed") {
        absl::optional<double> v = NumberOf(o.value);
        if (!v) return Invalid(o.value.pos, absl::StrCat("option ", o.name, " must be a number"));
        if (o.name == "epsilon") {
          if (!(*v > 0)) return Invalid(o.value.pos, "epsilon must be > 0");
          out_.epsilon = *v;
          has_epsilon = true;
        } else if (o.name == "delta") {
          if (!(*v >= 0 && *v < 1)) return Invalid(o.value.pos, "delta must lie in [0, 1)");
          out_.delta = *v;
        } else {
          if (*v != std::floor(*v) || *v < 1 || *v > 10000) {
            return Invalid(o.value.pos, "max_groups_contributed must be a whole number in [1, 10000]");
          }
          max_groups_ = static_cast<int>(*v);
        }
      } else if (o.name == "mechanism") {
        RETURN_IF_ERROR(MechanismOption(o));
      } else if (o.name == "max_rows_per_group") {
        RETURN_IF_ERROR(MaxRowsOption(o));
      } else if (o.name == "max_rows_contributed") {
        RETURN_IF_ERROR(MaxRowsContributedOption(o));
      } else if (o.name == "privacy_unit_column") {
        std::string name;
        if (o.value.kind == Expr::Kind::kColumn && o.value.qualifier.empty()) {
          name = o.value.name;
        } else if (o.value.kind == Expr::Kind::kString) {
          name = o.value.text;
        } else {
          return Invalid(o.value.pos, "privacy_unit_column must name a column");
        }
        if (name != schema_.privacy_unit) {
          return Invalid(o.value.pos,
                         absl::StrCat("privacy_unit_column ", name, " is not the privacy unit of ",
                                      schema_.name, ", which is ", schema_.privacy_unit,
                                      " (declared with the dataset)"));
        }
      } else {
        return Invalid(o.pos, absl::StrCat(
                                  "option ", o.name,
                                  " is not supported: the options are epsilon, delta, "
                                  "max_groups_contributed, max_rows_contributed, "
                                  "privacy_unit_column and dpq's mechanism and "
                                  "max_rows_per_group"));
      }
    }
    if (!has_epsilon) {
      return Invalid(st_.options_pos, "OPTIONS must give epsilon, e.g. OPTIONS (epsilon = 1)");
    }
    if (max_rows_contributed_ > 0 && seen.count("max_groups_contributed") > 0) {
      return Invalid(max_rows_contributed_pos_,
                     "give max_groups_contributed or max_rows_contributed, not both (as ZetaSQL)");
    }
    if (mechanism_ == query::MechanismKind::kGaussian && !(out_.delta > 0)) {
      return Invalid(mechanism_pos_, "mechanism 'gaussian' needs delta > 0 in OPTIONS (it is "
                                     "(epsilon, delta)-DP); use 'laplace' for delta = 0");
    }
    return absl::OkStatus();
  }

  // dpq extension: mechanism = 'laplace' (default) | 'gaussian', a string or a bare word, as the
  // flag --mechanism.
  absl::Status MechanismOption(const DpOption& o) {
    std::string word;
    if (o.value.kind == Expr::Kind::kColumn && o.value.qualifier.empty()) {
      word = o.value.name;
    } else if (o.value.kind == Expr::Kind::kString) {
      word = absl::AsciiStrToLower(o.value.text);
    }
    if (word == "laplace") {
      mechanism_ = query::MechanismKind::kLaplace;
    } else if (word == "gaussian") {
      mechanism_ = query::MechanismKind::kGaussian;
    } else {
      return Invalid(o.value.pos, "mechanism must be 'laplace' or 'gaussian'");
    }
    mechanism_pos_ = o.pos;
    return absl::OkStatus();
  }

  // dpq extension: K, the rows kept per unit and group by the row-clamped aggregates (VAR_POP,
  // STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILES, SUM/AVG with contribution_bounds_per_row);
  // the range of the flag --max-contributions. No effect on COUNT or per-unit SUM/AVG.
  absl::Status MaxRowsOption(const DpOption& o) {
    ASSIGN_OR_RETURN(max_rows_, RowCountOption(o));
    return absl::OkStatus();
  }

  // A row-count option's value: a whole number in [1, kMaxRowsPerGroup] (the flag
  // --max-contributions range), refused at the value's position otherwise.
  absl::StatusOr<int> RowCountOption(const DpOption& o) {
    absl::optional<double> v = NumberOf(o.value);
    if (!v || *v != std::floor(*v) || *v < 1 || *v > kMaxRowsPerGroup) {
      return Invalid(o.value.pos, absl::StrCat(o.name, " must be a whole number in [1, ",
                                               kMaxRowsPerGroup, "]"));
    }
    return static_cast<int>(*v);
  }

  // ZetaSQL's max_rows_contributed = K: each unit contributes at most K rows to the whole
  // statement, across all groups. dpq answers it where that is exactly the flag histogram's
  // bounding (K rows per unit across all bins): COUNT with GROUP BY one text column (the text
  // histogram over its categories), with GROUP BY a WIDTH_BUCKET alone, or without GROUP BY.
  absl::Status MaxRowsContributedOption(const DpOption& o) {
    ASSIGN_OR_RETURN(max_rows_contributed_, RowCountOption(o));
    max_rows_contributed_pos_ = o.pos;
    return absl::OkStatus();
  }

  // ---- names ----
  absl::StatusOr<const ColumnSchema*> Column(const Expr& e) {
    if (!e.qualifier.empty() && e.qualifier != st_.table && e.qualifier != st_.table_alias) {
      return Invalid(e.pos, absl::StrCat("unknown table ", e.qualifier, ": FROM names ",
                                         st_.table_alias.empty() ? st_.table : st_.table_alias));
    }
    const ColumnSchema* c = schema_.FindColumn(e.name);
    if (c == nullptr) {
      return Invalid(e.pos, absl::StrCat("column ", e.name, " does not exist in dataset ", schema_.name));
    }
    return c;
  }

  // ---- GROUP BY ----
  absl::Status GroupBy() {
    for (const Expr& g : st_.group_by) {
      const Expr& by = SelectedWidthBucket(g);
      if (IsWidthBucket(by)) {
        RETURN_IF_ERROR(GroupByWidthBucket(by, g.pos));
        continue;
      }
      if (g.kind != Expr::Kind::kColumn) {
        return Unsupported(g.pos, "GROUP BY lists columns and WIDTH_BUCKET(column, ...) only, not "
                                  "other expressions");
      }
      ASSIGN_OR_RETURN(const ColumnSchema* c, Column(g));
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
      if (c->categories.empty()) needs_selection_ = true;
    }
    if (!bucket_column_.empty()) {
      // The bucket number is the key's last value (sql_execution.cc appends it to each row).
      out_.width_bucket = true;
      key_types_.push_back(query::ColumnType::kInteger);
      out_.group_types.push_back(query::ColumnType::kInteger);
    }
    return absl::OkStatus();
  }

  // ---- Declared keys from WHERE (dpq extension; the flag --keys) ----
  // Grouped by one column, a top-level AND-conjunct `col IN (literals)` or `col = literal` on that
  // column states the public key domain: every listed key is released (an empty one too), no
  // partition selection, no delta for it. The list is the query text's, never the data's. Several
  // such conjuncts: their intersection (the only keys a row can have). Text columns take 'string'
  // literals, integer columns whole numbers (the scan compares keys as text, so they are written
  // as PostgreSQL prints an integer); a float column, or any other form, states no key list.
  absl::Status DeclaredKeys() {
    if (out_.group_by.size() != 1) return absl::OkStatus();
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
      return Invalid(pos, absl::StrCat("WHERE lists more than ", query::kMaxKeys, " keys of ", column));
    }
    for (const std::string& k : *keys) {
      if (k.size() > query::kMaxCategoryLength || k.find('\0') != std::string::npos) {
        return Invalid(pos, absl::StrCat("a key of ", column, " is at most ", query::kMaxCategoryLength,
                                         " bytes without NUL"));
      }
    }
    keys_ = std::move(*keys);
    needs_selection_ = false;
    return absl::OkStatus();
  }

  // The keys `e` lists for the single GROUP BY column (duplicates dropped), or none.
  absl::optional<std::vector<std::string>> KeyList(const Expr& e) const {
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

  // GROUP BY <alias> of a select item `WIDTH_BUCKET(...) AS alias` (when no column has that name,
  // as PostgreSQL resolves it): that call; else `g` itself.
  const Expr& SelectedWidthBucket(const Expr& g) const {
    if (g.kind != Expr::Kind::kColumn || !g.qualifier.empty() || schema_.FindColumn(g.name) != nullptr) {
      return g;
    }
    for (const SelectItem& item : st_.select) {
      if (item.alias == g.name && IsWidthBucket(item.expr)) return item.expr;
    }
    return g;
  }

  // The bucketed column and edges of a WIDTH_BUCKET call (width_bucket.h).
  absl::StatusOr<std::pair<std::string, std::vector<double>>> WidthBucketGrid(const Expr& call) {
    if (call.children.empty() || call.children[0].kind != Expr::Kind::kColumn) {
      return Invalid(call.children.empty() ? call.pos : call.children[0].pos,
                     "WIDTH_BUCKET's first argument is a numeric column");
    }
    ASSIGN_OR_RETURN(const ColumnSchema* c, Column(call.children[0]));
    if (!c->is_numeric()) {
      return Invalid(call.children[0].pos,
                     absl::StrCat("WIDTH_BUCKET needs a numeric column; ", c->name, " is text"));
    }
    if (c->name == schema_.privacy_unit) {
      return Invalid(call.children[0].pos, "WIDTH_BUCKET of the privacy unit column would bucket units");
    }
    ASSIGN_OR_RETURN(std::vector<double> edges, WidthBucketEdges(call));
    return std::make_pair(c->name, std::move(edges));
  }

  absl::Status GroupByWidthBucket(const Expr& call, Position at) {
    if (!bucket_column_.empty()) return Invalid(at, "GROUP BY takes at most one WIDTH_BUCKET");
    ASSIGN_OR_RETURN(auto grid, WidthBucketGrid(call));
    bucket_column_ = grid.first;
    bucket_edges_ = std::move(grid.second);
    return absl::OkStatus();
  }

  // WIDTH_BUCKET(...) in the select list: the bucket key, when it is the GROUP BY's one.
  absl::StatusOr<OutputExpr> WidthBucketKey(const Expr& call) {
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


  // ---- WHERE: the filter language of --where, in SQL syntax ----
  absl::StatusOr<std::string> RenderWhere(const Expr& e) {
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
        ASSIGN_OR_RETURN(const ColumnSchema* c, Column(*col));
        if (lit->kind == Expr::Kind::kNull) {
          return Invalid(lit->pos, "a comparison with NULL is never true: write IS NULL or IS NOT NULL");
        }
        absl::optional<std::string> l = FilterLiteral(*lit);
        if (!l) return Unsupported(lit->pos, "WHERE compares a column with a literal (a number or a 'string')");
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
        ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e.children[0]));
        std::vector<std::string> lits;
        for (size_t i = 1; i < e.children.size(); ++i) {
          absl::optional<std::string> l = FilterLiteral(e.children[i]);
          if (!l) return Unsupported(e.children[i].pos, "expected a literal (a number or a 'string')");
          lits.push_back(*l);
        }
        if (e.kind == Expr::Kind::kIn) {
          return absl::StrCat(c->name, e.negated ? " NOT IN (" : " IN (", absl::StrJoin(lits, ", "), ")");
        }
        return absl::StrCat(c->name, e.negated ? " NOT BETWEEN " : " BETWEEN ", lits[0], " AND ", lits[1]);
      }
      case Expr::Kind::kIsNull: {
        if (e.children[0].kind != Expr::Kind::kColumn) {
          return Unsupported(e.children[0].pos, "IS NULL tests a column");
        }
        ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e.children[0]));
        return absl::StrCat(c->name, e.negated ? " IS NOT NULL" : " IS NULL");
      }
      case Expr::Kind::kCall:
        return Unsupported(e.pos, "WHERE cannot call functions or aggregates");
      default:
        break;
    }
    return Unsupported(e.pos, "WHERE supports comparisons of a column with a literal, IN, BETWEEN, "
                              "IS [NOT] NULL, AND, OR and NOT");
  }

  // ---- select list ----
  absl::StatusOr<OutputExpr> Output(const Expr& e) {
    OutputExpr o;
    switch (e.kind) {
      case Expr::Kind::kCall:
        if (IsWidthBucket(e)) return WidthBucketKey(e);
        return Aggregate(e);
      case Expr::Kind::kColumn: {
        ASSIGN_OR_RETURN(const ColumnSchema* c, Column(e));
        auto it = std::find(out_.group_by.begin(), out_.group_by.end(), c->name);
        if (it == out_.group_by.end()) {
          return Invalid(e.pos, absl::StrCat("column ", c->name,
                                             " must be in GROUP BY or inside an aggregate"));
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
      case Expr::Kind::kNull:
        o.kind = OutputExpr::Kind::kNull;
        return o;
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
      default:
        break;
    }
    return Unsupported(e.pos, "the select list holds group keys, aggregates, literals and + - * / "
                              "over them");
  }

  absl::Status Numeric(const OutputExpr& o, Position p) {
    const std::string t = TypeOf(o);
    if (t == "string" || t == "array<float64>") {
      return Invalid(p, absl::StrCat("arithmetic needs numbers, not a ", t));
    }
    return absl::OkStatus();
  }

  std::string TypeOf(const OutputExpr& o) const {
    switch (o.kind) {
      case OutputExpr::Kind::kPart: {
        const PartInfo& info = out_.part_info[o.index];
        if (info.array) return "array<float64>";
        return info.function == "COUNT" ? "int64" : "float64";
      }
      case OutputExpr::Kind::kKey:
        return OutputTypeOf(key_types_[o.index]);
      case OutputExpr::Kind::kString:
        return "string";
      case OutputExpr::Kind::kNumber:
        return o.text.find_first_not_of("0123456789") == std::string::npos ? "int64" : "float64";
      case OutputExpr::Kind::kNull:
        return "float64";
      default:
        return "float64";
    }
  }

  struct Bounds {
    double lower = 0;
    double upper = 0;
    Position pos;
  };

  absl::StatusOr<Bounds> BoundsOf(const Expr& named) {
    const Expr& v = named.children[0];
    if (v.kind != Expr::Kind::kTuple || v.children.size() != 2) {
      return Invalid(v.pos, absl::StrCat(named.name, " takes two numbers: (lower, upper)"));
    }
    absl::optional<double> lo = NumberOf(v.children[0]);
    absl::optional<double> hi = NumberOf(v.children[1]);
    if (!lo || !hi) return Invalid(v.pos, absl::StrCat(named.name, " takes two number literals"));
    if (!(*lo < *hi)) {
      return Invalid(v.pos, absl::StrCat(named.name, ": lower must be < upper"));
    }
    return Bounds{*lo, *hi, v.pos};
  }

  // COUNT's contribution_bounds_per_group => (L, U): a unit's row count in the group clamped to
  // [L, U] (ZetaSQL), whole numbers 0 <= L < U <= 1000000. With L = 0 that is exactly the count
  // of the rows kept with at most K = U rows per unit and group (the flag count with K = U, the
  // same plan and fingerprint); with L > 0 the count is pre-aggregated per unit
  // (QuerySpec::pre_aggregate), the flag count with --per-unit --lower L --upper U. Without
  // bounds U = 1: each unit counted once.
  absl::Status CountBounds(const Bounds& b, QuerySpec& spec) {
    if (b.lower != std::floor(b.lower) || b.lower < 0) {
      return Invalid(b.pos, "COUNT's lower bound is a whole number of rows >= 0");
    }
    if (b.upper != std::floor(b.upper) || b.upper > 1000000) {
      return Invalid(b.pos, "COUNT's upper bound is a whole number of rows in [1, 1000000]");
    }
    if (b.lower == 0) {
      spec.max_contributions = static_cast<int>(b.upper);
      return absl::OkStatus();
    }
    spec.pre_aggregate = true;
    spec.lower = b.lower;
    spec.upper = b.upper;
    return absl::OkStatus();
  }

  // COUNT with a WIDTH_BUCKET group is the flag histogram over the buckets: each unit keeps at
  // most K = U rows of a group (all buckets together), the released vector moves by at most K.
  absl::Status CountAsHistogram(const absl::optional<Bounds>& bounds, QuerySpec& spec) {
    if (spec.pre_aggregate) {
      return Unsupported(bounds->pos, "with a WIDTH_BUCKET group COUNT's contribution_bounds_per_group "
                                      "must start at 0 (the histogram keeps at most U rows per unit)");
    }
    spec.aggregate = AggregateKind::kHistogram;
    spec.column = bucket_column_;
    spec.bins = bucket_edges_;
    return absl::OkStatus();
  }

  // COUNT under max_rows_contributed (MaxRowsContributedOption): K rows per unit in all, so the released counts move
  // by at most K in L1 together, the bound of the flag histogram (planner.cc, kHistogram).
  absl::Status CountWithRowBound(const absl::optional<Bounds>& bounds, QuerySpec& spec) {
    if (bounds) {
      return Invalid(bounds->pos, "with max_rows_contributed COUNT takes no "
                                  "contribution_bounds_per_group: K bounds a unit's rows across "
                                  "all groups");
    }
    spec.max_contributions = max_rows_contributed_;
    spec.max_partitions = 1;
    if (!bucket_column_.empty()) {
      if (!out_.group_by.empty()) {
        return Unsupported(st_.group_by_pos, "with max_rows_contributed a WIDTH_BUCKET group must "
                                             "be the only GROUP BY item");
      }
      return CountAsHistogram(bounds, spec);
    }
    if (out_.group_by.empty()) return absl::OkStatus();  // K rows per unit, one count
    if (out_.group_by.size() != 1 || out_.group_types[0] != query::ColumnType::kText ||
        !keys_.empty()) {
      return Unsupported(st_.group_by_pos,
                         "max_rows_contributed is supported with GROUP BY one text column (no key "
                         "list in WHERE), a WIDTH_BUCKET alone, or no GROUP BY; give "
                         "max_groups_contributed otherwise");
    }
    // The flag text histogram: its column's categories (declared, or selected like keys) are the
    // groups; NULL values are dropped, as the flag histogram drops them.
    spec.aggregate = AggregateKind::kHistogram;
    spec.column = out_.group_by[0];
    spec.group_by.clear();
    out_.category_histogram = true;
    return absl::OkStatus();
  }

  absl::StatusOr<OutputExpr> Aggregate(const Expr& call) {
    const std::map<std::string, AggregateKind>& kKinds = SqlAggregateFunctions();
    const std::string& f = call.name;
    if (in_aggregate_) return Invalid(call.pos, "aggregates cannot be nested");
    auto kind = kKinds.find(f);
    if (kind == kKinds.end()) {
      if (f == "MIN" || f == "MAX") {
        return Unsupported(call.pos, absl::StrCat(f, " is not supported: a DP minimum or maximum is "
                                                     "dominated by one unit; use PERCENTILE_CONT(col, ",
                                                  f == "MIN" ? "0" : "1", ")"));
      }
      return Unsupported(call.pos, absl::StrCat("function ", f, " is not supported: the aggregates "
                                                "are COUNT, SUM, AVG, VAR_POP, STDDEV_POP, "
                                                "PERCENTILE_CONT and APPROX_QUANTILES"));
    }
    if (max_rows_contributed_ > 0 && f != "COUNT") {
      return Unsupported(call.pos, absl::StrCat(f, " is not supported with max_rows_contributed: "
                                                   "dpq answers COUNT under it (a histogram); give "
                                                   "max_groups_contributed for ", f));
    }
    if (!bucket_column_.empty() && f != "COUNT") {
      return Unsupported(call.pos, absl::StrCat(f, " is not supported with a WIDTH_BUCKET group: "
                                                   "it releases a histogram of counts (COUNT only)"));
    }
    if (out_.parts.size() == kMaxAggregatesPerStatement) {
      return Invalid(call.pos, absl::StrCat("at most ", kMaxAggregatesPerStatement,
                                            " aggregates per statement"));
    }
    bool per_group = f == "COUNT" || f == "SUM" || f == "AVG";
    // dpq extension: SUM / AVG also take contribution_bounds_per_row (row-level, K rows).
    const bool either_bounds = f == "SUM" || f == "AVG";
    const std::string usual_name = per_group ? "contribution_bounds_per_group" : "contribution_bounds_per_row";
    std::string bounds_name = usual_name;
    std::vector<const Expr*> positional;
    absl::optional<Bounds> bounds;
    for (const Expr& arg : call.children) {
      if (arg.kind == Expr::Kind::kNamedArg) {
        const bool row_level = either_bounds && arg.name == "contribution_bounds_per_row";
        if (arg.name != usual_name && !row_level) {
          return Invalid(arg.pos, absl::StrCat("named argument ", arg.name, " is not supported by ",
                                               f, ": it takes ", usual_name, " => (lower, upper)",
                                               either_bounds ? " or contribution_bounds_per_row => "
                                                               "(lower, upper)"
                                                             : ""));
        }
        if (bounds && arg.name != bounds_name) {  // both kinds of bounds
          return Invalid(arg.pos, absl::StrCat(f, " takes contribution_bounds_per_group (a unit's ",
                                               f == "SUM" ? "sum" : "mean", " clamped) or "
                                               "contribution_bounds_per_row (rows clamped), not both"));
        }
        if (bounds) return Invalid(arg.pos, absl::StrCat(bounds_name, " is given twice"));
        if (row_level) {
          per_group = false;
          bounds_name = arg.name;
        }
        ASSIGN_OR_RETURN(Bounds b, BoundsOf(arg));
        bounds = b;
      } else {
        if (bounds) return Invalid(arg.pos, "positional arguments come before named ones");
        positional.push_back(&arg);
      }
    }
    const size_t want = (f == "PERCENTILE_CONT" || f == "APPROX_QUANTILES") ? 2 : 1;
    if (positional.size() != want) {
      return Invalid(call.pos, absl::StrCat(f, " takes ", want == 2 ? "a column and a number" : "one column",
                                            ", got ", positional.size(), " arguments"));
    }
    QuerySpec spec;
    spec.dataset = schema_.name;
    spec.aggregate = kind->second;
    spec.max_partitions = max_groups_;
    spec.group_by = out_.group_by;
    std::string where = where_;
    const Expr& arg = *positional[0];
    const ColumnSchema* column = nullptr;
    if (arg.kind == Expr::Kind::kStar) {
      if (f != "COUNT") return Invalid(arg.pos, absl::StrCat(f, "(*) is not defined: name a column"));
    } else if (arg.kind == Expr::Kind::kColumn) {
      ASSIGN_OR_RETURN(column, Column(arg));
      if (f != "COUNT" && !column->is_numeric()) {
        return Invalid(arg.pos, absl::StrCat(f, " needs a numeric column; ", column->name, " is text"));
      }
    } else {
      in_aggregate_ = true;
      absl::Status nested = Output(arg).status();
      in_aggregate_ = false;
      if (!nested.ok() && absl::StrContains(nested.message(), "nested")) return nested;
      return Unsupported(arg.pos, absl::StrCat(f, " of an expression is not supported: aggregate a "
                                               "column (filter rows with WHERE)"));
    }
    if (f == "COUNT") {
      spec.max_contributions = 1;
      if (max_rows_contributed_ > 0) {
        RETURN_IF_ERROR(CountWithRowBound(bounds, spec));
      } else {
        if (bounds) RETURN_IF_ERROR(CountBounds(*bounds, spec));
        if (!bucket_column_.empty()) RETURN_IF_ERROR(CountAsHistogram(bounds, spec));
      }
      if (column != nullptr) {
        const std::string not_null = absl::StrCat(column->name, " IS NOT NULL");
        where = where.empty() ? not_null : absl::StrCat("(", where, ") AND ", not_null);
      }
    } else {
      spec.column = column->name;
      if (bounds) {
        spec.lower = bounds->lower;
        spec.upper = bounds->upper;
      } else if (!column->lower.has_value()) {
        return Invalid(call.pos, absl::StrCat(f, ": column ", column->name, " has no declared bounds: "
                                              "give ", bounds_name, " => (lower, upper)"));
      } else {
        // The declared bounds, written out: the planner resolves them alike (same plan, same
        // fingerprint), and ExplainSql can show them.
        spec.lower = column->lower;
        spec.upper = column->upper;
      }
      if (per_group) {
        spec.pre_aggregate = true;
        spec.max_contributions = 1;
      } else {
        spec.max_contributions = max_rows_;
      }
      if (spec.aggregate == AggregateKind::kQuantile) {
        absl::optional<double> n = NumberOf(*positional[1]);
        if (!n) return Invalid(positional[1]->pos, absl::StrCat(f, ": the second argument is a number"));
        if (f == "PERCENTILE_CONT") {
          if (!(*n >= 0 && *n <= 1)) {
            return Invalid(positional[1]->pos, "PERCENTILE_CONT's percentile lies in [0, 1]");
          }
          spec.quantiles = {*n};
        } else {
          if (*n != std::floor(*n) || *n < 1 || *n > 99) {
            return Invalid(positional[1]->pos,
                           "APPROX_QUANTILES takes a whole number of quantiles in [1, 99]");
          }
          const int count = static_cast<int>(*n);
          for (int i = 0; i <= count; ++i) spec.quantiles.push_back(static_cast<double>(i) / count);
        }
      }
    }
    spec.where = where;
    spec.keys = keys_;
    if (mechanism_ == query::MechanismKind::kGaussian) {
      if (spec.aggregate == AggregateKind::kQuantile) {
        return Invalid(call.pos, absl::StrCat(f, " uses the exponential mechanism (pure epsilon-DP): "
                                              "mechanism 'gaussian' does not apply; ask it in a "
                                              "statement without that option"));
      }
      spec.mechanism = mechanism_;
    }
    if (!out_.group_by.empty() && needs_selection_ && !(out_.delta > 0)) {
      return Invalid(st_.group_by_pos,
                     absl::StrCat("GROUP BY ", absl::StrJoin(out_.group_by, ", "),
                                  ": a column without declared categories, so the groups are chosen "
                                  "by DP partition selection, which needs delta > 0 in OPTIONS"));
    }
    if (f == "PERCENTILE_CONT") {
      absl::optional<OutputExpr> shared = LevelOfEarlierPercentile(spec);
      if (shared) return *shared;
    }
    out_.parts.push_back(std::move(spec));
    out_.part_info.push_back({f, f == "APPROX_QUANTILES", call.pos});
    OutputExpr o;
    o.kind = OutputExpr::Kind::kPart;
    o.index = static_cast<int>(out_.parts.size() - 1);
    return o;
  }

  // PERCENTILE_CONT calls on the same column with the same bounds are one quantile part with
  // several levels, as the flag query `--aggregate quantile --quantiles q1,q2,...` asks them:
  // one release, one share of epsilon, the planner's joint selection (planner.cc, kQuantile)
  // rather than one part per level. Returns the call's value in that earlier part, or none
  // (`spec`, a single level, is then a part of its own).
  absl::optional<OutputExpr> LevelOfEarlierPercentile(const QuerySpec& spec) {
    for (size_t j = 0; j < out_.parts.size(); ++j) {
      QuerySpec& p = out_.parts[j];
      if (out_.part_info[j].function != "PERCENTILE_CONT" || p.column != spec.column ||
          p.lower != spec.lower || p.upper != spec.upper ||
          p.max_contributions != spec.max_contributions || p.where != spec.where) {
        continue;
      }
      const double q = spec.quantiles[0];
      auto at = std::find(p.quantiles.begin(), p.quantiles.end(), q);
      if (at == p.quantiles.end()) {
        p.quantiles.push_back(q);
        at = p.quantiles.end() - 1;
      }
      OutputExpr o;
      o.kind = OutputExpr::Kind::kPart;
      o.index = static_cast<int>(j);
      o.level = static_cast<int>(at - p.quantiles.begin());
      return o;
    }
    return absl::nullopt;
  }

  // Shares in the ledger's units, so the parts' charges add up to the statement's: exactly up to
  // epsilon 1125 (2^50 units); above, each share travels as a double in QuerySpec::epsilon and may
  // come back a few dozen units (1e-12 each) off, so the sum is within 4.5e-10 at epsilon 1e6
  // (the bound is derived in tests/fuzz/sql_fuzz.cc, which checks it).
  absl::Status SplitBudget() {
    // Out of range (e.g. above the largest epsilon of one query): the message points at OPTIONS.
    absl::StatusOr<int64_t> eps = query::EpsilonToUnits(out_.epsilon, "epsilon", query::kMaxEpsilon);
    if (!eps.ok()) return Invalid(st_.options_pos, eps.status().message());
    const int64_t eps_units = *eps;
    const int64_t n = static_cast<int64_t>(out_.parts.size());
    if (eps_units < n) return Invalid(st_.options_pos, "epsilon is too small to split over the aggregates");
    out_.epsilon = query::EpsilonFromUnits(eps_units);
    for (int64_t i = 0; i < n; ++i) {
      out_.parts[i].epsilon = query::EpsilonFromUnits(eps_units / n + (i < eps_units % n ? 1 : 0));
    }
    // Gaussian parts need delta for their noise too (and, grouped by selected keys, half of it
    // for the selection: planner.cc), so every part gets a share, as `--mechanism gaussian` does.
    if ((needs_selection_ && !out_.group_by.empty()) || mechanism_ == query::MechanismKind::kGaussian) {
      absl::StatusOr<int64_t> delta = query::DeltaToUnits(out_.delta, "delta");
      if (!delta.ok()) return Invalid(st_.options_pos, delta.status().message());
      const int64_t delta_units = *delta;
      if (delta_units < n) return Invalid(st_.options_pos, "delta is too small to split over the aggregates");
      out_.delta = query::DeltaFromUnits(delta_units);
      for (int64_t i = 0; i < n; ++i) {
        out_.parts[i].delta = query::DeltaFromUnits(delta_units / n + (i < delta_units % n ? 1 : 0));
      }
    } else {
      // Nothing needs delta: pure epsilon-DP (Laplace), nothing of delta is charged.
      out_.delta = 0;
    }
    return absl::OkStatus();
  }

  absl::Status OrderBy() {
    for (const OrderItem& item : st_.order_by) {
      int found = -1;
      if (item.expr.kind == Expr::Kind::kNumber) {
        absl::optional<double> v = NumberOf(item.expr);
        if (!v || *v != std::floor(*v) || *v < 1 || *v > static_cast<double>(out_.columns.size())) {
          return Invalid(item.pos, absl::StrCat("ORDER BY position must lie in [1, ",
                                                out_.columns.size(), "]"));
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
        return Unsupported(item.pos, "ORDER BY names an output column (its alias or name) or its "
                                     "position: it acts on the released rows only");
      }
      if (out_.columns[found].type == "array<float64>") {
        return Invalid(item.pos, "ORDER BY cannot sort by an array");
      }
      out_.order_by.push_back({found, item.descending});
    }
    return absl::OkStatus();
  }

  const Statement& st_;
  const DatasetSchema& schema_;
  CompiledStatement out_;
  int max_groups_ = 1;
  int max_rows_ = kRowClampedMaxContributions;
  int max_rows_contributed_ = 0;  // OPTIONS max_rows_contributed; 0: not given
  Position max_rows_contributed_pos_;
  query::MechanismKind mechanism_ = query::MechanismKind::kLaplace;
  Position mechanism_pos_;
  std::vector<std::string> keys_;  // DeclaredKeys(): the key list the WHERE clause states
  bool needs_selection_ = false;
  bool in_aggregate_ = false;
  std::vector<query::ColumnType> key_types_;
  std::string where_;
  // GROUP BY WIDTH_BUCKET(...): the bucketed column (empty: none) and its bucket edges.
  std::string bucket_column_;
  std::vector<double> bucket_edges_;
};

}  // namespace

absl::StatusOr<std::string> DatasetOf(const Script& script) {
  if (script.statements.empty()) return absl::InvalidArgumentError("sql: the script is empty");
  const std::string& first = script.statements[0].table;
  for (const Statement& s : script.statements) {
    if (s.table != first) {
      return Invalid(s.table_pos, absl::StrCat("every statement of a script reads one dataset (",
                                               first, "); this one reads ", s.table));
    }
  }
  return first;
}

const std::map<std::string, query::AggregateKind>& SqlAggregateFunctions() {
  static const auto* const kFunctions = new std::map<std::string, query::AggregateKind>{
      {"COUNT", query::AggregateKind::kCount},       {"SUM", query::AggregateKind::kSum},
      {"AVG", query::AggregateKind::kMean},          {"VAR_POP", query::AggregateKind::kVariance},
      {"STDDEV_POP", query::AggregateKind::kStddev}, {"PERCENTILE_CONT", query::AggregateKind::kQuantile},
      {"APPROX_QUANTILES", query::AggregateKind::kQuantile}};
  return *kFunctions;
}

absl::StatusOr<CompiledStatement> Analyze(const Statement& statement, const DatasetSchema& schema) {
  Analyzer a(statement, schema);
  ASSIGN_OR_RETURN(CompiledStatement out, a.Run());
  // The WHERE clause must type-check as the --where language does (column types, literal kinds);
  // its errors point at the WHERE clause.
  for (const QuerySpec& part : out.parts) {
    if (part.where.empty()) continue;
    absl::StatusOr<query::filter::TypedFilter> typed =
        query::filter::ParseAndCheckFilter(part.where, schema);
    if (!typed.ok()) {
      std::string message(typed.status().message());
      // "where: at position N: what" names a position in the compiled filter, not in the SQL.
      const size_t cut = message.find(": ", message.find("position"));
      if (message.rfind("where: at position", 0) == 0 && cut != std::string::npos) {
        message = message.substr(cut + 2);
      }
      return absl::Status(typed.status().code(),
                          absl::StrCat("sql: ", FormatPosition(statement.where.pos), ": WHERE: ", message));
    }
  }
  return out;
}

}  // namespace dpq::sql
