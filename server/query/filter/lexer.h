// Tokens of the filter language (grammar in ast.h) and the error format shared by the parser and
// the type checker. Internal to dpq_query_filter; callers use ParseFilter / CheckFilter.
#ifndef DPQ_SERVER_QUERY_FILTER_LEXER_H_
#define DPQ_SERVER_QUERY_FILTER_LEXER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/filter/ast.h"

namespace dpq::query::filter::internal {

struct Token {
  enum class Kind {
    kEnd,
    kIdentifier,
    kString,
    kNumber,
    kLParen,
    kRParen,
    kComma,
    kCompare,
    kAnd,
    kOr,
    kNot,
    kIn,
    kBetween,
    kIs,
    kNull,
  };
  Kind kind = Kind::kEnd;
  // kIdentifier: the name; kString: the unescaped value; kNumber: the literal as written;
  // keywords and punctuation: the source text.
  std::string text;
  CompareOp op = CompareOp::kEq;  // kCompare
  bool is_integer = false;        // kNumber
  int position = 0;               // 1-based character (code point) position of the first character
};

// Splits a filter into tokens on demand, so that the first error reported is the leftmost one.
// Rejects: input over kMaxFilterBytes, invalid UTF-8, NUL bytes, characters outside the grammar
// (';', '"', '\\', ...), comments ("--", "/*"), unterminated strings, malformed or over-long
// numbers, column names that are not lowercase or longer than 63 characters.
class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}
  // Checks length and encoding once; call before Next().
  absl::Status Init();
  absl::StatusOr<Token> Next();

 private:
  int CharPosition(size_t byte_offset) const;
  absl::Status ErrorAt(size_t byte_offset, absl::string_view message) const;
  // The byte k past the current one; NUL past the end.
  char PeekAhead(size_t k) const;
  // Each lexes one kind of token starting at the current byte into `t` (its position set).
  absl::StatusOr<Token> LexCompare(Token t);
  absl::StatusOr<Token> LexString(Token t);
  absl::StatusOr<Token> LexNumber(Token t);
  absl::StatusOr<Token> LexWord(Token t);

  absl::string_view text_;
  size_t pos_ = 0;
  // char_position_[b] = 1-based character position of byte b (valid after Init()).
  std::vector<int> char_position_;
};

// INVALID_ARGUMENT "where: at position <position>: <message>".
absl::Status FilterError(int position, absl::string_view message);

// At most ~20 bytes of `text` (cut at a character boundary, "..." appended when cut), control
// characters replaced by '?', in single quotes: for error messages that must not echo the input.
std::string Excerpt(absl::string_view text);

// Describes a token for "found ..." in error messages: "end of input" or an excerpt.
std::string Describe(const Token& token);

}  // namespace dpq::query::filter::internal

#endif  // DPQ_SERVER_QUERY_FILTER_LEXER_H_
