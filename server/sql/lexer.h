// Tokens of dpq's SQL front end (grammar.ebnf). Keywords and unquoted identifiers are
// case-insensitive; `--` and `/* */` comments are whitespace.
#ifndef DPQ_SERVER_SQL_LEXER_H_
#define DPQ_SERVER_SQL_LEXER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// Limits enforced by Tokenize / Parse (INVALID_ARGUMENT naming the position).
inline constexpr size_t kMaxStatementBytes = 64 * 1024;
inline constexpr size_t kMaxTokens = 20000;
inline constexpr int kMaxExprDepth = 64;
inline constexpr size_t kMaxIdentifierBytes = 63;
inline constexpr size_t kMaxNumberChars = 100;

struct Token {
  enum class Kind { kIdent, kQuotedIdent, kNumber, kString, kSymbol, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;   // kIdent: as written; kQuotedIdent/kString: unquoted; kSymbol: the symbol
  std::string upper;  // kIdent: upper-cased (keyword comparison)
  Position pos;
};

// Splits `text` into tokens ending with one kEnd. Errors: INVALID_ARGUMENT
// "sql: line L, column C: <what>" for a character outside the language, an unterminated string,
// quoted identifier or comment, input over kMaxStatementBytes, more than kMaxTokens tokens.
absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_LEXER_H_
