// A PostgreSQL array literal built element by element (PostgreSQL manual, "Arrays: Array Value
// Input"): every element double-quoted with '"' and '\' backslash-escaped, so any text (commas,
// braces, quotes, the word NULL) arrives unchanged. Bound as one parameter (e.g. $1::text[]),
// never spliced into SQL.
#ifndef DPQ_SERVER_STORE_ARRAY_LITERAL_H_
#define DPQ_SERVER_STORE_ARRAY_LITERAL_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dpq::store {

class ArrayLiteral {
 public:
  void AddText(absl::string_view text) {
    out_ += out_.empty() ? '{' : ',';
    out_ += '"';
    for (char ch : text) {
      if (ch == '"' || ch == '\\') out_ += '\\';
      out_ += ch;
    }
    out_ += '"';
  }
  void AddInt(int64_t v) { AddText(absl::StrCat(v)); }
  std::string str() const { return out_.empty() ? "{}" : absl::StrCat(out_, "}"); }

 private:
  std::string out_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ARRAY_LITERAL_H_
