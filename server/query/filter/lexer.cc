#include "server/query/filter/lexer.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dpq::query::filter::internal {
namespace {

constexpr size_t kMaxIdentifierChars = 63;  // ValidateIdentifier: ^[a-z_][a-z0-9_]{0,62}$
constexpr size_t kExcerptBytes = 20;

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is invalid (overlong
// forms, surrogates and code points above U+10FFFF are invalid: RFC 3629, section 4).
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const auto at = [&](size_t k) -> unsigned char {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
  };
  const unsigned char c = at(0);
  const auto in = [](unsigned char b, unsigned char lo, unsigned char hi) {
    return b >= lo && b <= hi;
  };
  if (c < 0x80) return 1;
  if (in(c, 0xC2, 0xDF)) return IsContinuation(at(1)) ? 2 : 0;
  if (c == 0xE0) return in(at(1), 0xA0, 0xBF) && IsContinuation(at(2)) ? 3 : 0;
  if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF))
    return IsContinuation(at(1)) && IsContinuation(at(2)) ? 3 : 0;
  if (c == 0xED) return in(at(1), 0x80, 0x9F) && IsContinuation(at(2)) ? 3 : 0;
  if (c == 0xF0)
    return in(at(1), 0x90, 0xBF) && IsContinuation(at(2)) && IsContinuation(at(3)) ? 4 : 0;
  if (in(c, 0xF1, 0xF3)) {
    return IsContinuation(at(1)) && IsContinuation(at(2)) && IsContinuation(at(3)) ? 4 : 0;
  }
  if (c == 0xF4)
    return in(at(1), 0x80, 0x8F) && IsContinuation(at(2)) && IsContinuation(at(3)) ? 4 : 0;
  return 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentifierStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsIdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

}  // namespace

absl::Status FilterError(int position, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("where: at position ", position, ": ", message));
}

std::string Excerpt(absl::string_view text) {
  size_t n = text.size();
  bool cut = false;
  if (n > kExcerptBytes) {
    n = kExcerptBytes;
    while (n > 0 && IsContinuation(static_cast<unsigned char>(text[n]))) --n;
    cut = true;
  }
  std::string out = "'";
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20 || c == 0x7F ? '?' : static_cast<char>(c));
  }
  out += cut ? "...'" : "'";
  return out;
}

std::string Describe(const Token& token) {
  switch (token.kind) {
    case Token::Kind::kEnd: return "end of input";
    case Token::Kind::kString: return absl::StrCat("string ", Excerpt(token.text));
    default: return Excerpt(token.text);
  }
}

absl::Status Lexer::Init() {
  if (text_.size() > kMaxFilterBytes) {
    return FilterError(static_cast<int>(kMaxFilterBytes) + 1,
                       absl::StrCat("filter longer than ", kMaxFilterBytes, " bytes"));
  }
  char_position_.assign(text_.size() + 1, 0);
  int chars = 0;
  for (size_t i = 0; i < text_.size();) {
    const size_t len = Utf8SequenceLength(text_, i);
    if (len == 0) return FilterError(chars + 1, "invalid UTF-8");
    if (text_[i] == '\0') return FilterError(chars + 1, "NUL character");
    ++chars;
    for (size_t k = 0; k < len; ++k) char_position_[i + k] = chars;
    i += len;
  }
  char_position_[text_.size()] = chars + 1;
  return absl::OkStatus();
}

int Lexer::CharPosition(size_t byte_offset) const { return char_position_[byte_offset]; }

absl::Status Lexer::ErrorAt(size_t byte_offset, absl::string_view message) const {
  return FilterError(CharPosition(byte_offset), message);
}

char Lexer::PeekAhead(size_t k) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }

absl::StatusOr<Token> Lexer::Next() {
  while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  Token t;
  const size_t start = pos_;
  t.position = CharPosition(start);
  if (pos_ >= text_.size()) return t;  // kEnd
  const char c = text_[pos_];

  // Comments would let the rest of a spliced statement disappear; the language has none.
  if ((c == '-' && PeekAhead(1) == '-') || (c == '/' && PeekAhead(1) == '*')) {
    return ErrorAt(start, "comments are not allowed");
  }
  if (c == '(' || c == ')' || c == ',') {
    t.kind = c == '('   ? Token::Kind::kLParen
             : c == ')' ? Token::Kind::kRParen
                        : Token::Kind::kComma;
    t.text = std::string(1, c);
    ++pos_;
    return t;
  }
  if (c == '=' || c == '<' || c == '>' || c == '!') return LexCompare(std::move(t));
  if (c == '\'') return LexString(std::move(t));
  if (IsDigit(c) || c == '.' ||
      ((c == '+' || c == '-') && (IsDigit(PeekAhead(1)) || PeekAhead(1) == '.'))) {
    return LexNumber(std::move(t));
  }
  if (IsIdentifierStart(c)) return LexWord(std::move(t));
  const size_t len = Utf8SequenceLength(text_, pos_);
  return ErrorAt(start, absl::StrCat("unexpected character ", Excerpt(text_.substr(start, len))));
}

absl::StatusOr<Token> Lexer::LexCompare(Token t) {
  const size_t start = pos_;
  const char c = text_[pos_];
  t.kind = Token::Kind::kCompare;
  const char d = PeekAhead(1);
  if (c == '=') {
    t.op = CompareOp::kEq;
    pos_ += 1;
  } else if (c == '!' && d == '=') {
    t.op = CompareOp::kNe;
    pos_ += 2;
  } else if (c == '!')
    return ErrorAt(start, "unexpected character '!' (did you mean '!='?)");
  else if (c == '<' && d == '>') {
    t.op = CompareOp::kNe;
    pos_ += 2;
  } else if (c == '<' && d == '=') {
    t.op = CompareOp::kLe;
    pos_ += 2;
  } else if (c == '<') {
    t.op = CompareOp::kLt;
    pos_ += 1;
  } else if (d == '=') {
    t.op = CompareOp::kGe;
    pos_ += 2;
  } else {
    t.op = CompareOp::kGt;
    pos_ += 1;
  }
  t.text = std::string(text_.substr(start, pos_ - start));
  return t;
}

absl::StatusOr<Token> Lexer::LexString(Token t) {
  const size_t start = pos_;
  t.kind = Token::Kind::kString;
  ++pos_;
  while (true) {
    if (pos_ >= text_.size()) return ErrorAt(start, "unterminated string literal");
    if (text_[pos_] == '\'') {
      if (PeekAhead(1) == '\'') {  // '' is one quote (SQL standard); there are no backslash escapes
        t.text.push_back('\'');
        pos_ += 2;
        continue;
      }
      ++pos_;
      break;
    }
    t.text.push_back(text_[pos_++]);
  }
  return t;
}

absl::StatusOr<Token> Lexer::LexNumber(Token t) {
  const size_t start = pos_;
  const char c = text_[pos_];
  t.kind = Token::Kind::kNumber;
  t.is_integer = true;
  if (c == '+' || c == '-') ++pos_;
  size_t digits = 0;
  while (pos_ < text_.size() && IsDigit(text_[pos_])) {
    ++pos_;
    ++digits;
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    t.is_integer = false;
    ++pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) {
      ++pos_;
      ++digits;
    }
  }
  if (digits == 0) return ErrorAt(start, "malformed number");
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    t.is_integer = false;
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    size_t exponent_digits = 0;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) {
      ++pos_;
      ++exponent_digits;
    }
    if (exponent_digits == 0) return ErrorAt(start, "malformed number: exponent without digits");
  }
  if (pos_ < text_.size() && (IsIdentifierChar(text_[pos_]) || text_[pos_] == '.')) {
    return ErrorAt(start, "malformed number");
  }
  if (pos_ - start > kMaxNumberChars) {
    return ErrorAt(start, absl::StrCat("number longer than ", kMaxNumberChars, " characters"));
  }
  t.text = std::string(text_.substr(start, pos_ - start));
  return t;
}

// A keyword or a column name.
absl::StatusOr<Token> Lexer::LexWord(Token t) {
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) ++pos_;
  t.text = std::string(text_.substr(start, pos_ - start));
  const std::string lower = absl::AsciiStrToLower(t.text);
  static constexpr std::pair<const char*, Token::Kind> kKeywords[] = {
      {"and", Token::Kind::kAnd},   {"or", Token::Kind::kOr},           {"not", Token::Kind::kNot},
      {"in", Token::Kind::kIn},     {"between", Token::Kind::kBetween}, {"is", Token::Kind::kIs},
      {"null", Token::Kind::kNull},
  };
  for (const auto& [word, kind] : kKeywords) {
    if (lower == word) {
      t.kind = kind;
      return t;
    }
  }
  t.kind = Token::Kind::kIdentifier;
  if (lower != t.text) {
    return ErrorAt(start, absl::StrCat("column names are lowercase: ", Excerpt(t.text)));
  }
  if (t.text.size() > kMaxIdentifierChars) {
    return ErrorAt(start,
                   absl::StrCat("column name longer than ", kMaxIdentifierChars, " characters"));
  }
  return t;
}

}  // namespace dpq::query::filter::internal
