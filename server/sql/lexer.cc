#include "server/sql/lexer.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text) {
  if (text.size() > kMaxStatementBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("sql: the statement is ", text.size(), " bytes, over the limit of ",
                     kMaxStatementBytes));
  }
  std::vector<Token> out;
  Scanner s(text);
  while (true) {
    // Whitespace and comments.
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
    const char c = s.peek();
    if (IsIdentStart(c)) {
      t.kind = Token::Kind::kIdent;
      while (!s.done() && IsIdentChar(s.peek())) t.text.push_back(s.advance());
      t.upper = absl::AsciiStrToUpper(t.text);
    } else if (c == '`') {
      t.kind = Token::Kind::kQuotedIdent;
      s.advance();
      while (!s.done() && s.peek() != '`' && s.peek() != '\n') t.text.push_back(s.advance());
      if (s.done() || s.peek() != '`') return Invalid(t.pos, "unterminated quoted identifier");
      s.advance();
      t.upper = absl::AsciiStrToUpper(t.text);
    } else if (c == '"') {
      return Invalid(t.pos,
                     "double quotes are not allowed: write strings in single quotes and identifiers "
                     "plain or in `backticks`");
    } else if (IsDigit(c) || (c == '.' && IsDigit(s.peek(1)))) {
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
    } else if (c == '\'') {
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
    } else {
      t.kind = Token::Kind::kSymbol;
      static constexpr absl::string_view kTwo[] = {"<=", ">=", "<>", "!=", "=>"};
      bool matched = false;
      for (absl::string_view two : kTwo) {
        if (c == two[0] && s.peek(1) == two[1]) {
          s.advance();
          s.advance();
          t.text = std::string(two);
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (absl::string_view("(),.*+-/;=<>").find(c) == absl::string_view::npos) {
          const unsigned char u = static_cast<unsigned char>(c);
          return Invalid(t.pos, u >= 0x20 && u < 0x7f
                                    ? absl::StrCat("unexpected character '", std::string(1, c), "'")
                                    : absl::StrCat("unexpected byte 0x", absl::Hex(u)));
        }
        t.text = std::string(1, s.advance());
      }
    }
    out.push_back(std::move(t));
  }
}

}  // namespace dpq::sql
