// Syntax tree of dpq's SQL front end: the BigQuery / ZetaSQL differential-privacy SELECT
// (grammar.ebnf in this folder is the reviewable grammar; parser.h builds this tree). Pure data.
#ifndef DPQ_SERVER_SQL_AST_H_
#define DPQ_SERVER_SQL_AST_H_

#include <memory>
#include <string>
#include <vector>

namespace dpq::sql {

// 1-based line and column (in bytes) of a token's first character.
struct Position {
  int line = 1;
  int column = 1;
};

struct Expr {
  enum class Kind {
    kColumn,  // [qualifier '.'] name
    kNumber,  // text as written
    kString,  // text unquoted
    kNull,
    kStar,      // '*' as the argument of COUNT(*)
    kCall,      // name '(' args ')': function (name upper-cased)
    kNamedArg,  // name '=>' children[0] (only as a call argument)
    kTuple,     // '(' e, e {, e} ')'
    kUnary,     // op '-', '+' or "NOT" on children[0]
    kBinary,    // op on children[0], children[1]: + - * / = <> < <= > >= AND OR
    kIn,        // children[0] [NOT] IN (children[1..])
    kBetween,   // children[0] [NOT] BETWEEN children[1] AND children[2]
    kIsNull,    // children[0] IS [NOT] NULL
    kCase,      // CASE [operand] WHEN w THEN t {WHEN w THEN t} [ELSE e] END: children are
                // [operand,] w1, t1, w2, t2, ... [, e]; has_operand / has_else say which exist
    kCast,      // CAST(children[0] AS name): name is the target type, upper-cased
    kBool,      // TRUE / FALSE: text "TRUE" or "FALSE"
    kCalendar,  // DATE '...' / TIMESTAMP '...': name "DATE" or "TIMESTAMP", text the value's
                // canonical text (calendar_literal.h), checked by the parser
  };
  Kind kind = Kind::kColumn;
  Position pos;
  std::string qualifier;       // kColumn: the table alias or name, when written
  std::string name;            // kColumn: column (lower-cased); kCall: function (upper-cased);
                               // kNamedArg: the argument's name (lower-cased); kCalendar: type
  std::string text;            // kNumber, kString, kBool, kCalendar; kCall of DATE_TRUNC or
                               // TIMESTAMP_TRUNC: the date part as written, upper-cased
  std::string op;              // kUnary, kBinary
  bool negated = false;        // kIn, kBetween, kIsNull
  bool has_operand = false;    // kCase: a simple CASE (CASE x WHEN 1 THEN ...)
  bool has_else = false;       // kCase
  bool distinct = false;       // kCall: f(DISTINCT ...) (the analyzer answers COUNT of the unit)
  std::vector<Expr> children;  // kCall: the arguments
};

struct SelectItem {
  Expr expr;
  std::string alias;  // empty: none written
  Position pos;
};

struct OrderItem {
  Expr expr;
  bool descending = false;
  Position pos;
};

struct DpOption {
  std::string name;  // lower-cased
  Expr value;
  Position pos;
};

// One `[INNER] JOIN table [[AS] alias] (USING (column) | ON condition)` after FROM's table.
struct JoinClause {
  Position pos;  // of JOIN (or INNER)
  std::string table;
  std::string table_alias;
  Position table_pos;
  std::vector<std::string> using_columns;  // USING (c, ...): the analyser takes exactly one
  Position using_pos;
  bool has_on = false;
  Expr on;
};

// One `SELECT WITH DIFFERENTIAL_PRIVACY ...` statement.
struct Statement {
  Position pos;  // of SELECT
  Position options_pos;
  std::vector<DpOption> options;
  std::vector<SelectItem> select;
  std::string table;  // FROM
  std::string table_alias;
  Position table_pos;
  std::vector<JoinClause> joins;  // in order: joins[i] joins the (i + 1)-th table
  bool has_where = false;
  Expr where;
  std::vector<Expr> group_by;
  Position group_by_pos;
  std::vector<OrderItem> order_by;
  bool has_limit = false;
  long long limit = 0;
  Position limit_pos;
};

// A script: one statement, or several separated by ';' (a batch, charged jointly).
struct Script {
  std::vector<Statement> statements;
};

std::string FormatPosition(Position p);  // "line 1, column 8"

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_AST_H_
