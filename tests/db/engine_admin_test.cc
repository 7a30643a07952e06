// The engine's admin classes (server/engine/admin/) and token authentication without gRPC: each
// admin action writes its admin-log entry with the change, a refused action writes none, and the
// reads return what the RPCs convert.
#include <string>
#include <vector>

#include "server/engine/admin/access_admin.h"
#include "server/engine/admin/audit_trails.h"
#include "server/engine/admin/budget_book.h"
#include "server/engine/admin/dataset_admin.h"
#include "server/engine/admin/population_admin.h"
#include "server/engine/authenticator.h"
#include "server/store/admin_log.h"
#include "tests/db/engine_test_env.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EngineAdminTest : public ::dpq::testing::EngineTest {
 protected:
  EngineAdminTest() : EngineTest(/*seed=*/7) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    admin_log_ = std::make_unique<store::AdminLog>(db());
    dataset_admin_ = std::make_unique<DatasetAdmin>(datasets_.get());
    access_ = std::make_unique<AccessAdmin>(principals_.get());
    populations_ = std::make_unique<store::PopulationStore>(db());
    population_admin_ = std::make_unique<PopulationAdmin>(populations_.get(), ledger_.get());
    budgets_ = std::make_unique<BudgetBook>(
        engine_.get(),
        BudgetBook::Stores{datasets_.get(), principals_.get(), ledger_.get(), populations_.get()});
    audit_ = std::make_unique<AuditTrails>(populations_.get(), ledger_.get(), admin_log_.get());
    auth_ = std::make_unique<Authenticator>(principals_.get());
  }

  static query::DatasetSchema TinySchema(const std::string& name) {
    query::DatasetSchema schema;
    schema.name = name;
    schema.privacy_unit = "uid";
    schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                      {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
    return schema;
  }

  static UploadRowsFor Csv(std::string csv) {
    return [csv](const std::vector<query::ColumnSchema>& columns) {
      query::DatasetSchema schema;
      schema.columns = columns;
      return CsvSource(schema, csv, /*chunk_bytes=*/7);
    };
  }

  std::vector<std::string> LoggedActions() {
    std::vector<std::string> actions;
    absl::StatusOr<std::vector<store::AdminLogEntry>> entries = audit_->ListAdminLog();
    EXPECT_TRUE(entries.ok()) << entries.status();
    if (!entries.ok()) return actions;
    for (const store::AdminLogEntry& e : *entries) {
      actions.push_back(absl::StrCat(e.action.admin, " ", e.action.action, " ", e.action.target,
                                     e.action.details.empty() ? "" : " ", e.action.details));
    }
    return actions;
  }

  const store::Principal root_{1, "root", store::Role::kAdmin};
  std::unique_ptr<store::AdminLog> admin_log_;
  std::unique_ptr<DatasetAdmin> dataset_admin_;
  std::unique_ptr<AccessAdmin> access_;
  std::unique_ptr<store::PopulationStore> populations_;
  std::unique_ptr<PopulationAdmin> population_admin_;
  std::unique_ptr<BudgetBook> budgets_;
  std::unique_ptr<AuditTrails> audit_;
  std::unique_ptr<Authenticator> auth_;
};

TEST_F(EngineAdminTest, DatasetCreateLoadAndDropEachWriteTheirAdminLogEntry) {
  ASSERT_OK_AND_ASSIGN(
      store::CreatedDataset created,
      dataset_admin_->Create(root_, TinySchema("d"), Csv("uid,x\n1,1.5\n2,2.5\n")));
  EXPECT_EQ(created.rows_loaded, 2);
  ASSERT_OK_AND_ASSIGN(store::CreatedDataset loaded,
                       dataset_admin_->Load(root_, "d", Csv("uid,x\n3,3.5\n")));
  EXPECT_EQ(loaded.rows_loaded, 1);
  EXPECT_EQ(loaded.schema.name, "d");
  EXPECT_THAT(dataset_admin_->Drop(root_, "d", /*confirmed=*/false),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("set confirm")));
  EXPECT_THAT(dataset_admin_->Drop(root_, "d", /*confirmed=*/true), IsOk());
  EXPECT_THAT(LoggedActions(),
              ElementsAre("root dataset.create d privacy_unit=uid population=d columns=2 rows=2",
                          "root dataset.load d rows=1", "root dataset.drop d"));
  ASSERT_OK_AND_ASSIGN(store::AdminLog::Verification v, audit_->VerifyAdminLog(/*full=*/true));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, 3);
}

TEST_F(EngineAdminTest, AnInvalidNewDatasetIsRefusedBeforeItsUploadIsOpened) {
  query::DatasetSchema schema = TinySchema("d");
  schema.privacy_unit = "nope";
  bool opened = false;
  const UploadRowsFor rows_for = [&](const std::vector<query::ColumnSchema>&) {
    opened = true;
    return store::CopyLineSource();
  };
  EXPECT_THAT(dataset_admin_->Create(root_, schema, rows_for),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(opened);
  EXPECT_TRUE(LoggedActions().empty());
}

TEST_F(EngineAdminTest, AnAnalystSeesOnlyGrantedDatasetsAndAnAdminSeesAll) {
  ASSERT_THAT(CreateTinyDataset("a"), IsOk());
  ASSERT_THAT(CreateTinyDataset("b"), IsOk());
  ASSERT_OK_AND_ASSIGN(IssuedToken ann,
                       access_->CreatePrincipal(root_, "ann", store::Role::kAnalyst));
  ASSERT_THAT(access_->Grant(root_, "ann", "b", GrantCaps{1.5, 1e-6}), IsOk());
  ASSERT_OK_AND_ASSIGN(std::vector<query::DatasetSchema> seen,
                       dataset_admin_->Visible(ann.principal));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].name, "b");
  ASSERT_OK_AND_ASSIGN(std::vector<query::DatasetSchema> all, dataset_admin_->Visible(root_));
  EXPECT_EQ(all.size(), 2u);
  EXPECT_THAT(LoggedActions(), ElementsAre("root analyst.create ann role=analyst",
                                           "root grant ann/b epsilon_cap=1.5 delta_cap=1e-06"));
}

TEST_F(EngineAdminTest, TokensIssuedAuthenticateUntilRotatedAndAdminsCannotRevokeThemselves) {
  ASSERT_OK_AND_ASSIGN(IssuedToken ann,
                       access_->CreatePrincipal(root_, "ann", store::Role::kAdmin));
  ASSERT_OK_AND_ASSIGN(store::Principal found, auth_->AuthenticateBearer("Bearer " + ann.token));
  EXPECT_EQ(found.name, "ann");
  EXPECT_THAT(Authenticator::RequireAdmin(found), IsOk());
  ASSERT_OK_AND_ASSIGN(IssuedToken rotated, access_->RotateToken(root_, "ann"));
  EXPECT_NE(rotated.token, ann.token);
  EXPECT_THAT(auth_->AuthenticateBearer("Bearer " + ann.token),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(auth_->AuthenticateBearer("Bearer " + rotated.token), IsOk());
  EXPECT_THAT(auth_->AuthenticateBearer(rotated.token),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("malformed")));
  EXPECT_THAT(access_->Revoke(found, "ann"), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(access_->Revoke(root_, "ann"), IsOk());
  EXPECT_THAT(LoggedActions(), ElementsAre("root analyst.create ann role=admin",
                                           "root token.rotate ann", "root analyst.revoke ann"));
}

TEST_F(EngineAdminTest, AnAnalystIsNotAnAdmin) {
  ASSERT_OK_AND_ASSIGN(store::Principal bob, CreatePrincipal("bob"));
  EXPECT_THAT(Authenticator::RequireAdmin(bob),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("bob is not an admin")));
}

TEST_F(EngineAdminTest, ListPrincipalsGroupsEachOnesGrants) {
  ASSERT_THAT(CreateTinyDataset("a"), IsOk());
  ASSERT_THAT(CreateTinyDataset("b"), IsOk());
  ASSERT_THAT(access_->CreatePrincipal(root_, "ann", store::Role::kAnalyst), IsOk());
  ASSERT_THAT(access_->CreatePrincipal(root_, "cy", store::Role::kAnalyst), IsOk());
  for (const char* d : {"a", "b"}) ASSERT_THAT(access_->Grant(root_, "ann", d, {}), IsOk());
  ASSERT_THAT(access_->RevokeGrant(root_, "ann", "a"), IsOk());
  ASSERT_OK_AND_ASSIGN(std::vector<PrincipalAccess> listed, access_->ListPrincipals());
  for (const PrincipalAccess& p : listed) {
    const std::string& name = p.record.principal.name;
    EXPECT_EQ(p.grants.size(), name == "ann" ? 2u : 0u) << name;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<store::GrantRecord> on_b, access_->ListGrants("b"));
  ASSERT_EQ(on_b.size(), 1u);
  EXPECT_EQ(on_b[0].analyst, "ann");
}

TEST_F(EngineAdminTest, SetBudgetLogsTheChangeAndTheOverviewShowsItsPreset) {
  ASSERT_THAT(CreateTinyDataset("d"), IsOk());
  BudgetChange change;
  change.dataset = "d";
  change.preset = "census";  // epsilon 0: the preset's upper end
  ASSERT_OK_AND_ASSIGN(DatasetBudget set, budgets_->Set(root_, change));
  EXPECT_DOUBLE_EQ(set.budget.epsilon_total(), 1);
  EXPECT_EQ(set.preset, "census");
  EXPECT_THAT(LoggedActions(),
              ElementsAre("root budget.set d epsilon=1 delta=0 accountant=(kept) preset=census "
                          "max_query_epsilon=(kept)"));
  ASSERT_OK_AND_ASSIGN(DatasetBudget read, budgets_->Get(root_, "d"));
  EXPECT_EQ(read.preset, "census");
  ASSERT_OK_AND_ASSIGN(ServerOverview overview, budgets_->Overview());
  EXPECT_TRUE(overview.database_reachable);
  EXPECT_GT(overview.schema_version, 0);
  ASSERT_EQ(overview.budgets.size(), 1u);
  EXPECT_EQ(overview.budgets[0].preset, "census");
  change.preset = "nope";
  EXPECT_THAT(budgets_->Set(root_, change),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("preset")));
  EXPECT_EQ(LoggedActions().size(), 1u) << "a refused change writes no entry";
}

TEST_F(EngineAdminTest, AnUngrantedAnalystCannotReadTheBudget) {
  ASSERT_THAT(CreateTinyDataset("d"), IsOk());
  ASSERT_OK_AND_ASSIGN(store::Principal bob, CreatePrincipal("bob"));
  EXPECT_THAT(budgets_->Get(bob, "d"), StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(EngineAdminTest, AnEmptyBudgetAuditVerifies) {
  ASSERT_THAT(CreateTinyDataset("d"), IsOk());
  ASSERT_OK_AND_ASSIGN(AuditListing listing, audit_->ListAudit("d"));
  EXPECT_TRUE(listing.entries.empty());
  ASSERT_OK_AND_ASSIGN(AuditVerification v, audit_->VerifyAudit("d", /*full=*/true));
  EXPECT_EQ(v.population, "d");
  EXPECT_TRUE(v.result.ok) << v.result.reason;
  EXPECT_THAT(audit_->VerifyAudit("nope", true), StatusIs(absl::StatusCode::kNotFound));
}

// --- populations ---------------------------------------------------------------------------

query::QuerySpec CountOf(const std::string& dataset, double epsilon = 0.75) {
  query::QuerySpec spec;
  spec.dataset = dataset;
  spec.aggregate = query::AggregateKind::kCount;
  spec.epsilon = epsilon;
  return spec;
}

TEST_F(EngineAdminTest, DatasetsOfOnePopulationShareItsBudgetAndAuditNamedThroughEither) {
  ASSERT_OK_AND_ASSIGN(PopulationView clinic,
                       population_admin_->Create(root_, "clinic", query::ColumnType::kInteger));
  EXPECT_TRUE(clinic.population.datasets.empty());
  EXPECT_EQ(clinic.budget.epsilon_total_units, 0);
  for (const char* name : {"patients", "visits"}) {
    query::DatasetSchema schema = TinySchema(name);
    schema.population = "clinic";
    ASSERT_OK_AND_ASSIGN(store::CreatedDataset created,
                         dataset_admin_->Create(root_, schema, Csv("uid,x\n1,2\n")));
    EXPECT_EQ(created.schema.population, "clinic");
    EXPECT_EQ(created.schema.population_id, clinic.population.id);
  }
  BudgetChange change;
  change.dataset = "visits";  // a dataset names its population
  change.epsilon = 2;         // two queries of 0.75 fit, a third does not
  ASSERT_OK_AND_ASSIGN(DatasetBudget set, budgets_->Set(root_, change));
  EXPECT_EQ(set.budget.population, "clinic");
  EXPECT_EQ(set.via_dataset, "visits");
  ASSERT_OK_AND_ASSIGN(DatasetBudget read, budgets_->Get(root_, "clinic"));
  EXPECT_DOUBLE_EQ(read.budget.epsilon_total(), 2);
  EXPECT_EQ(read.via_dataset, "");
  ASSERT_OK_AND_ASSIGN(PopulationView shown, population_admin_->Get("clinic"));
  EXPECT_THAT(shown.population.datasets, ElementsAre("patients", "visits"));
  EXPECT_DOUBLE_EQ(shown.budget.epsilon_total(), 2);

  // One query on each dataset: both debit the one ledger, one audit chain.
  ASSERT_OK_AND_ASSIGN(store::Principal boss, CreatePrincipal("boss", store::Role::kAdmin));
  ASSERT_THAT(engine_->Run(boss, CountOf("patients"), "p1"), IsOk());
  ASSERT_THAT(engine_->Run(boss, CountOf("visits"), "v1"), IsOk());
  ASSERT_OK_AND_ASSIGN(read, budgets_->Get(root_, "patients"));
  EXPECT_DOUBLE_EQ(read.budget.epsilon_spent(), 1.5);
  ASSERT_OK_AND_ASSIGN(AuditListing listing, audit_->ListAudit("patients"));
  EXPECT_EQ(listing.population, "clinic");
  EXPECT_EQ(listing.via_dataset, "patients");
  ASSERT_EQ(listing.entries.size(), 2u);
  EXPECT_EQ(listing.entries[0].datasets, "patients");
  EXPECT_EQ(listing.entries[1].datasets, "visits");
  ASSERT_OK_AND_ASSIGN(AuditVerification v, audit_->VerifyAudit("clinic", /*full=*/true));
  EXPECT_TRUE(v.result.ok) << v.result.reason;
  EXPECT_EQ(v.result.entries, 2);

  // The budget is spent for both: a third query of either dataset no longer fits (another epsilon:
  // the same question again would be answered from the result cache, for free).
  EXPECT_THAT(engine_->Run(boss, CountOf("patients", 0.6), "p2"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("population clinic")));
}

TEST_F(EngineAdminTest, APopulationRefusesAForeignUnitTypeAndIsDroppedOnlyWhenEmpty) {
  ASSERT_THAT(population_admin_->Create(root_, "people", query::ColumnType::kText), IsOk());
  EXPECT_THAT(population_admin_->Create(root_, "people", query::ColumnType::kText),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(population_admin_->Create(root_, "dbl", query::ColumnType::kDouble),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("integer or text")));
  query::DatasetSchema schema = TinySchema("ints");
  schema.population = "people";  // uid is an integer column
  EXPECT_THAT(dataset_admin_->Create(root_, schema, Csv("uid,x\n1,2\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("identifies people by text")));
  schema.population = "nobody";
  EXPECT_THAT(dataset_admin_->Create(root_, schema, Csv("uid,x\n1,2\n")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("population create nobody")));
  // A dataset without a population gets one of its own; its name is then taken for populations.
  ASSERT_THAT(dataset_admin_->Create(root_, TinySchema("solo"), Csv("uid,x\n1,2\n")), IsOk());
  EXPECT_THAT(population_admin_->Create(root_, "solo", query::ColumnType::kInteger),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(population_admin_->Drop(root_, "solo"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("solo")));
  EXPECT_THAT(population_admin_->Drop(root_, "people"), IsOk());
  ASSERT_OK_AND_ASSIGN(std::vector<PopulationView> all, population_admin_->List());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].population.name, "solo");
  EXPECT_TRUE(all[1].population.dropped);
}

TEST_F(EngineAdminTest, APublicTableHasNoPopulationNoBudgetAndNeedsNoGrant) {
  query::DatasetSchema schema;
  schema.name = "regions";
  schema.is_public = true;
  schema.columns = {{"code", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}},
                    {"label", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  ASSERT_OK_AND_ASSIGN(store::CreatedDataset created,
                       dataset_admin_->Create(root_, schema, Csv("code,label\nn,North\n")));
  EXPECT_TRUE(created.schema.is_public);
  EXPECT_EQ(created.schema.population, "");
  EXPECT_EQ(created.rows_loaded, 1);
  EXPECT_THAT(LoggedActions().back(), HasSubstr("public=true (stated not personal)"));
  EXPECT_THAT(populations_->Resolve("regions"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("public table: it has no population, no budget")));
  ASSERT_THAT(CreatePrincipal("bob"), IsOk());
  EXPECT_THAT(access_->Grant(root_, "bob", "regions", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("public table")));
  schema.privacy_unit = "code";
  schema.name = "regions2";
  EXPECT_THAT(dataset_admin_->Create(root_, schema, Csv("code,label\nn,North\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no privacy_unit")));
}

}  // namespace
}  // namespace dpq::engine
