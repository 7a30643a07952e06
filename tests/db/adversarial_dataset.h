// The adversarial dataset of the scan-totality test and the `scan` fuzz target: every extreme
// value a float8 or bigint column can hold (NaN and +-Infinity included, which CSV ingest refuses
// but a scan must survive anyway), alone in a unit, all in one unit, in pairs, thousands of times
// in one unit, and in the NULL unit; and bounds pairs that validation accepts.
#ifndef DPQ_TESTS_DB_ADVERSARIAL_DATASET_H_
#define DPQ_TESTS_DB_ADVERSARIAL_DATASET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "server/query/csv_to_copy.h"
#include "server/query/dataset_schema.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "tests/support/test_postgres.h"

namespace dpq::testing {

// Stored values. float8 holds all of them (NaN and +-Infinity included); an integer column holds
// int64's extremes. Every one is stored alone in a unit, next to one another in a unit, and many
// times over in the unit with thousands of rows.
inline const std::vector<std::string>& AdversarialDoubles() {
  static const auto* const kValues = new std::vector<std::string>{"1.7976931348623157e308",
                                                                  "-1.7976931348623157e308",
                                                                  "1e308",
                                                                  "-1e308",
                                                                  "1e155",
                                                                  "-1e155",
                                                                  "1e-200",
                                                                  "-1e-200",
                                                                  "2.2250738585072014e-308",
                                                                  "-2.2250738585072014e-308",
                                                                  "4.9406564584124654e-324",
                                                                  "-4.9406564584124654e-324",
                                                                  "0",
                                                                  "-0",
                                                                  "NaN",
                                                                  "Infinity",
                                                                  "-Infinity",
                                                                  "1",
                                                                  "-1",
                                                                  "1e15",
                                                                  "NULL"};
  return *kValues;
}
inline const std::vector<std::string>& AdversarialIntegers() {
  static const auto* const kValues = new std::vector<std::string>{
      "-9223372036854775808", "9223372036854775807", "0", "1", "-1", "NULL"};
  return *kValues;
}

// Bounds that validation accepts: tiny, huge, symmetric, asymmetric, one-sided at zero, and the
// pair of the variance underflow (a centre of 6.9e-164 that is not 0).
struct Bounds {
  double lower, upper;
};
inline const std::vector<Bounds>& AdversarialBounds() {
  static const auto* const kBounds =
      new std::vector<Bounds>{{-1e-147, 1.0000000000000001e-147},
                              {-4.9406564584124654e-324, 4.9406564584124654e-324},
                              {0, 4.9406564584124654e-324},
                              {1e-300, 2e-300},
                              {-1e15, 1e15},
                              {0, 1e15},
                              {-1e15, 0},
                              {-3, 1e15},
                              {0, 1},
                              {1, 2.5}};
  return *kBounds;
}

inline query::DatasetSchema AdversarialSchema() {
  query::DatasetSchema s;
  s.name = "adversarial";
  s.privacy_unit = "pid";
  s.columns = {{"pid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
               {"x", query::ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
               {"n", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
               {"cat", query::ColumnType::kText, absl::nullopt, absl::nullopt, {"a", "b", "c"}},
               {"grp", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  return s;
}

// Creates the dataset "adversarial" (AdversarialSchema) on `db` through the store, then adds the
// adversarial rows with SQL on `url` as the superuser, each with its per-unit rank. With `shards`,
// the dataset is sharded over them (the rows then go through the coordinator's partitioned
// table to the shards, as rows of the first load). `name` names it (the query shapes of
// scan_totality.h ask for "adversarial").
inline absl::StatusOr<query::DatasetSchema> CreateAdversarialDataset(
    store::Database* db, const std::string& url, const std::vector<std::string>& shards = {},
    const std::string& name = "adversarial") {
  query::DatasetSchema schema = AdversarialSchema();
  schema.shards = shards;
  schema.name = name;
  const std::string load = shards.empty() ? "" : ", 1";
  auto encoder = std::make_shared<query::CsvToCopy>(schema.columns);
  auto done = std::make_shared<bool>(false);
  const store::CopyLineSource source = [encoder, done](std::string* lines) -> absl::StatusOr<bool> {
    if (*done) return false;
    *done = true;
    absl::Status fed = encoder->Feed("pid,x,n,cat,grp\n1,1.5,3,a,g0\n1,2.5,4,b,g1\n", lines);
    if (!fed.ok()) return fed;
    absl::Status finished = encoder->Finish(lines);
    if (!finished.ok()) return finished;
    return true;
  };
  store::DatasetStore datasets(db);
  absl::StatusOr<store::CreatedDataset> created = datasets.Create(schema, source);
  if (!created.ok()) return created.status();
  const auto& xs = AdversarialDoubles();
  const auto& ns = AdversarialIntegers();
  const std::vector<std::string> cats = {"'a'", "'b'", "'c'", "NULL"};
  const std::vector<std::string> grps = {"'g0'", "'g1'", "''", "NULL", "'zz'", "'g2'"};
  std::vector<std::string> rows;
  const auto row = [&](const std::string& unit, int rank, const std::string& x, size_t i) {
    const std::string xv = x == "NULL" ? "NULL" : absl::StrCat("'", x, "'::float8");
    rows.push_back(absl::StrCat("(", unit, ", ", xv, ", ", ns[i % ns.size()], ", ",
                                cats[i % cats.size()], ", ", grps[i % grps.size()], ", ", rank,
                                load, ")"));
  };
  int64_t pid = 100;
  // Each value alone in its unit, then every value in one unit, then pairs of equal values.
  for (size_t i = 0; i < xs.size(); ++i) row(absl::StrCat(pid++), 1, xs[i], i);
  for (size_t i = 0; i < xs.size(); ++i) row(absl::StrCat(pid), static_cast<int>(i) + 1, xs[i], i);
  ++pid;
  for (size_t i = 0; i < xs.size(); ++i) {
    row(absl::StrCat(pid), 1, xs[i], i);
    row(absl::StrCat(pid++), 2, xs[i], i);
  }
  // The NULL unit (all NULL-unit rows form one unit).
  for (size_t i = 0; i < 4; ++i) row("NULL", static_cast<int>(i) + 1, xs[i], i);
  const std::string table = store::DataTableName(created->schema.id);
  const std::string columns =
      absl::StrCat(" (pid, x, n, cat, grp, _dpq_rank", shards.empty() ? "" : ", _dpq_load", ") ");
  // A unit with thousands of rows of the largest magnitudes, and one of subnormals and 1e-200,
  // with every integer extreme, category and group value among them.
  const std::string many = absl::StrCat(
      "INSERT INTO ", table, columns,
      "SELECT $UNIT, (CASE WHEN r % 2 = 1 THEN '$ODD' ELSE '$EVEN' END)::float8, "
      "(ARRAY[-9223372036854775808, 9223372036854775807, 0, 1, -1, NULL]::bigint[])[1 + r % 6], "
      "(ARRAY['a', 'b', 'c', NULL])[1 + r % 4], (ARRAY['g0', 'g1', '', NULL, 'zz', 'g2'])[1 + r % 6], r",
      load, " FROM generate_series(1, $ROWS) r");
  const std::string sql =
      absl::StrCat("INSERT INTO ", table, columns, "VALUES ", absl::StrJoin(rows, ", "), "; ",
                   absl::StrReplaceAll(many, {{"$UNIT", absl::StrCat(pid)},
                                              {"$ODD", "1.7976931348623157e308"},
                                              {"$EVEN", "1e308"},
                                              {"$ROWS", "3000"}}),
                   "; ",
                   absl::StrReplaceAll(many, {{"$UNIT", absl::StrCat(pid + 1)},
                                              {"$ODD", "4.9406564584124654e-324"},
                                              {"$EVEN", "1e-200"},
                                              {"$ROWS", "2000"}}));
  absl::StatusOr<std::string> inserted = TestPostgres::RunPsql(url, sql);
  if (!inserted.ok()) return inserted.status();
  return created->schema;
}

}  // namespace dpq::testing

#endif  // DPQ_TESTS_DB_ADVERSARIAL_DATASET_H_
