// Reading a PostgreSQL text[] column (store-internal: includes libpqxx).
#ifndef DPQ_SERVER_STORE_TEXT_ARRAY_H_
#define DPQ_SERVER_STORE_TEXT_ARRAY_H_

#include <string>
#include <tuple>
#include <vector>

#include <pqxx/pqxx>

namespace dpq::store {

// The elements of a text[] value, in order. NULL elements are skipped: the columns read this way
// (dataset_categories.value, ldp_collections.domain) hold none.
inline std::vector<std::string> ParseTextArray(const pqxx::field& f) {
  std::vector<std::string> out;
  pqxx::array_parser parser = f.as_array();
  for (auto [kind, text] = parser.get_next(); kind != pqxx::array_parser::done;
       std::tie(kind, text) = parser.get_next()) {
    if (kind == pqxx::array_parser::string_value) out.push_back(text);
  }
  return out;
}

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_TEXT_ARRAY_H_
