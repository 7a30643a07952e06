// CheckExpression (expression.h): types a per-row expression against the declared schema and
// derives its bounds by interval arithmetic (value_interval.h). Every decision reads only the tree
// and the schema, never data, so a refusal's text is a function of the query and the schema.
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/validation.h"
#include "server/query/expression/expression.h"
#include "server/query/expression/literal_text.h"

namespace dpq::query::expression {
namespace {

using Kind = Expr::Kind;

bool IsNumeric(ValueType t) { return t == ValueType::kInt64 || t == ValueType::kFloat64; }

absl::Status Refuse(SourcePosition pos, absl::string_view message) {
  const std::string where = FormatSourcePosition(pos);
  return absl::InvalidArgumentError(where.empty() ? std::string(message)
                                                  : absl::StrCat(where, ": ", message));
}

// Depth and size first, with a recursion cut off at the limit, so a hostile tree can neither
// exhaust the stack nor make the checker's work grow past the limits.
absl::Status CheckShape(const Expr& e, int depth, int* nodes) {
  if (depth > kMaxExpressionDepth) {
    return Refuse(e.pos, absl::StrCat("the expression nests deeper than ", kMaxExpressionDepth,
                                      " levels; simplify it"));
  }
  if (++*nodes > kMaxExpressionNodes) {
    return Refuse(e.pos, absl::StrCat("the expression has more than ", kMaxExpressionNodes,
                                      " parts; simplify it"));
  }
  for (const Expr& child : e.children) {
    absl::Status s = CheckShape(child, depth + 1, nodes);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// One checked node: the typed copy and its canonical text.
struct Checked {
  Expr node;
  std::string text;
};

// Makes the checked operands `out`'s children.
void AdoptChildren(std::vector<Checked>* operands, Checked* out) {
  out->node.children.clear();
  for (Checked& operand : *operands) out->node.children.push_back(std::move(operand.node));
}

// The type of a CASE / COALESCE / LEAST / arithmetic result over operands `a` and `b` (NULL fits
// any type, INT64 with FLOAT64 gives FLOAT64); kNull when they have no common type and neither
// is NULL (the caller refuses).
bool CommonType(ValueType a, ValueType b, ValueType* out) {
  if (a == ValueType::kNull || a == b) {
    *out = b;
  } else if (b == ValueType::kNull) {
    *out = a;
  } else if (IsNumeric(a) && IsNumeric(b)) {
    *out = ValueType::kFloat64;
  } else {
    return false;
  }
  return true;
}

class Checker {
 public:
  explicit Checker(const DatasetSchema& schema) : schema_(schema) {}

  absl::StatusOr<Checked> Check(const Expr& e);
  // The bounds of a value read inside arithmetic, ABS, LEAST/GREATEST, CAST or a CASE / COALESCE
  // result (`where` names that construct): a column's declared bounds (required: the store clamps
  // it into them), a literal's value (at most kMaxBoundMagnitude), [0, 0] for a value that is
  // always NULL (it never reaches an aggregate, so any range is sound), a derived node's bounds.
  absl::StatusOr<ValueInterval> OperandBounds(const Checked& c, absl::string_view where);

  std::vector<std::string> TakeDerivation() { return std::move(derivation_); }
  void NoteDeclared(const Expr& column);

 private:
  absl::StatusOr<Checked> CheckColumn(const Expr& e);
  absl::StatusOr<Checked> CheckLiteral(const Expr& e);
  absl::StatusOr<Checked> CheckUnary(const Expr& e);
  absl::StatusOr<Checked> CheckBinary(const Expr& e);
  absl::StatusOr<Checked> CheckArithmetic(const Expr& e, Checked left, Checked right);
  absl::StatusOr<Checked> CheckIsNull(const Expr& e);
  absl::StatusOr<Checked> CheckIn(const Expr& e);
  absl::StatusOr<Checked> CheckCase(const Expr& e);
  absl::StatusOr<Checked> CheckCoalesce(const Expr& e);
  absl::StatusOr<Checked> CheckAbs(const Expr& e);
  absl::StatusOr<Checked> CheckLeastGreatest(const Expr& e);
  absl::StatusOr<Checked> CheckCast(const Expr& e);

  absl::StatusOr<std::vector<Checked>> CheckChildren(const Expr& e);
  // The common type of a CASE's results or COALESCE's arguments (`what`), and when numeric the
  // hull of their bounds (NULL results aside).
  absl::Status TypeAndHullOfResults(const std::vector<const Checked*>& results,
                                    absl::string_view what, absl::string_view where, Checked* out);
  // Sets a derived numeric node's bounds after checking them against kMaxBoundMagnitude, and
  // records the step for --explain.
  absl::Status SetDerived(Checked* c, const ValueInterval& v, absl::string_view note);

  const DatasetSchema& schema_;
  std::vector<std::string> derivation_;
  std::set<std::string> declared_noted_;
};

absl::StatusOr<std::vector<Checked>> Checker::CheckChildren(const Expr& e) {
  std::vector<Checked> out;
  out.reserve(e.children.size());
  for (const Expr& child : e.children) {
    absl::StatusOr<Checked> c = Check(child);
    if (!c.ok()) return c.status();
    out.push_back(*std::move(c));
  }
  return out;
}

void Checker::NoteDeclared(const Expr& column) {
  if (!column.bounds.has_value() || !declared_noted_.insert(column.name).second) return;
  derivation_.push_back(
      absl::StrCat(column.name, " in ", column.bounds->ToString(), " (declared)"));
}

absl::Status Checker::SetDerived(Checked* c, const ValueInterval& v, absl::string_view note) {
  absl::Status s = CheckDerivedBounds(v, QuoteForMessage(c->text));
  if (!s.ok()) return Refuse(c->node.pos, s.message());
  c->node.bounds = v;
  derivation_.push_back(absl::StrCat(c->text, " in ", v.ToString(), note));
  return absl::OkStatus();
}

absl::StatusOr<ValueInterval> Checker::OperandBounds(const Checked& c, absl::string_view where) {
  const Expr& n = c.node;
  if (n.type == ValueType::kNull) return PointInterval(0);
  if (n.kind == Kind::kColumn) {
    if (!n.bounds.has_value()) {
      return Refuse(n.pos, absl::StrCat("column ", n.name, " has no declared bounds, so it cannot ",
                                        "be read inside ", where, "; declare bounds for it ",
                                        "(dpqctl dataset create --bounds ", n.name, "=L:U)"));
    }
    NoteDeclared(n);
    return *n.bounds;
  }
  if (n.kind == Kind::kLiteral && n.bounds.has_value() &&
      std::fabs(n.bounds->lower) > kMaxBoundMagnitude) {
    return Refuse(n.pos, absl::StrCat("the number ", c.text, " inside ", where,
                                      " exceeds the largest magnitude a bound may have (1e15); "
                                      "use a smaller number"));
  }
  if (!n.bounds.has_value()) {
    return absl::InternalError(absl::StrCat("no bounds derived for ", c.text));
  }
  return *n.bounds;
}

absl::StatusOr<Checked> Checker::Check(const Expr& e) {
  switch (e.kind) {
    case Kind::kColumn: return CheckColumn(e);
    case Kind::kLiteral: return CheckLiteral(e);
    case Kind::kUnary: return CheckUnary(e);
    case Kind::kBinary: return CheckBinary(e);
    case Kind::kIsNull: return CheckIsNull(e);
    case Kind::kIn: return CheckIn(e);
    case Kind::kCase: return CheckCase(e);
    case Kind::kCoalesce: return CheckCoalesce(e);
    case Kind::kAbs: return CheckAbs(e);
    case Kind::kLeast:
    case Kind::kGreatest: return CheckLeastGreatest(e);
    case Kind::kCast: return CheckCast(e);
  }
  return Refuse(e.pos, "unknown kind of expression");
}

absl::StatusOr<Checked> Checker::CheckColumn(const Expr& e) {
  const ColumnSchema* column = schema_.FindColumn(e.name);
  if (column == nullptr) {  // identifiers are case-insensitive in ZetaSQL
    for (const ColumnSchema& c : schema_.columns) {
      if (absl::EqualsIgnoreCase(c.name, e.name)) column = &c;
    }
  }
  if (column == nullptr) {
    return Refuse(e.pos, absl::StrCat("unknown column ", e.name, " in dataset ", schema_.name,
                                      "; `dpqctl dataset show` lists its columns"));
  }
  if (column->is_calendar()) {
    // A date is read only clamped (docs/decisions.md, "Dates and timestamps"): compared with a
    // literal in the filter language (--where, or a SQL WHERE of comparisons) and grouped by
    // calendar bucket (--group-by COLUMN:BUCKET, DATE_TRUNC); never as a per-row value.
    return Refuse(e.pos,
                  absl::StrCat("column ", column->name, " is a ", ColumnTypeName(column->type),
                               ": a per-row expression cannot read it; compare it with a literal "
                               "in WHERE (with comparisons, BETWEEN, IN, IS NULL, AND, OR, NOT "
                               "only) and group it by calendar bucket (DATE_TRUNC(",
                               column->name, ", DAY|WEEK|MONTH) in SQL, --group-by ", column->name,
                               ":week with flags)"));
  }
  Checked c{e, column->name};
  c.node.name = column->name;
  c.node.column_type = column->type;
  c.node.type = column->type == ColumnType::kInteger  ? ValueType::kInt64
                : column->type == ColumnType::kDouble ? ValueType::kFloat64
                                                      : ValueType::kString;
  if (column->is_numeric() && column->lower.has_value() && column->upper.has_value()) {
    c.node.bounds = ValueInterval{*column->lower, *column->upper};
  }
  return c;
}

absl::StatusOr<Checked> Checker::CheckLiteral(const Expr& e) {
  Checked c{e, ""};
  c.node.type = e.literal_type;
  switch (e.literal_type) {
    case ValueType::kNull: c.text = "NULL"; break;
    case ValueType::kString: c.text = QuoteString(e.text); break;
    case ValueType::kBool:
      if (e.text != "TRUE" && e.text != "FALSE") return Refuse(e.pos, "a BOOL is TRUE or FALSE");
      c.text = e.text;
      break;
    case ValueType::kInt64:
    case ValueType::kFloat64: {
      absl::StatusOr<NumberValue> v = ParseNumber(e.text, e.literal_type);
      if (!v.ok()) return Refuse(e.pos, v.status().message());
      c.node.type = c.node.literal_type = v->type;
      c.node.text = NumberText(*v);
      c.node.bounds = PointInterval(v->real);
      c.text = CanonicalNumber(*v);
      break;
    }
  }
  return c;
}

absl::StatusOr<Checked> Checker::CheckUnary(const Expr& e) {
  if (e.children.size() != 1) return Refuse(e.pos, "a unary operator takes one operand");
  absl::StatusOr<Checked> operand = Check(e.children[0]);
  if (!operand.ok()) return operand.status();
  const ValueType t = operand->node.type;
  if (e.op == Op::kNot) {
    if (t != ValueType::kBool && t != ValueType::kNull) {
      return Refuse(e.pos, absl::StrCat("NOT needs a BOOL operand, got ", ValueTypeName(t)));
    }
    Checked c{e, absl::StrCat("(NOT ", operand->text, ")")};
    c.node.children = {std::move(operand->node)};
    c.node.type = ValueType::kBool;
    return c;
  }
  if (e.op != Op::kNegate) return Refuse(e.pos, "not a unary operator");
  if (!IsNumeric(t) && t != ValueType::kNull) {
    return Refuse(e.pos, absl::StrCat("unary - needs a number, got ", ValueTypeName(t)));
  }
  if (operand->node.kind == Kind::kLiteral && IsNumeric(t)) {
    // A negative number is one literal (as the SQL lexer would have it), so that IN lists and
    // literal results keep it; -0 is 0.
    const std::string& digits = operand->node.text;
    Expr literal = operand->node;
    literal.pos = e.pos;
    literal.text = (digits == "0" || digits[0] == '-') ? digits.substr(digits[0] == '-')
                                                       : absl::StrCat("-", digits);
    return CheckLiteral(literal);
  }
  Checked c{e, absl::StrCat("(-", operand->text, ")")};
  absl::StatusOr<ValueInterval> b = OperandBounds(*operand, "unary -");
  if (!b.ok()) return b.status();
  c.node.type = t == ValueType::kNull ? ValueType::kInt64 : t;
  c.node.children = {std::move(operand->node)};
  absl::Status s = SetDerived(&c, Negate(*b), "");
  if (!s.ok()) return s;
  return c;
}

absl::StatusOr<Checked> Checker::CheckBinary(const Expr& e) {
  if (e.children.size() != 2) return Refuse(e.pos, "a binary operator takes two operands");
  absl::StatusOr<std::vector<Checked>> operands = CheckChildren(e);
  if (!operands.ok()) return operands.status();
  Checked& left = (*operands)[0];
  Checked& right = (*operands)[1];
  const ValueType lt = left.node.type, rt = right.node.type;
  const std::string op(OpText(e.op));
  switch (e.op) {
    case Op::kAdd:
    case Op::kSubtract:
    case Op::kMultiply:
    case Op::kDivide: return CheckArithmetic(e, std::move(left), std::move(right));
    case Op::kAnd:
    case Op::kOr:
      for (ValueType t : {lt, rt}) {
        if (t != ValueType::kBool && t != ValueType::kNull) {
          return Refuse(e.pos, absl::StrCat(op, " needs BOOL operands, got ", ValueTypeName(lt),
                                            " and ", ValueTypeName(rt)));
        }
      }
      break;
    case Op::kNegate:
    case Op::kNot: return Refuse(e.pos, "not a binary operator");
    default: {  // comparisons
      ValueType common;
      if (!CommonType(lt, rt, &common)) {
        return Refuse(
            e.pos, absl::StrCat("cannot compare ", ValueTypeName(lt), " with ", ValueTypeName(rt),
                                " (", op, "); CAST one side to the other's type"));
      }
    }
  }
  Checked c{e, absl::StrCat("(", left.text, " ", op, " ", right.text, ")")};
  c.node.type = ValueType::kBool;
  c.node.children = {std::move(left.node), std::move(right.node)};
  return c;
}

absl::StatusOr<Checked> Checker::CheckArithmetic(const Expr& e, Checked left, Checked right) {
  const std::string op(OpText(e.op));
  ValueType type;
  if (!CommonType(left.node.type, right.node.type, &type) ||
      (!IsNumeric(type) && type != ValueType::kNull)) {
    return Refuse(
        e.pos, absl::StrCat("operator ", op, " needs numbers, got ", ValueTypeName(left.node.type),
                            " and ", ValueTypeName(right.node.type)));
  }
  const std::string where = absl::StrCat("arithmetic (", op, ")");
  absl::StatusOr<ValueInterval> a = OperandBounds(left, where);
  if (!a.ok()) return a.status();
  absl::StatusOr<ValueInterval> b = OperandBounds(right, where);
  if (!b.ok()) return b.status();
  Checked c{e, absl::StrCat("(", left.text, " ", op, " ", right.text, ")")};
  // ZetaSQL: `/` is FLOAT64 division; + - * keep INT64 (NULL + NULL is INT64).
  c.node.type = e.op == Op::kDivide ? ValueType::kFloat64
                : IsNumeric(type)   ? type
                                    : ValueType::kInt64;
  ValueInterval v;
  switch (e.op) {
    case Op::kAdd: v = Add(*a, *b); break;
    case Op::kSubtract: v = Subtract(*a, *b); break;
    case Op::kMultiply: v = Multiply(*a, *b); break;
    default: {
      absl::StatusOr<ValueInterval> q = Divide(*a, *b);
      if (!q.ok()) {
        return Refuse(e.pos, absl::StrCat("division by ", QuoteForMessage(right.text), ": ",
                                          q.status().message()));
      }
      v = *q;
    }
  }
  c.node.children = {std::move(left.node), std::move(right.node)};
  absl::Status s = SetDerived(&c, v, "");
  if (!s.ok()) return s;
  return c;
}

absl::StatusOr<Checked> Checker::CheckIsNull(const Expr& e) {
  if (e.children.size() != 1) return Refuse(e.pos, "IS NULL takes one operand");
  absl::StatusOr<Checked> operand = Check(e.children[0]);
  if (!operand.ok()) return operand.status();
  Checked c{e, absl::StrCat("(", operand->text, e.negated ? " IS NOT NULL)" : " IS NULL)")};
  c.node.type = ValueType::kBool;
  c.node.children = {std::move(operand->node)};
  return c;
}

absl::StatusOr<Checked> Checker::CheckIn(const Expr& e) {
  if (e.children.size() < 2) return Refuse(e.pos, "IN needs a list of at least one value");
  absl::StatusOr<std::vector<Checked>> operands = CheckChildren(e);
  if (!operands.ok()) return operands.status();
  const ValueType tested = (*operands)[0].node.type;
  std::vector<std::string> list;
  for (size_t i = 1; i < operands->size(); ++i) {
    const Expr& element = (*operands)[i].node;
    if (element.kind != Kind::kLiteral) {
      return Refuse(element.pos,
                    "an IN list holds literals only (numbers, strings, TRUE, FALSE "
                    "or NULL); write a comparison for anything else");
    }
    ValueType common;
    if (!CommonType(tested, element.type, &common)) {
      return Refuse(element.pos, absl::StrCat("cannot compare ", ValueTypeName(tested), " with ",
                                              ValueTypeName(element.type), " (IN)"));
    }
    list.push_back((*operands)[i].text);
  }
  Checked c{e, absl::StrCat("(", (*operands)[0].text, e.negated ? " NOT IN (" : " IN (",
                            absl::StrJoin(list, ", "), "))")};
  c.node.type = ValueType::kBool;
  AdoptChildren(&*operands, &c);
  return c;
}

absl::Status Checker::TypeAndHullOfResults(const std::vector<const Checked*>& results,
                                           absl::string_view what, absl::string_view where,
                                           Checked* out) {
  ValueType type = ValueType::kNull;
  for (const Checked* r : results) {
    if (!CommonType(type, r->node.type, &type)) {
      return Refuse(r->node.pos, absl::StrCat("the ", what, " have types ", ValueTypeName(type),
                                              " and ", ValueTypeName(r->node.type),
                                              ", which have no common type; CAST one of them"));
    }
  }
  out->node.type = type;
  if (!IsNumeric(type)) return absl::OkStatus();
  absl::optional<ValueInterval> hull;
  for (const Checked* r : results) {
    if (r->node.type == ValueType::kNull) continue;  // NULL never reaches the aggregate
    absl::StatusOr<ValueInterval> b = OperandBounds(*r, where);
    if (!b.ok()) return b.status();
    hull = hull.has_value() ? Hull(*hull, *b) : *b;
  }
  return SetDerived(out, hull.value_or(PointInterval(0)), " (hull of the results)");
}

absl::StatusOr<Checked> Checker::CheckCase(const Expr& e) {
  const size_t pairs_size = e.children.size() - (e.has_else ? 1 : 0);
  if (e.children.size() < (e.has_else ? 3u : 2u) || pairs_size % 2 != 0) {
    return Refuse(e.pos, "CASE needs at least one WHEN ... THEN ...");
  }
  absl::StatusOr<std::vector<Checked>> parts = CheckChildren(e);
  if (!parts.ok()) return parts.status();
  std::vector<const Checked*> results;
  std::string text = "CASE";
  for (size_t i = 0; i < parts->size(); ++i) {
    const Checked& part = (*parts)[i];
    const bool is_condition = i < pairs_size && i % 2 == 0;
    if (is_condition) {
      if (part.node.type != ValueType::kBool && part.node.type != ValueType::kNull) {
        return Refuse(part.node.pos, absl::StrCat("a WHEN condition must be BOOL, got ",
                                                  ValueTypeName(part.node.type)));
      }
      absl::StrAppend(&text, " WHEN ", part.text);
      continue;
    }
    absl::StrAppend(&text, i < pairs_size ? " THEN " : " ELSE ", part.text);
    results.push_back(&part);
  }
  // A missing ELSE is ELSE NULL: both spellings have one canonical text.
  absl::StrAppend(&text, e.has_else ? " END" : " ELSE NULL END");
  Checked c{e, text};
  absl::Status s = TypeAndHullOfResults(results, "CASE results", "a CASE result", &c);
  if (!s.ok()) return s;
  AdoptChildren(&*parts, &c);
  return c;
}

absl::StatusOr<Checked> Checker::CheckCoalesce(const Expr& e) {
  if (e.children.empty()) return Refuse(e.pos, "COALESCE needs at least one argument");
  absl::StatusOr<std::vector<Checked>> args = CheckChildren(e);
  if (!args.ok()) return args.status();
  std::vector<const Checked*> results;
  std::vector<std::string> texts;
  for (const Checked& arg : *args) {
    results.push_back(&arg);
    texts.push_back(arg.text);
  }
  Checked c{e, absl::StrCat("COALESCE(", absl::StrJoin(texts, ", "), ")")};
  absl::Status s = TypeAndHullOfResults(results, "COALESCE arguments", "a COALESCE argument", &c);
  if (!s.ok()) return s;
  AdoptChildren(&*args, &c);
  return c;
}

absl::StatusOr<Checked> Checker::CheckAbs(const Expr& e) {
  if (e.children.size() != 1) return Refuse(e.pos, "ABS takes one argument");
  absl::StatusOr<Checked> arg = Check(e.children[0]);
  if (!arg.ok()) return arg.status();
  const ValueType t = arg->node.type;
  if (!IsNumeric(t) && t != ValueType::kNull) {
    return Refuse(e.pos, absl::StrCat("ABS needs a number, got ", ValueTypeName(t)));
  }
  absl::StatusOr<ValueInterval> b = OperandBounds(*arg, "ABS");
  if (!b.ok()) return b.status();
  Checked c{e, absl::StrCat("ABS(", arg->text, ")")};
  c.node.type = IsNumeric(t) ? t : ValueType::kInt64;
  c.node.children = {std::move(arg->node)};
  absl::Status s = SetDerived(&c, Abs(*b), "");
  if (!s.ok()) return s;
  return c;
}

// PostgreSQL's LEAST / GREATEST skip NULL arguments, ZetaSQL's return NULL: the bounds over the
// non-NULL arguments hold for both.
absl::StatusOr<Checked> Checker::CheckLeastGreatest(const Expr& e) {
  const bool least = e.kind == Kind::kLeast;
  const char* name = least ? "LEAST" : "GREATEST";
  if (e.children.empty()) return Refuse(e.pos, absl::StrCat(name, " needs an argument"));
  absl::StatusOr<std::vector<Checked>> args = CheckChildren(e);
  if (!args.ok()) return args.status();
  ValueType type = ValueType::kNull;
  absl::optional<ValueInterval> v;
  std::vector<std::string> texts;
  for (const Checked& arg : *args) {
    const ValueType t = arg.node.type;
    if (!IsNumeric(t) && t != ValueType::kNull) {
      return Refuse(arg.node.pos, absl::StrCat(name, " takes numbers, got ", ValueTypeName(t)));
    }
    CommonType(type, t, &type);
    texts.push_back(arg.text);
    if (t == ValueType::kNull) continue;
    absl::StatusOr<ValueInterval> b = OperandBounds(arg, name);
    if (!b.ok()) return b.status();
    v = !v.has_value() ? *b : least ? Least(*v, *b) : Greatest(*v, *b);
  }
  Checked c{e, absl::StrCat(name, "(", absl::StrJoin(texts, ", "), ")")};
  c.node.type = IsNumeric(type) ? type : ValueType::kInt64;
  AdoptChildren(&*args, &c);
  absl::Status s = SetDerived(&c, v.value_or(PointInterval(0)), "");
  if (!s.ok()) return s;
  return c;
}

absl::StatusOr<Checked> Checker::CheckCast(const Expr& e) {
  if (e.children.size() != 1) return Refuse(e.pos, "CAST takes one operand");
  absl::StatusOr<Checked> arg = Check(e.children[0]);
  if (!arg.ok()) return arg.status();
  const ValueType from = arg->node.type, to = e.cast_type;
  const std::string target(ValueTypeName(to));
  Checked c{e, absl::StrCat("CAST(", arg->text, " AS ", target, ")")};
  c.node.type = to;
  if (from == ValueType::kString && IsNumeric(to)) {
    return Refuse(e.pos,
                  absl::StrCat("CAST from STRING to a number can fail on stored text; a scan that "
                               "can fail on data is refused (the failure itself would reveal a "
                               "row). Store such values in an integer or double column instead"));
  }
  const bool same_kind = (from == to) || (IsNumeric(from) && IsNumeric(to)) ||
                         from == ValueType::kNull || (IsNumeric(from) && to == ValueType::kString);
  if (!same_kind || to == ValueType::kNull) {
    return Refuse(e.pos, absl::StrCat("CAST from ", ValueTypeName(from), " to ", target,
                                      " is not supported; CAST between INT64, FLOAT64 and STRING"));
  }
  absl::optional<ValueInterval> b;
  if (IsNumeric(from) || (from == ValueType::kNull && IsNumeric(to))) {
    absl::StatusOr<ValueInterval> operand = OperandBounds(*arg, "CAST");
    if (!operand.ok()) return operand.status();
    b = *operand;
  }
  c.node.children = {std::move(arg->node)};
  if (!IsNumeric(to)) return c;
  // FLOAT64 to INT64 rounds half away from zero: round(x) lies between floor(lower) and
  // ceil(upper) for every x in [lower, upper] (rounding is monotone).
  ValueInterval v = *b;
  if (from == ValueType::kFloat64 && to == ValueType::kInt64) {
    v = {std::floor(v.lower), std::ceil(v.upper)};
  }
  absl::Status s = SetDerived(&c, v, "");
  if (!s.ok()) return s;
  return c;
}

}  // namespace

absl::StatusOr<CheckedExpression> CheckExpression(const Expr& e, const DatasetSchema& schema) {
  int nodes = 0;
  absl::Status shape = CheckShape(e, 1, &nodes);
  if (!shape.ok()) return shape;
  Checker checker(schema);
  absl::StatusOr<Checked> root = checker.Check(e);
  if (!root.ok()) return root.status();
  CheckedExpression out;
  const Expr& node = root->node;
  if (node.kind == Kind::kColumn) {
    // A bare column: its declared bounds, or none (the caller may give explicit bounds).
    checker.NoteDeclared(node);
    if (IsNumeric(node.type) && !node.bounds.has_value()) out.unbounded_column = node.name;
  } else if (node.kind == Kind::kLiteral && IsNumeric(node.type)) {
    absl::StatusOr<ValueInterval> b = checker.OperandBounds(*root, "the expression's value");
    if (!b.ok()) return b.status();
  }
  out.bounds = IsNumeric(node.type) ? node.bounds : absl::nullopt;
  out.root = std::move(root->node);
  out.canonical = std::move(root->text);
  out.derivation = checker.TakeDerivation();
  out.literal_results = LiteralResults(out.root);
  return out;
}

}  // namespace dpq::query::expression
