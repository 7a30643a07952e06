// DatasetStore against a real PostgreSQL: schema + rows loaded in one transaction through COPY,
// all-or-nothing on a failing source, names unique, listing filtered by grants.
#include "server/store/dataset_store.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/store/budget_ledger.h"
#include "server/store/principal_store.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using query::ColumnSchema;
using query::ColumnType;
using query::DatasetSchema;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kPatientsCsv[] =
    "patient,age,weight,ward\n"
    "1,34,70.5,north\n"
    "1,35,71.25,north\n"
    "2,61,,south\n"
    "3,,88,\n"
    "4,47,-0.5,east\n";

DatasetSchema PatientsSchema(const std::string& name) {
  DatasetSchema s;
  s.name = name;
  s.privacy_unit = "patient";
  s.columns = {{"patient", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
               {"age", ColumnType::kInteger, 0.0, 120.0, {}},
               {"weight", ColumnType::kDouble, -1.5, 250.25, {}},
               {"ward", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  return s;
}

MATCHER_P4(ColumnIs, name, type, lower, upper, "") {
  return arg.name == name && arg.type == type && arg.lower == lower && arg.upper == upper;
}

class DatasetStoreTest : public ::dpq::testing::StoreTest {
 protected:
  void ExpectPatientsSchema(const DatasetSchema& s, const std::string& name) {
    EXPECT_EQ(s.name, name);
    EXPECT_EQ(s.privacy_unit, "patient");
    EXPECT_EQ(s.version, 1);
    EXPECT_GT(s.id, 0);
    EXPECT_FALSE(s.created_at.empty());
    EXPECT_THAT(s.columns,
                ElementsAre(ColumnIs("patient", ColumnType::kInteger, absl::nullopt, absl::nullopt),
                            ColumnIs("age", ColumnType::kInteger, absl::optional<double>(0.0),
                                     absl::optional<double>(120.0)),
                            ColumnIs("weight", ColumnType::kDouble, absl::optional<double>(-1.5),
                                     absl::optional<double>(250.25)),
                            ColumnIs("ward", ColumnType::kText, absl::nullopt, absl::nullopt)));
  }

  int DataTables() {
    std::string n = Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'dpq_data'");
    return n.empty() ? -1 : std::stoi(n);
  }
};

TEST_F(DatasetStoreTest, CreateLoadsRowsAndGetReturnsTheSchema) {
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(PatientsSchema("patients"), kPatientsCsv));
  EXPECT_EQ(created.rows_loaded, 5);
  ExpectPatientsSchema(created.schema, "patients");

  DatasetStore store(db());
  ASSERT_OK_AND_ASSIGN(DatasetSchema got, store.Get("patients"));
  ExpectPatientsSchema(got, "patients");
  EXPECT_EQ(got.id, created.schema.id);
  EXPECT_EQ(got.created_at, created.schema.created_at);

  // Rows arrive typed, with empty CSV fields as NULL.
  const std::string table = DataTableName(got.id);
  EXPECT_EQ(table, absl::StrCat("dpq_data.ds_", got.id));
  EXPECT_EQ(Sql(absl::StrCat(
                "SELECT patient, coalesce(age::text, 'NULL'), coalesce(weight::text, 'NULL'), "
                "coalesce(ward, 'NULL') FROM ",
                table, " ORDER BY patient, age")),
            "1|34|70.5|north\n1|35|71.25|north\n2|61|NULL|south\n3|NULL|88|NULL\n4|47|-0.5|east");
  EXPECT_EQ(Sql(absl::StrCat(
                "SELECT string_agg(column_name || ':' || data_type, ',' ORDER BY ordinal_position) "
                "FROM information_schema.columns WHERE table_schema = 'dpq_data' AND "
                "table_name = 'ds_",
                got.id, "'")),
            "patient:bigint,age:bigint,weight:double precision,_dpq_rank:integer,ward:text");

  // A population of its own, named after it, with a zero budget ledger, comes with it.
  EXPECT_EQ(got.population, "patients");
  EXPECT_FALSE(got.is_public);
  BudgetLedger ledger(db());
  ASSERT_OK_AND_ASSIGN(BudgetState b, ledger.Get(got.population_id));
  EXPECT_EQ(b.epsilon_total(), 0);
  EXPECT_EQ(b.epsilon_spent(), 0);
  EXPECT_EQ(b.population, "patients");
}

TEST_F(DatasetStoreTest, LoadsLargeInputStreamedInSmallChunks) {
  DatasetSchema schema;
  schema.name = "many";
  schema.privacy_unit = "uid";
  schema.columns = {{"uid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"v", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
                    {"note", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  std::string csv = "uid,v,note\r\n";
  constexpr int kRows = 20000;
  for (int i = 0; i < kRows; ++i) absl::StrAppend(&csv, i, ",", i * 0.25, ",n", i % 7, "\r\n");
  csv.resize(csv.size() - 2);  // the last line has no line end
  ASSERT_OK_AND_ASSIGN(CreatedDataset created, CreateFromCsv(schema, csv, /*chunk_bytes=*/7));
  EXPECT_EQ(created.rows_loaded, kRows);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*), sum(v), count(DISTINCT note) FROM ",
                             DataTableName(created.schema.id))),
            absl::StrCat(kRows, "|", int64_t{kRows - 1} * kRows / 8, "|7"));
}

TEST_F(DatasetStoreTest, TextWithCopySpecialCharactersRoundTrips) {
  DatasetSchema schema;
  schema.name = "texts";
  schema.privacy_unit = "uid";
  schema.columns = {{"uid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"s", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  // Backslashes, tabs and a literal \N must arrive as text, not as escapes or NULL.
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(schema, "uid,s\n1,a\\b\n2,tab\there\n3,\\N\n4,caf\xc3\xa9\n"));
  EXPECT_EQ(created.rows_loaded, 4);
  EXPECT_EQ(Sql(absl::StrCat("SELECT uid, s IS NULL, length(s), replace(s, E'\\t', '<TAB>') FROM ",
                             DataTableName(created.schema.id), " ORDER BY uid")),
            "1|f|3|a\\b\n2|f|8|tab<TAB>here\n3|f|2|\\N\n4|f|4|caf\xc3\xa9");
}

TEST_F(DatasetStoreTest, SourceErrorMidwayLeavesNothingBehind) {
  DatasetStore store(db());
  const DatasetSchema schema = PatientsSchema("broken");
  int calls = 0;
  CopyLineSource failing = [&](std::string* lines) -> absl::StatusOr<bool> {
    ++calls;
    if (calls <= 2) {
      absl::StrAppend(lines, "1\t34\t70.5\tnorth\n", calls, "\t40\t\\N\tsouth\n");
      return true;
    }
    return absl::DataLossError("upload interrupted");
  };
  EXPECT_THAT(store.Create(schema, failing),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("interrupted")));
  EXPECT_EQ(calls, 3);

  EXPECT_THAT(store.Get("broken"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(DataTables(), 0);
  EXPECT_EQ(Sql("SELECT (SELECT count(*) FROM datasets) + (SELECT count(*) FROM dataset_columns) + "
                "(SELECT count(*) FROM ledgers)"),
            "0");

  // A CSV error (as CsvToCopy reports it) behaves the same, and the name stays free.
  EXPECT_THAT(CreateFromCsv(schema, "patient,age,weight,ward\n1,34,70.5,north\n2,old,1,x\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3")));
  EXPECT_THAT(store.Get("broken"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(DataTables(), 0);
  ASSERT_OK_AND_ASSIGN(CreatedDataset ok, CreateFromCsv(schema, kPatientsCsv));
  EXPECT_EQ(ok.rows_loaded, 5);
  EXPECT_EQ(DataTables(), 1);
}

TEST_F(DatasetStoreTest, RowRejectedByPostgresLeavesNothingBehind) {
  DatasetStore store(db());
  // Passes no CSV validation: an integer out of bigint range fails inside COPY.
  CopyLineSource source = [n = 0](std::string* lines) mutable -> absl::StatusOr<bool> {
    if (n++ == 0) {
      lines->append("1\t34\t70.5\tnorth\n99999999999999999999999\t1\t1\tx\n");
      return true;
    }
    return false;
  };
  EXPECT_THAT(store.Create(PatientsSchema("overflow"), source), ::testing::Not(IsOk()));
  EXPECT_THAT(store.Get("overflow"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(DataTables(), 0);
}

TEST_F(DatasetStoreTest, DuplicateNameIsAlreadyExistsAndKeepsTheOriginal) {
  ASSERT_OK_AND_ASSIGN(CreatedDataset first, CreateFromCsv(PatientsSchema("dup"), kPatientsCsv));
  EXPECT_THAT(CreateFromCsv(PatientsSchema("dup"), "patient,age,weight,ward\n9,9,9,nine\n"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("dup")));
  DatasetStore store(db());
  ASSERT_OK_AND_ASSIGN(DatasetSchema got, store.Get("dup"));
  EXPECT_EQ(got.id, first.schema.id);
  EXPECT_EQ(DataTables(), 1);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM ", DataTableName(got.id))), "5");
}

TEST_F(DatasetStoreTest, GetUnknownNameIsNotFound) {
  DatasetStore store(db());
  EXPECT_THAT(store.Get("nope"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  EXPECT_THAT(store.List(absl::nullopt), dpq::testing::IsOkAndHolds(IsEmpty()));
}

// Column names are validated identifiers (^[a-z_][a-z0-9_]*$), which include SQL keywords such as
// "group", "order" or "user": the store must quote them everywhere, COPY included.
TEST_F(DatasetStoreTest, ColumnsNamedLikeSqlKeywordsLoad) {
  DatasetSchema schema;
  schema.name = "keywords";
  schema.privacy_unit = "user";
  schema.columns = {{"user", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"group", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
                    {"order", ColumnType::kDouble, 0.0, 10.0, {}}};
  ASSERT_OK(query::ValidateNewDataset(schema));
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(schema, "user,group,order\n1,a,2.5\n2,b,3\n"));
  EXPECT_EQ(created.rows_loaded, 2);
}

// GetWithGrant: the query path's schema and grant check in one statement. The schema is Get's, in
// full; `granted` follows the grant row exactly (held, never granted, revoked, granted again).
TEST_F(DatasetStoreTest, GetWithGrantReturnsTheSchemaAndWhetherTheGrantIsHeld) {
  ASSERT_THAT(CreateFromCsv(PatientsSchema("pts"), kPatientsCsv), IsOk());
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_OK_AND_ASSIGN(Principal bob, CreatePrincipal("bob"));
  PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("ann", "pts"));
  DatasetStore store(db());
  ASSERT_OK_AND_ASSIGN(DatasetSchema plain, store.Get("pts"));

  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted a, store.GetWithGrant("pts", {ann.id}));
  EXPECT_TRUE(a.granted);
  ExpectPatientsSchema(a.schema, "pts");
  EXPECT_EQ(a.schema.id, plain.id);
  EXPECT_EQ(a.schema.version, plain.version);
  EXPECT_EQ(a.schema.columns.size(), plain.columns.size());
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted b, store.GetWithGrant("pts", {bob.id}));
  EXPECT_FALSE(b.granted);
  ExpectPatientsSchema(b.schema, "pts");

  ASSERT_OK(principals.RevokeGrant("ann", "pts"));
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted revoked, store.GetWithGrant("pts", {ann.id}));
  EXPECT_FALSE(revoked.granted);
  ASSERT_OK(principals.Grant("ann", "pts"));
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted again, store.GetWithGrant("pts", {ann.id}));
  EXPECT_TRUE(again.granted);

  EXPECT_THAT(store.GetWithGrant("nope", {ann.id}), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store.GetWithGrant("", {ann.id}), StatusIs(absl::StatusCode::kInvalidArgument));
}

// The same statement confirms a remembered caller's token (engine/recent_callers.h): the token must
// still name that principal, unrevoked; an empty token confirms nothing and is not asked. With a
// fingerprint the statement also probes the result cache; none matches on a fresh dataset.
TEST_F(DatasetStoreTest, GetWithGrantConfirmsTheCallersTokenAndProbesTheCache) {
  ASSERT_THAT(CreateFromCsv(PatientsSchema("pts"), kPatientsCsv), IsOk());
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_OK_AND_ASSIGN(Principal bob, CreatePrincipal("bob"));
  const std::string anns_token = Sha256("token-of-ann");
  PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("ann", "pts"));
  DatasetStore store(db());

  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted own, store.GetWithGrant("pts", {ann.id, anns_token}));
  EXPECT_TRUE(own.caller_confirmed);
  EXPECT_TRUE(own.granted);
  EXPECT_FALSE(own.probed.has_value());
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted other,
                       store.GetWithGrant("pts", {bob.id, anns_token}));
  EXPECT_FALSE(other.caller_confirmed);
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted probing,
                       store.GetWithGrant("pts", {ann.id, anns_token, "count|eps=1"}));
  ASSERT_TRUE(probing.probed.has_value());
  EXPECT_EQ(probing.probed->fingerprint, "count|eps=1");
  EXPECT_FALSE(probing.probed->request_id.has_value());

  ASSERT_OK(principals.RotateToken("ann", Sha256("rotated"), nullptr).status());
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted rotated,
                       store.GetWithGrant("pts", {ann.id, anns_token}));
  EXPECT_FALSE(rotated.caller_confirmed);
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted fresh,
                       store.GetWithGrant("pts", {ann.id, Sha256("rotated")}));
  EXPECT_TRUE(fresh.caller_confirmed);
  ASSERT_OK(principals.Revoke("ann", nullptr));
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted revoked,
                       store.GetWithGrant("pts", {ann.id, Sha256("rotated")}));
  EXPECT_FALSE(revoked.caller_confirmed);
  ASSERT_OK_AND_ASSIGN(DatasetStore::Granted unasked, store.GetWithGrant("pts", {ann.id}));
  EXPECT_TRUE(unasked.caller_confirmed);  // nothing to confirm: the caller was just looked up
}

TEST_F(DatasetStoreTest, ListReturnsAllOrOnlyGrantedDatasets) {
  for (const char* name : {"zeta", "alpha", "mid"}) {
    ASSERT_THAT(CreateFromCsv(PatientsSchema(name), kPatientsCsv), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_OK_AND_ASSIGN(Principal bob, CreatePrincipal("bob"));
  ASSERT_OK_AND_ASSIGN(Principal cat, CreatePrincipal("cat"));
  PrincipalStore principals(db());
  ASSERT_OK(principals.Grant("ann", "zeta"));
  ASSERT_OK(principals.Grant("ann", "alpha"));
  ASSERT_OK(principals.Grant("ann", "alpha"));  // twice: a no-op
  ASSERT_OK(principals.Grant("bob", "mid"));
  EXPECT_THAT(principals.Grant("bob", "nope"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(principals.Grant("nobody", "mid"), StatusIs(absl::StatusCode::kNotFound));

  DatasetStore store(db());
  using Names = std::vector<std::string>;
  auto names = [&](absl::optional<int64_t> who) -> Names {
    auto list = store.List(who);
    EXPECT_THAT(list, IsOk());
    Names out;
    if (!list.ok()) return out;
    for (const DatasetSchema& s : *list) {
      out.push_back(s.name);
      EXPECT_EQ(s.columns.size(), 4u) << s.name;  // every column, once, even with grants joined in
      ExpectPatientsSchema(s, s.name);
    }
    return out;
  };
  EXPECT_EQ(names(absl::nullopt), (Names{"alpha", "mid", "zeta"}));
  EXPECT_EQ(names(ann.id), (Names{"alpha", "zeta"}));
  EXPECT_EQ(names(bob.id), (Names{"mid"}));
  EXPECT_EQ(names(cat.id), Names{});
  EXPECT_EQ(names(int64_t{424242}), Names{});
}

}  // namespace
}  // namespace dpq::store
