#include "server/sql/lexer.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/sql/diagnostics.h"

namespace dpq::sql {

namespace {

class Scanner {
 public:
  explicit Scanner(absl::string_view text) : text_(text) {}

  bool done() const { return i_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return i_ + ahead < text_.size() ? text_[i_ + ahead] : '\0'; }
  Position pos() const { return pos_; }
  char advance() {
    const char c = text_[i_++];
    if (c == '\n') {
      ++pos_.line;
      pos_.column = 1;
    } else {
      ++pos_.column;
    }
    return c;
  }

 private:
  absl::string_view text_;
  size_t i_ = 0;
  Position pos_;
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Whitespace and comments.
absl::Status SkipSpaceAndComments(Scanner& s) {
  while (!s.done()) {
    const char c = s.peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      s.advance();
    } else if (c == '-' && s.peek(1) == '-') {
      while (!s.done() && s.peek() != '\n') s.advance();
    } else if (c == '/' && s.peek(1) == '*') {
      const Position start = s.pos();
      s.advance();
      s.advance();
      while (!s.done() && !(s.peek() == '*' && s.peek(1) == '/')) s.advance();
      if (s.done()) return Invalid(start, "unterminated comment: close it with */");
      s.advance();
      s.advance();
    } else {
      break;
    }
  }
  return absl::OkStatus();
}

// A `quoted identifier`, at its opening backtick.
absl::Status ScanQuotedIdent(Scanner& s, Token& t) {
  t.kind = Token::Kind::kQuotedIdent;
  s.advance();
  while (!s.done() && s.peek() != '`' && s.peek() != '\n') t.text.push_back(s.advance());
  if (s.done() || s.peek() != '`') return Invalid(t.pos, "unterminated quoted identifier");
  s.advance();
  t.upper = absl::AsciiStrToUpper(t.text);
  return absl::OkStatus();
}

// digits [. digits] [e [+-] digits], or . digits ...
absl::Status ScanNumber(Scanner& s, Token& t) {
  t.kind = Token::Kind::kNumber;
  while (!s.done() && IsDigit(s.peek())) t.text.push_back(s.advance());
  if (s.peek() == '.') {
    t.text.push_back(s.advance());
    while (!s.done() && IsDigit(s.peek())) t.text.push_back(s.advance());
  }
  if (s.peek() == 'e' || s.peek() == 'E') {
    const bool signed_exp = s.peek(1) == '+' || s.peek(1) == '-';
    if (IsDigit(s.peek(1)) || (signed_exp && IsDigit(s.peek(2)))) {
      t.text.push_back(s.advance());
      if (signed_exp) t.text.push_back(s.advance());
      while (!s.done() && IsDigit(s.peek())) t.text.push_back(s.advance());
    }
  }
  if (IsIdentChar(s.peek())) return Invalid(s.pos(), "a number must not run into a name");
  if (t.text.size() > kMaxNumberChars) {
    return Invalid(t.pos, absl::StrCat("a number longer than ", kMaxNumberChars, " characters"));
  }
  return absl::OkStatus();
}

// A 'string' ('' is one quote), at its opening quote.
absl::Status ScanString(Scanner& s, Token& t) {
  t.kind = Token::Kind::kString;
  s.advance();
  while (true) {
    if (s.done()) return Invalid(t.pos, "unterminated string: close it with '");
    const char d = s.advance();
    if (d == '\'') {
      if (s.peek() == '\'') {
        s.advance();
        t.text.push_back('\'');
        continue;
      }
      break;
    }
    if (d == '\0') return Invalid(t.pos, "a string must not contain NUL");
    t.text.push_back(d);
  }
  return absl::OkStatus();
}

// An operator or punctuation: two characters when they form one, else one.
absl::Status ScanSymbol(Scanner& s, Token& t) {
  const char c = s.peek();
  t.kind = Token::Kind::kSymbol;
  static constexpr absl::string_view kTwo[] = {"<=", ">=", "<>", "!=", "=>"};
  for (absl::string_view two : kTwo) {
    if (c == two[0] && s.peek(1) == two[1]) {
      s.advance();
      s.advance();
      t.text = std::string(two);
      return absl::OkStatus();
    }
  }
  if (absl::string_view("(),.*+-/;=<>").find(c) == absl::string_view::npos) {
    const unsigned char u = static_cast<unsigned char>(c);
    return Invalid(t.pos, u >= 0x20 && u < 0x7f
                              ? absl::StrCat("unexpected character '", std::string(1, c), "'")
                              : absl::StrCat("unexpected byte 0x", absl::Hex(u)));
  }
  t.text = std::string(1, s.advance());
  return absl::OkStatus();
}

// The token at the scanner's position (not the end).
absl::Status ScanToken(Scanner& s, Token& t) {
  const char c = s.peek();
  if (IsIdentStart(c)) {
    t.kind = Token::Kind::kIdent;
    while (!s.done() && IsIdentChar(s.peek())) t.text.push_back(s.advance());
    t.upper = absl::AsciiStrToUpper(t.text);
    return absl::OkStatus();
  }
  if (c == '`') return ScanQuotedIdent(s, t);
  if (c == '"') {
    return Invalid(t.pos,
                   "double quotes are not allowed: write strings in single quotes and identifiers "
                   "plain or in `backticks`");
  }
  if (IsDigit(c) || (c == '.' && IsDigit(s.peek(1)))) return ScanNumber(s, t);
  if (c == '\'') return ScanString(s, t);
  return ScanSymbol(s, t);
}

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text) {
  if (text.size() > kMaxStatementBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sql: the statement is ", text.size(), " bytes, over the limit of ", kMaxStatementBytes));
  }
  std::vector<Token> out;
  Scanner s(text);
  while (true) {
    RETURN_IF_ERROR(SkipSpaceAndComments(s));
    Token t;
    t.pos = s.pos();
    if (s.done()) {
      t.kind = Token::Kind::kEnd;
      out.push_back(std::move(t));
      return out;
    }
    if (out.size() >= kMaxTokens) {
      return Invalid(t.pos, absl::StrCat("more than ", kMaxTokens, " tokens"));
    }
    RETURN_IF_ERROR(ScanToken(s, t));
    out.push_back(std::move(t));
  }
}

}  // namespace dpq::sql
