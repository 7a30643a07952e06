#include "server/sql/parser.h"

#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/sql/calendar_literal.h"
#include "server/sql/diagnostics.h"
#include "server/sql/lexer.h"

namespace dpq::sql {
namespace {

// Words that end a select item or clause, so they can never be an alias written without AS.
const std::set<std::string>& ReservedWords() {
  static const auto* words = new std::set<std::string>{
      "ALL",  "AND",   "AS",       "ASC",      "BETWEEN", "BY",     "CASE",   "CROSS",
      "CUBE", "DESC",  "DISTINCT", "ELSE",     "END",     "EXCEPT", "EXISTS", "FALSE",
      "FROM", "FULL",  "GROUP",    "GROUPING", "HAVING",  "IN",     "INNER",  "INTERSECT",
      "IS",   "JOIN",  "LEFT",     "LIMIT",    "NOT",     "NULL",   "OFFSET", "ON",
      "OR",   "ORDER", "OUTER",    "OVER",     "QUALIFY", "RIGHT",  "ROLLUP", "SELECT",
      "THEN", "TRUE",  "UNION",    "USING",    "WHEN",    "WHERE",  "WINDOW", "WITH"};
  return *words;
}

const std::set<std::string>& DmlDdlWords() {
  static const auto* words = new std::set<std::string>{
      "INSERT",   "UPDATE",   "DELETE", "MERGE",  "CREATE",  "DROP",    "ALTER",
      "TRUNCATE", "GRANT",    "REVOKE", "COPY",   "CALL",    "EXECUTE", "BEGIN",
      "COMMIT",   "ROLLBACK", "SET",    "VACUUM", "ANALYZE", "EXPLAIN", "DECLARE",
      "DO",       "LOCK",     "VALUES", "TABLE"};
  return *words;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  absl::StatusOr<Script> ParseScript() {
    Script script;
    if (Peek().kind == Token::Kind::kEnd) {
      return Error(Peek(), "the statement is empty: write SELECT WITH DIFFERENTIAL_PRIVACY ...");
    }
    while (true) {
      if (script.statements.size() == kMaxStatements) {
        return Error(Peek(),
                     absl::StrCat("more than ", kMaxStatements, " statements in one script"));
      }
      ASSIGN_OR_RETURN(Statement s, ParseStatement());
      script.statements.push_back(std::move(s));
      if (IsSymbol(";")) {
        Next();
        if (Peek().kind == Token::Kind::kEnd) break;
        continue;
      }
      if (Peek().kind == Token::Kind::kEnd) break;
      return UnexpectedAfterStatement();
    }
    return script;
  }

 private:
  // ---- token helpers ----
  const Token& Peek(size_t ahead = 0) const {
    const size_t i = std::min(i_ + ahead, t_.size() - 1);
    return t_[i];
  }
  const Token& Next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool IsKeyword(absl::string_view kw, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == Token::Kind::kIdent && t.upper == kw;
  }
  bool IsSymbol(absl::string_view s, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == Token::Kind::kSymbol && t.text == s;
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::kEnd: return "the end of the statement";
      case Token::Kind::kString: return "a string";
      case Token::Kind::kNumber: return absl::StrCat("the number ", t.text.substr(0, 20));
      default: return absl::StrCat("'", t.text.substr(0, 20), "'");
    }
  }
  static absl::Status Error(const Token& t, absl::string_view what) { return Invalid(t.pos, what); }
  absl::Status Expected(absl::string_view what) const {
    return Error(Peek(), absl::StrCat("expected ", what, ", found ", Describe(Peek())));
  }
  absl::Status ExpectKeyword(absl::string_view kw) {
    if (!IsKeyword(kw)) return Expected(kw);
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectSymbol(absl::string_view s) {
    if (!IsSymbol(s)) return Expected(absl::StrCat("'", s, "'"));
    Next();
    return absl::OkStatus();
  }
  // A name: an identifier that is not reserved, or a `quoted` one. Lower-cased when unquoted.
  absl::StatusOr<std::string> ParseName(absl::string_view what) {
    const Token& t = Peek();
    if (t.kind == Token::Kind::kQuotedIdent) {
      Next();
      return t.text;
    }
    if (t.kind != Token::Kind::kIdent || ReservedWords().count(t.upper)) return Expected(what);
    if (t.text.size() > kMaxIdentifierBytes) {
      return Error(t, absl::StrCat("a name longer than ", kMaxIdentifierBytes, " characters"));
    }
    Next();
    return absl::AsciiStrToLower(t.text);
  }

  absl::Status UnexpectedAfterStatement() const {
    const Token& t = Peek();
    if (t.kind == Token::Kind::kIdent) {
      if (t.upper == "UNION" || t.upper == "INTERSECT" || t.upper == "EXCEPT") {
        return Unsupported(t.pos, absl::StrCat("set operations (", t.upper,
                                               ") are not supported: run each SELECT on its own"));
      }
      if (t.upper == "HAVING") {
        return Unsupported(t.pos,
                           "HAVING is not supported: it would filter groups on their noisy values "
                           "inside the query; filter the released rows yourself");
      }
      if (t.upper == "OFFSET") return Unsupported(t.pos, "OFFSET is not supported: use LIMIT only");
      if (t.upper == "WINDOW" || t.upper == "QUALIFY") {
        return Unsupported(t.pos, "window functions are not supported");
      }
      if (t.upper == "JOIN" || t.upper == "INNER" || t.upper == "LEFT" || t.upper == "RIGHT" ||
          t.upper == "FULL" || t.upper == "CROSS") {
        return Unsupported(t.pos, "a JOIN must follow FROM's tables, before WHERE");
      }
    }
    if (t.kind == Token::Kind::kSymbol && t.text == ",") {
      return Unsupported(t.pos,
                         "a comma join is not supported: write [INNER] JOIN ... USING (...) "
                         "or ON a.x = b.y");
    }
    return Error(t, absl::StrCat("unexpected ", Describe(t),
                                 ": expected WHERE, GROUP BY, ORDER BY, LIMIT, ';' or the end"));
  }

  // ---- statement ----
  absl::StatusOr<Statement> ParseStatement() {
    Statement s;
    s.pos = Peek().pos;
    RETURN_IF_ERROR(ParseSelectWithDifferentialPrivacy());
    s.options_pos = Peek().pos;
    if (IsKeyword("OPTIONS")) RETURN_IF_ERROR(ParseOptions(s));
    RETURN_IF_ERROR(ParseSelectList(s));
    RETURN_IF_ERROR(ParseFrom(s));
    if (IsKeyword("WHERE")) {
      Next();
      s.has_where = true;
      ASSIGN_OR_RETURN(s.where, ParseExpr(0));
    }
    if (IsKeyword("GROUP")) RETURN_IF_ERROR(ParseGroupBy(s));
    if (IsKeyword("HAVING")) return UnexpectedAfterStatement();
    if (IsKeyword("ORDER")) RETURN_IF_ERROR(ParseOrderBy(s));
    if (IsKeyword("LIMIT")) RETURN_IF_ERROR(ParseLimit(s));
    return s;
  }

  // The statement's head, SELECT WITH DIFFERENTIAL_PRIVACY; every other statement kind is refused
  // by name.
  absl::Status ParseSelectWithDifferentialPrivacy() {
    const Token& first = Peek();
    if (IsKeyword("WITH")) {
      return Unsupported(first.pos,
                         "WITH (common table expressions) is not supported: write one "
                         "SELECT WITH DIFFERENTIAL_PRIVACY on a dataset");
    }
    if (first.kind == Token::Kind::kIdent && DmlDdlWords().count(first.upper)) {
      return Unsupported(first.pos, absl::StrCat(first.upper,
                                                 " is not supported: only SELECT WITH "
                                                 "DIFFERENTIAL_PRIVACY statements are accepted"));
    }
    if (IsSymbol("(")) {
      return Unsupported(first.pos,
                         "a parenthesised query is not supported: write SELECT WITH "
                         "DIFFERENTIAL_PRIVACY ...");
    }
    RETURN_IF_ERROR(ExpectKeyword("SELECT"));
    if (!IsKeyword("WITH")) {
      if (IsKeyword("DISTINCT")) {
        return Unsupported(Peek().pos,
                           "SELECT DISTINCT is not supported: write SELECT WITH "
                           "DIFFERENTIAL_PRIVACY OPTIONS(...) ... GROUP BY");
      }
      return Unsupported(first.pos,
                         "a SELECT without WITH DIFFERENTIAL_PRIVACY would release exact values: "
                         "write SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = ...) ...");
    }
    Next();
    if (!IsKeyword("DIFFERENTIAL_PRIVACY")) {
      return Expected("DIFFERENTIAL_PRIVACY after SELECT WITH");
    }
    Next();
    return absl::OkStatus();
  }

  // OPTIONS (name = value, ...), at OPTIONS.
  absl::Status ParseOptions(Statement& s) {
    Next();
    RETURN_IF_ERROR(ExpectSymbol("("));
    if (!IsSymbol(")")) {
      while (true) {
        DpOption o;
        o.pos = Peek().pos;
        ASSIGN_OR_RETURN(o.name, ParseName("an option name"));
        RETURN_IF_ERROR(ExpectSymbol("="));
        ASSIGN_OR_RETURN(o.value, ParseExpr(0));
        s.options.push_back(std::move(o));
        if (!IsSymbol(",")) break;
        Next();
      }
    }
    return ExpectSymbol(")");
  }

  // An optional alias: AS name, or a bare name that is not a reserved word.
  absl::Status ParseOptionalAlias(std::string& alias) {
    if (IsKeyword("AS")) {
      Next();
      ASSIGN_OR_RETURN(alias, ParseName("an alias after AS"));
    } else if ((Peek().kind == Token::Kind::kIdent && !ReservedWords().count(Peek().upper)) ||
               Peek().kind == Token::Kind::kQuotedIdent) {
      ASSIGN_OR_RETURN(alias, ParseName("an alias"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseSelectList(Statement& s) {
    while (true) {
      SelectItem item;
      item.pos = Peek().pos;
      if (IsKeyword("FROM")) return Expected("a select-list item");
      ASSIGN_OR_RETURN(item.expr, ParseExpr(0));
      RETURN_IF_ERROR(ParseOptionalAlias(item.alias));
      s.select.push_back(std::move(item));
      if (!IsSymbol(",")) break;
      Next();
    }
    return absl::OkStatus();
  }

  // FROM and the one dataset it names.
  absl::Status ParseFrom(Statement& s) {
    if (!IsKeyword("FROM")) return Expected("',' or FROM");
    Next();
    s.table_pos = Peek().pos;
    if (IsSymbol("(")) {
      return Unsupported(Peek().pos,
                         "subqueries are not supported: FROM names exactly one dataset");
    }
    RETURN_IF_ERROR(ParseTable(s.table, s.table_alias));
    while (true) {
      RETURN_IF_ERROR(RefuseOtherJoins());
      if (!IsKeyword("JOIN") && !IsKeyword("INNER")) return absl::OkStatus();
      JoinClause j;
      j.pos = Peek().pos;
      if (IsKeyword("INNER")) Next();
      RETURN_IF_ERROR(ExpectKeyword("JOIN"));
      j.table_pos = Peek().pos;
      if (IsSymbol("(")) {
        return Unsupported(Peek().pos, "subqueries are not supported: JOIN names a dataset");
      }
      RETURN_IF_ERROR(ParseTable(j.table, j.table_alias));
      RETURN_IF_ERROR(ParseJoinCondition(j));
      s.joins.push_back(std::move(j));
    }
  }

  // A dataset name and its optional alias (FROM's, or a JOIN's).
  absl::Status ParseTable(std::string& table, std::string& alias) {
    ASSIGN_OR_RETURN(table, ParseName("a dataset name"));
    if (IsSymbol(".")) {
      return Unsupported(Peek().pos,
                         "qualified dataset names are not supported: FROM names a dpq "
                         "dataset");
    }
    if (Peek().kind == Token::Kind::kIdent && Peek().upper == "NATURAL") return RefuseOtherJoins();
    return ParseOptionalAlias(alias);
  }

  // Only inner joins with a stated equality: an outer join would add rows no person owns (NULL
  // padded), a cross or natural join pairs rows on no or on unstated keys.
  absl::Status RefuseOtherJoins() const {
    const Token& t = Peek();
    if (t.kind != Token::Kind::kIdent) return absl::OkStatus();
    if (t.upper == "LEFT" || t.upper == "RIGHT" || t.upper == "FULL" || t.upper == "OUTER") {
      return Unsupported(t.pos,
                         "outer joins are not supported: write [INNER] JOIN ... USING (...) "
                         "or ON a.x = b.y");
    }
    if (t.upper == "CROSS" || t.upper == "NATURAL") {
      return Unsupported(t.pos, absl::StrCat(t.upper,
                                             " JOIN is not supported: write [INNER] "
                                             "JOIN ... USING (...) or ON a.x = b.y"));
    }
    return absl::OkStatus();
  }

  // USING (c, ...) or ON condition, after a JOIN's table.
  absl::Status ParseJoinCondition(JoinClause& j) {
    if (IsKeyword("USING")) {
      j.using_pos = Peek().pos;
      Next();
      RETURN_IF_ERROR(ExpectSymbol("("));
      while (true) {
        ASSIGN_OR_RETURN(std::string c, ParseName("a column name in USING"));
        j.using_columns.push_back(std::move(c));
        if (!IsSymbol(",")) break;
        Next();
      }
      return ExpectSymbol(")");
    }
    if (IsKeyword("ON")) {
      Next();
      j.has_on = true;
      ASSIGN_OR_RETURN(j.on, ParseExpr(0));
      return absl::OkStatus();
    }
    if (IsSymbol(",") || IsKeyword("WHERE") || IsKeyword("GROUP") ||
        Peek().kind == Token::Kind::kEnd) {
      return Unsupported(Peek().pos,
                         "a JOIN needs USING (column) or ON a.x = b.y (a cross join "
                         "is not supported)");
    }
    return Expected("USING or ON after the joined table");
  }

  // GROUP BY expr, ..., at GROUP.
  absl::Status ParseGroupBy(Statement& s) {
    s.group_by_pos = Peek().pos;
    Next();
    RETURN_IF_ERROR(ExpectKeyword("BY"));
    if (IsKeyword("ROLLUP") || IsKeyword("CUBE") || IsKeyword("GROUPING")) {
      return Unsupported(Peek().pos, absl::StrCat(Peek().upper,
                                                  " is not supported: GROUP BY "
                                                  "lists columns only"));
    }
    while (true) {
      ASSIGN_OR_RETURN(Expr e, ParseExpr(0));
      s.group_by.push_back(std::move(e));
      if (!IsSymbol(",")) break;
      Next();
    }
    return absl::OkStatus();
  }

  // ORDER BY expr [ASC|DESC], ..., at ORDER.
  absl::Status ParseOrderBy(Statement& s) {
    Next();
    RETURN_IF_ERROR(ExpectKeyword("BY"));
    while (true) {
      OrderItem o;
      o.pos = Peek().pos;
      ASSIGN_OR_RETURN(o.expr, ParseExpr(0));
      if (IsKeyword("DESC")) {
        o.descending = true;
        Next();
      } else if (IsKeyword("ASC")) {
        Next();
      }
      s.order_by.push_back(std::move(o));
      if (!IsSymbol(",")) break;
      Next();
    }
    return absl::OkStatus();
  }

  // LIMIT n, at LIMIT.
  absl::Status ParseLimit(Statement& s) {
    Next();
    s.limit_pos = Peek().pos;
    const Token& n = Peek();
    if (n.kind != Token::Kind::kNumber ||
        n.text.find_first_not_of("0123456789") != std::string::npos || n.text.size() > 9) {
      return Expected("a whole number of rows after LIMIT (at most 999999999)");
    }
    Next();
    s.has_limit = true;
    s.limit = std::atoll(n.text.c_str());
    return absl::OkStatus();
  }

  // ---- expressions (precedence climbing) ----
  // Levels: 0 OR, 1 AND, 2 NOT, 3 predicate (comparison, IN, BETWEEN, IS), 4 + -, 5 * /, 6 unary.
  absl::StatusOr<Expr> ParseExpr(int level) {
    if (++depth_ > kMaxExprDepth) {
      return Error(Peek(), absl::StrCat("expression nested deeper than ", kMaxExprDepth));
    }
    absl::StatusOr<Expr> e = ParseLevel(level);
    --depth_;
    return e;
  }

  absl::StatusOr<Expr> Binary(std::string op, Expr lhs, Expr rhs) {
    Expr e;
    e.kind = Expr::Kind::kBinary;
    e.pos = lhs.pos;
    e.op = std::move(op);
    e.children.push_back(std::move(lhs));
    e.children.push_back(std::move(rhs));
    return e;
  }

  absl::StatusOr<Expr> ParseLevel(int level) {
    switch (level) {
      case 0:
      case 1: {
        const char* kw = level == 0 ? "OR" : "AND";
        ASSIGN_OR_RETURN(Expr lhs, ParseExpr(level + 1));
        while (IsKeyword(kw)) {
          Next();
          ASSIGN_OR_RETURN(Expr rhs, ParseExpr(level + 1));
          ASSIGN_OR_RETURN(lhs, Binary(kw, std::move(lhs), std::move(rhs)));
        }
        return lhs;
      }
      case 2: {
        if (IsKeyword("NOT")) {
          Expr e;
          e.kind = Expr::Kind::kUnary;
          e.pos = Next().pos;
          e.op = "NOT";
          ASSIGN_OR_RETURN(Expr inner, ParseExpr(2));
          e.children.push_back(std::move(inner));
          return e;
        }
        return ParseExpr(3);
      }
      case 3: return ParsePredicate();
      case 4:
      case 5: {
        ASSIGN_OR_RETURN(Expr lhs, ParseExpr(level + 1));
        while (level == 4 ? (IsSymbol("+") || IsSymbol("-")) : (IsSymbol("*") || IsSymbol("/"))) {
          std::string op = Next().text;
          ASSIGN_OR_RETURN(Expr rhs, ParseExpr(level + 1));
          ASSIGN_OR_RETURN(lhs, Binary(op, std::move(lhs), std::move(rhs)));
        }
        return lhs;
      }
      default: {
        if (IsSymbol("-") || IsSymbol("+")) {
          Expr e;
          e.kind = Expr::Kind::kUnary;
          e.pos = Peek().pos;
          e.op = Next().text;
          ASSIGN_OR_RETURN(Expr inner, ParseExpr(6));
          e.children.push_back(std::move(inner));
          return e;
        }
        return ParsePrimary();
      }
    }
  }

  absl::StatusOr<Expr> ParsePredicate() {
    ASSIGN_OR_RETURN(Expr lhs, ParseExpr(4));
    static constexpr absl::string_view kCompare[] = {"=", "<>", "!=", "<", "<=", ">", ">="};
    for (absl::string_view op : kCompare) {
      if (IsSymbol(op)) {
        Next();
        ASSIGN_OR_RETURN(Expr rhs, ParseExpr(4));
        return Binary(op == "!=" ? "<>" : std::string(op), std::move(lhs), std::move(rhs));
      }
    }
    bool negated = false;
    if (IsKeyword("NOT") && (IsKeyword("IN", 1) || IsKeyword("BETWEEN", 1))) {
      Next();
      negated = true;
    }
    if (IsKeyword("IN")) {
      Expr e;
      e.kind = Expr::Kind::kIn;
      e.pos = lhs.pos;
      e.negated = negated;
      Next();
      if (IsSymbol("(") && IsKeyword("SELECT", 1)) {
        return Unsupported(Peek(1).pos, "subqueries are not supported");
      }
      RETURN_IF_ERROR(ExpectSymbol("("));
      e.children.push_back(std::move(lhs));
      while (true) {
        ASSIGN_OR_RETURN(Expr item, ParseExpr(4));
        e.children.push_back(std::move(item));
        if (!IsSymbol(",")) break;
        Next();
      }
      RETURN_IF_ERROR(ExpectSymbol(")"));
      return e;
    }
    if (IsKeyword("BETWEEN")) {
      Expr e;
      e.kind = Expr::Kind::kBetween;
      e.pos = lhs.pos;
      e.negated = negated;
      Next();
      e.children.push_back(std::move(lhs));
      ASSIGN_OR_RETURN(Expr low, ParseExpr(4));
      RETURN_IF_ERROR(ExpectKeyword("AND"));
      ASSIGN_OR_RETURN(Expr high, ParseExpr(4));
      e.children.push_back(std::move(low));
      e.children.push_back(std::move(high));
      return e;
    }
    if (IsKeyword("IS")) {
      Expr e;
      e.kind = Expr::Kind::kIsNull;
      e.pos = lhs.pos;
      Next();
      if (IsKeyword("NOT")) {
        Next();
        e.negated = true;
      }
      RETURN_IF_ERROR(ExpectKeyword("NULL"));
      e.children.push_back(std::move(lhs));
      return e;
    }
    return lhs;
  }

  absl::StatusOr<Expr> ParsePrimary() {
    const Token& t = Peek();
    Expr e;
    e.pos = t.pos;
    switch (t.kind) {
      case Token::Kind::kNumber:
        e.kind = Expr::Kind::kNumber;
        e.text = Next().text;
        return e;
      case Token::Kind::kString:
        e.kind = Expr::Kind::kString;
        e.text = Next().text;
        return e;
      case Token::Kind::kEnd: return Expected("an expression");
      case Token::Kind::kSymbol:
        if (t.text == "*") {
          Next();
          e.kind = Expr::Kind::kStar;
          return e;
        }
        if (t.text == "(") {
          Next();
          if (IsKeyword("SELECT") || IsKeyword("WITH")) {
            return Unsupported(Peek().pos, "subqueries are not supported");
          }
          ASSIGN_OR_RETURN(Expr first, ParseExpr(0));
          if (!IsSymbol(",")) {
            RETURN_IF_ERROR(ExpectSymbol(")"));
            return first;
          }
          e.kind = Expr::Kind::kTuple;
          e.children.push_back(std::move(first));
          while (IsSymbol(",")) {
            Next();
            ASSIGN_OR_RETURN(Expr item, ParseExpr(0));
            e.children.push_back(std::move(item));
          }
          RETURN_IF_ERROR(ExpectSymbol(")"));
          return e;
        }
        return Expected("an expression");
      case Token::Kind::kIdent:
      case Token::Kind::kQuotedIdent: break;
    }
    if (t.kind == Token::Kind::kIdent) {
      if (t.upper == "NULL") {
        Next();
        e.kind = Expr::Kind::kNull;
        return e;
      }
      if (t.upper == "TRUE" || t.upper == "FALSE") {
        e.kind = Expr::Kind::kBool;
        e.text = Next().upper;
        return e;
      }
      if (t.upper == "CASE") return ParseCase();
      if (t.upper == "CAST" && IsSymbol("(", 1)) return ParseCast();
      if (t.upper == "EXISTS") return Unsupported(t.pos, "subqueries (EXISTS) are not supported");
      if (t.upper == "SELECT") return Unsupported(t.pos, "subqueries are not supported");
      if ((t.upper == "DATE" || t.upper == "TIMESTAMP") && Peek(1).kind == Token::Kind::kString) {
        const std::string word = Next().upper;
        return CalendarLiteral(word, Next().text, e.pos);
      }
      if ((t.upper == "DATE_TRUNC" || t.upper == "TIMESTAMP_TRUNC") && IsSymbol("(", 1)) {
        return ParseTrunc();
      }
      if (IsSymbol("(", 1)) return ParseCall();
    }
    ASSIGN_OR_RETURN(std::string name, ParseName("an expression"));
    e.kind = Expr::Kind::kColumn;
    if (IsSymbol(".")) {
      Next();
      e.qualifier = std::move(name);
      ASSIGN_OR_RETURN(name, ParseName("a column name after '.'"));
    }
    e.name = std::move(name);
    return e;
  }

  // CASE [operand] WHEN w THEN t {WHEN w THEN t} [ELSE e] END, at CASE.
  absl::StatusOr<Expr> ParseCase() {
    Expr e;
    e.kind = Expr::Kind::kCase;
    e.pos = Next().pos;
    if (!IsKeyword("WHEN")) {
      e.has_operand = true;
      ASSIGN_OR_RETURN(Expr operand, ParseExpr(0));
      e.children.push_back(std::move(operand));
    }
    if (!IsKeyword("WHEN")) return Expected("WHEN");
    while (IsKeyword("WHEN")) {
      Next();
      ASSIGN_OR_RETURN(Expr when, ParseExpr(0));
      RETURN_IF_ERROR(ExpectKeyword("THEN"));
      ASSIGN_OR_RETURN(Expr then, ParseExpr(0));
      e.children.push_back(std::move(when));
      e.children.push_back(std::move(then));
    }
    if (IsKeyword("ELSE")) {
      Next();
      e.has_else = true;
      ASSIGN_OR_RETURN(Expr otherwise, ParseExpr(0));
      e.children.push_back(std::move(otherwise));
    }
    RETURN_IF_ERROR(ExpectKeyword("END"));
    return e;
  }

  // CAST(expr AS type), at CAST. The type is one word, upper-cased; the lowering checks it.
  absl::StatusOr<Expr> ParseCast() {
    Expr e;
    e.kind = Expr::Kind::kCast;
    e.pos = Next().pos;
    RETURN_IF_ERROR(ExpectSymbol("("));
    ASSIGN_OR_RETURN(Expr operand, ParseExpr(0));
    e.children.push_back(std::move(operand));
    RETURN_IF_ERROR(ExpectKeyword("AS"));
    if (Peek().kind != Token::Kind::kIdent) return Expected("a type name after AS");
    e.name = Next().upper;
    RETURN_IF_ERROR(ExpectSymbol(")"));
    return e;
  }

  // DATE_TRUNC(expr, part), at the name: the date part is a bare word (ZetaSQL), kept in `text`
  // so that no later pass reads it as a column (a column may well be called `day`).
  absl::StatusOr<Expr> ParseTrunc() {
    Expr e;
    e.kind = Expr::Kind::kCall;
    e.pos = Peek().pos;
    e.name = Next().upper;
    RETURN_IF_ERROR(ExpectSymbol("("));
    ASSIGN_OR_RETURN(Expr operand, ParseExpr(0));
    e.children.push_back(std::move(operand));
    RETURN_IF_ERROR(ExpectSymbol(","));
    if (Peek().kind != Token::Kind::kIdent) return Expected("a date part (DAY, WEEK or MONTH)");
    e.text = Next().upper;
    RETURN_IF_ERROR(ExpectSymbol(")"));
    return e;
  }

  absl::StatusOr<Expr> ParseCall() {
    Expr e;
    e.kind = Expr::Kind::kCall;
    e.pos = Peek().pos;
    e.name = Next().upper;
    RETURN_IF_ERROR(ExpectSymbol("("));
    if (IsKeyword("DISTINCT")) {  // the analyzer says which DISTINCT aggregates it answers
      Next();
      e.distinct = true;
    }
    if (!IsSymbol(")")) {
      while (true) {
        if (Peek().kind == Token::Kind::kIdent && IsSymbol("=>", 1)) {
          Expr named;
          named.kind = Expr::Kind::kNamedArg;
          named.pos = Peek().pos;
          named.name = absl::AsciiStrToLower(Next().text);
          Next();
          ASSIGN_OR_RETURN(Expr value, ParseExpr(0));
          named.children.push_back(std::move(value));
          e.children.push_back(std::move(named));
        } else {
          ASSIGN_OR_RETURN(Expr arg, ParseExpr(0));
          e.children.push_back(std::move(arg));
        }
        if (!IsSymbol(",")) break;
        Next();
      }
    }
    RETURN_IF_ERROR(ExpectSymbol(")"));
    if (IsKeyword("OVER")) {
      return Unsupported(Peek().pos, "window functions (OVER) are not supported");
    }
    return e;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<Script> Parse(absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text));
  Parser p(std::move(tokens));
  return p.ParseScript();
}

}  // namespace dpq::sql
