#include "server/store/join_sql.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/store/dataset_store.h"

namespace dpq::store {
namespace {

std::string TableRef(int table) { return absl::StrCat("t", table); }

}  // namespace

std::string JoinedSourceSql(const query::JoinSource& join,
                            const std::function<std::string(const std::string&)>& quote_name) {
  std::vector<std::string> select;
  for (const query::JoinedColumn& c : join.columns) {
    select.push_back(
        absl::StrCat(TableRef(c.table), ".", quote_name(c.column), " AS ", quote_name(c.name)));
  }
  std::string from = absl::StrCat(DataTableName(join.tables[0].dataset_id), " ", TableRef(0));
  for (size_t i = 1; i < join.tables.size(); ++i) {
    const query::JoinEquality& on = join.on[i - 1];
    absl::StrAppend(&from, " JOIN ", DataTableName(join.tables[i].dataset_id), " ",
                    TableRef(static_cast<int>(i)), " ON ", TableRef(on.right_table), ".",
                    quote_name(on.right_column), " = ", TableRef(on.left_table), ".",
                    quote_name(on.left_column));
  }
  return absl::StrCat("(SELECT ", absl::StrJoin(select, ", "), " FROM ", from, ") joined");
}

}  // namespace dpq::store
