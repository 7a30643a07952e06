// DP-SGD training runs through the engine on a migrated database: step reports are
// debits of the dataset's ledger (same transaction, caps and audit chain as queries), priced from
// the declared (q, z, delta, steps) by server/training/step_pricing.h.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/engine/training_engine.h"
#include "server/query/privacy_units.h"
#include "server/store/postgres/migrator.h"
#include "server/store/training_store.h"
#include "server/training/step_pricing.h"
#include "tests/db/engine_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::engine {
namespace {

using ::dpq::testing::DelU;
using ::dpq::testing::EpsU;
using ::dpq::testing::IsOk;
using ::dpq::testing::StatusIs;
using ::testing::HasSubstr;
namespace acc = dp::accounting;

constexpr double kQ = 0.01;
constexpr double kZ = 1.1;
constexpr double kRunDelta = 1e-6;

class TrainingLedgerTest : public dpq::testing::EngineTest {
 protected:
  TrainingLedgerTest() : EngineTest(16) {}

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(alice_, CreatePrincipal("alice"));
    ASSERT_OK_AND_ASSIGN(bob_, CreatePrincipal("bob"));
    ASSERT_OK_AND_ASSIGN(auto created, CreateTinyDataset("digits"));
    ds_ = created.schema.population_id;
    ASSERT_OK(principals_->Grant("alice", "digits"));
    ASSERT_OK(principals_->Grant("bob", "digits"));
    runs_ = std::make_unique<store::TrainingStore>(db());
    training_ = std::make_unique<TrainingEngine>(engine_.get(), ledger_.get(), runs_.get(), &rng_);
  }

  absl::StatusOr<TrainingRunStatus> Start(const std::string& name, const store::Principal& who) {
    TrainingRunRequest r;
    r.dataset = "digits";
    r.name = name;
    r.sampling_rate = kQ;
    r.noise_multiplier = kZ;
    r.delta = kRunDelta;
    return training_->StartRun(who, r);
  }

  // What the ledger records, to compare before and after a refused report.
  std::string LedgerRow() {
    return Sql(
        absl::StrCat("SELECT epsilon_spent_units, delta_spent_units, audit_head_seq, "
                     "md5(accountant_state) FROM ledgers WHERE population_id = ",
                     ds_));
  }
  std::string AuditRows() { return Sql("SELECT count(*) FROM audit"); }

  store::Principal alice_, bob_;
  int64_t ds_ = 0;
  std::unique_ptr<store::TrainingStore> runs_;
  std::unique_ptr<TrainingEngine> training_;
};

// The rdp ledger composes the steps: after K reports (of any sizes) its spent epsilon is the RDP
// price of all K steps at the dataset's delta, rounded up to one 1e-12 unit, as for one report.
TEST_F(TrainingLedgerTest, RdpLedgerAfterReportsEqualsTheAccountantsPriceOfAllSteps) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-5), "rdp").status());
  ASSERT_OK(Start("mnist", alice_).status());
  int64_t steps = 0;
  for (int k : {1, 1, 1, 7, 40, 150}) {
    ASSERT_OK_AND_ASSIGN(StepReportOutcome out, training_->ReportSteps(alice_, "", "mnist", k, ""));
    EXPECT_FALSE(out.replayed);
    steps += k;
  }
  ASSERT_OK_AND_ASSIGN(auto reference, acc::CreateAccountant("rdp"));
  ASSERT_OK(reference->Compose(acc::PrivacyEvent::PoissonSubsampledGaussian(kQ, kZ, steps)));
  ASSERT_OK_AND_ASSIGN(double eps, reference->Epsilon(query::MechanismDelta(DelU(1e-5))));
  ASSERT_OK_AND_ASSIGN(store::BudgetState b, ledger_->Get(ds_));
  EXPECT_GE(b.epsilon_spent(), eps);
  EXPECT_NEAR(b.epsilon_spent(), eps, 2e-12);
  EXPECT_EQ(b.delta_spent_units, DelU(1e-5));

  ASSERT_OK_AND_ASSIGN(TrainingRunStatus s, training_->GetRun(alice_, "", "mnist"));
  EXPECT_EQ(s.progress.steps, steps);
  EXPECT_EQ(s.progress.reports, 6);
  // The run's own epsilon: the RDP price of its steps at the run's delta.
  ASSERT_OK_AND_ASSIGN(double run_eps, training::RunEpsilon(dp::accounting::AccountantKind::kRdp,
                                                            {kQ, kZ, kRunDelta}, steps));
  EXPECT_DOUBLE_EQ(s.epsilon, run_eps);
  // The chain verifies, recomputing the accountant state from the reports' events.
  ASSERT_OK_AND_ASSIGN(auto v, ledger_->Verify(ds_));
  EXPECT_TRUE(v.ok) << v.reason;
}

// A pld ledger charges each report as one (epsilon, delta) event priced min(RDP, PLD): here PLD,
// below the RDP price of the same steps. Basic composition of the reports gives the ledger figure.
TEST_F(TrainingLedgerTest, PldLedgerChargesEachReportAtItsPldPrice) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(3), DelU(1e-5), "pld").status());
  ASSERT_OK(Start("cifar", alice_).status());
  ASSERT_OK_AND_ASSIGN(StepReportOutcome a,
                       training_->ReportSteps(alice_, "digits", "cifar", 300, ""));
  ASSERT_OK_AND_ASSIGN(StepReportOutcome b,
                       training_->ReportSteps(alice_, "digits", "cifar", 300, ""));
  EXPECT_EQ(a.allocation.mechanism, "dp-sgd/pld");
  EXPECT_EQ(a.allocation.epsilon_units, b.allocation.epsilon_units);
  ASSERT_OK_AND_ASSIGN(
      auto pld, acc::PriceEvents("pld", query::MechanismDelta(DelU(kRunDelta)),
                                 {acc::PrivacyEvent::PoissonSubsampledGaussian(kQ, kZ, 300)}));
  ASSERT_OK_AND_ASSIGN(
      auto rdp, acc::PriceEvents("rdp", query::MechanismDelta(DelU(kRunDelta)),
                                 {acc::PrivacyEvent::PoissonSubsampledGaussian(kQ, kZ, 300)}));
  EXPECT_NEAR(a.allocation.epsilon(), pld.epsilon, 2e-12);
  EXPECT_LT(a.allocation.epsilon(), rdp.epsilon);
  // The ledger (an RDP filter holding two approx events) spends their sum of epsilons.
  ASSERT_OK_AND_ASSIGN(store::BudgetState spent, ledger_->Get(ds_));
  EXPECT_NEAR(spent.epsilon_spent(), 2 * a.allocation.epsilon(), 2e-12);
  ASSERT_OK_AND_ASSIGN(TrainingRunStatus s, training_->GetRun(alice_, "", "cifar"));
  EXPECT_EQ(s.progress.steps, 600);
  EXPECT_NEAR(s.epsilon, 2 * a.allocation.epsilon(), 1e-11);
  // steps_left (to 1 % on a pld ledger): a report of that many fits, 2 % more does not.
  ASSERT_GT(s.steps_left, 0);
  const std::string before = LedgerRow();
  EXPECT_THAT(training_->ReportSteps(alice_, "", "cifar", s.steps_left * 102 / 100 + 1, ""),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(LedgerRow(), before);
  EXPECT_OK(training_->ReportSteps(alice_, "", "cifar", s.steps_left, "").status());
}

// Every ledger accountant takes reports, and its audit chain and state verify afterwards.
TEST_F(TrainingLedgerTest, EveryAccountantChargesAndVerifies) {
  for (const char* accountant : {"basic", "advanced", "rdp", "zcdp", "pld"}) {
    SCOPED_TRACE(accountant);
    const std::string dataset = absl::StrCat("ds_", accountant);
    ASSERT_OK_AND_ASSIGN(auto created, CreateTinyDataset(dataset));
    // zcdp charges each step as the full Gaussian (no amplification): 40 steps cost ~45.
    ASSERT_OK(
        ledger_->Set(created.schema.population_id, EpsU(200), DelU(1e-4), accountant).status());
    TrainingRunRequest r{dataset, absl::StrCat("run-", accountant), kQ, kZ, kRunDelta};
    ASSERT_OK(principals_->Grant("alice", dataset));
    ASSERT_OK(training_->StartRun(alice_, r).status());
    ASSERT_OK(training_->ReportSteps(alice_, dataset, r.name, 20, "").status());
    ASSERT_OK_AND_ASSIGN(StepReportOutcome out, training_->ReportSteps(alice_, "", r.name, 20, ""));
    EXPECT_EQ(out.status.progress.steps, 40);
    EXPECT_GT(out.status.epsilon, 0);
    ASSERT_OK_AND_ASSIGN(store::BudgetState b, ledger_->Get(created.schema.population_id));
    EXPECT_GT(b.epsilon_spent_units, 0);
    ASSERT_OK_AND_ASSIGN(auto v, ledger_->Verify(created.schema.population_id));
    EXPECT_TRUE(v.ok) << v.reason;
  }
}

TEST_F(TrainingLedgerTest, BasicLedgerAddsTheReportsChargesExactly) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-4)).status());
  ASSERT_OK(Start("basic-run", alice_).status());
  ASSERT_OK_AND_ASSIGN(StepReportOutcome a,
                       training_->ReportSteps(alice_, "", "basic-run", 100, ""));
  ASSERT_OK_AND_ASSIGN(StepReportOutcome b,
                       training_->ReportSteps(alice_, "", "basic-run", 50, ""));
  ASSERT_OK_AND_ASSIGN(store::BudgetState spent, ledger_->Get(ds_));
  EXPECT_EQ(spent.epsilon_spent_units, a.allocation.epsilon_units + b.allocation.epsilon_units);
  EXPECT_EQ(spent.delta_spent_units, 2 * DelU(kRunDelta));
}

// Concurrent reports (one trainer per thread, several runs) go through the group commit: every
// committed step is counted once and the rdp ledger equals the price of all steps together.
TEST_F(TrainingLedgerTest, ConcurrentReportsAreEachChargedOnce) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-5), "rdp").status());
  constexpr int kThreads = 6, kReports = 5, kSteps = 3;
  for (int t = 0; t < kThreads; ++t) ASSERT_OK(Start(absl::StrCat("par-", t), alice_).status());
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kReports; ++r) {
        // Explicit ids: the engine's id generator is not shared across threads here.
        auto out = training_->ReportSteps(alice_, "", absl::StrCat("par-", t), kSteps,
                                          absl::StrCat("par-", t, "-", r));
        if (!out.ok()) failures[t] = out.status();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_OK(f);
  ASSERT_OK_AND_ASSIGN(auto reference, acc::CreateAccountant("rdp"));
  ASSERT_OK(reference->Compose(
      acc::PrivacyEvent::PoissonSubsampledGaussian(kQ, kZ, kThreads * kReports * kSteps)));
  ASSERT_OK_AND_ASSIGN(double eps, reference->Epsilon(query::MechanismDelta(DelU(1e-5))));
  ASSERT_OK_AND_ASSIGN(store::BudgetState b, ledger_->Get(ds_));
  EXPECT_NEAR(b.epsilon_spent(), eps, 2e-12);
  EXPECT_GE(b.epsilon_spent(), eps);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_OK_AND_ASSIGN(TrainingRunStatus s,
                         training_->GetRun(alice_, "", absl::StrCat("par-", t)));
    EXPECT_EQ(s.progress.steps, kReports * kSteps);
  }
  ASSERT_OK_AND_ASSIGN(auto v, ledger_->Verify(ds_));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.entries, kThreads * kReports);
}

// An overspending report is refused with RESOURCE_EXHAUSTED and writes nothing: ledger, accountant
// state, chain head and audit rows are as before. steps_left is exactly the boundary on rdp.
TEST_F(TrainingLedgerTest, OverspendingReportChargesNothing) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(1), DelU(1e-5), "rdp").status());
  ASSERT_OK(Start("big", alice_).status());
  ASSERT_OK(training_->ReportSteps(alice_, "", "big", 100, "").status());
  ASSERT_OK_AND_ASSIGN(TrainingRunStatus s, training_->GetRun(alice_, "", "big"));
  ASSERT_GT(s.steps_left, 0);
  const std::string ledger_before = LedgerRow();
  const std::string audit_before = AuditRows();
  EXPECT_THAT(training_->ReportSteps(alice_, "", "big", s.steps_left + 1, "over-1"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("budget")));
  EXPECT_EQ(LedgerRow(), ledger_before);
  EXPECT_EQ(AuditRows(), audit_before);
  ASSERT_OK_AND_ASSIGN(TrainingRunStatus after, training_->GetRun(alice_, "", "big"));
  EXPECT_EQ(after.progress.steps, 100);
  // The refused id was not consumed; exactly steps_left more steps still fit.
  ASSERT_OK(training_->ReportSteps(alice_, "", "big", s.steps_left, "over-1").status());
  EXPECT_THAT(training_->ReportSteps(alice_, "", "big", 1, ""),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

// Decision (docs/decisions.md): a report's request id makes it idempotent. The same id and step
// count replays (charged once); the same id with another step count is ALREADY_EXISTS.
TEST_F(TrainingLedgerTest, RetriedReportWithRequestIdIsChargedOnce) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-5), "rdp").status());
  ASSERT_OK(Start("retry", alice_).status());
  ASSERT_OK_AND_ASSIGN(StepReportOutcome first,
                       training_->ReportSteps(alice_, "", "retry", 25, "r-1"));
  const std::string ledger_after_first = LedgerRow();
  ASSERT_OK_AND_ASSIGN(StepReportOutcome again,
                       training_->ReportSteps(alice_, "", "retry", 25, "r-1"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.allocation.seq, first.allocation.seq);
  EXPECT_EQ(again.status.progress.steps, 25);
  EXPECT_EQ(LedgerRow(), ledger_after_first);
  EXPECT_THAT(training_->ReportSteps(alice_, "", "retry", 26, "r-1"),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(LedgerRow(), ledger_after_first);
}

TEST_F(TrainingLedgerTest, AnalystCapAppliesToReports) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-4)).status());
  ASSERT_OK(principals_->Grant("alice", "digits", EpsU(0.5)));
  ASSERT_OK(Start("capped", alice_).status());
  ASSERT_OK_AND_ASSIGN(TrainingRunStatus s, training_->GetRun(alice_, "", "capped"));
  ASSERT_GT(s.steps_left, 0);
  const std::string before = LedgerRow();
  EXPECT_THAT(training_->ReportSteps(alice_, "", "capped", 2 * s.steps_left + 10, ""),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("cap")));
  EXPECT_EQ(LedgerRow(), before);
  EXPECT_OK(training_->ReportSteps(alice_, "", "capped", s.steps_left, "").status());
}

TEST_F(TrainingLedgerTest, OnlyTheOwnerOrAnAdminUsesARun) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-5), "rdp").status());
  ASSERT_OK(Start("alices", alice_).status());
  EXPECT_THAT(training_->ReportSteps(bob_, "", "alices", 1, ""),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(training_->GetRun(bob_, "", "alices"), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(Start("alices", bob_), StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK_AND_ASSIGN(store::Principal stranger, CreatePrincipal("stranger"));
  EXPECT_THAT(Start("strangers", stranger), StatusIs(absl::StatusCode::kPermissionDenied));
  ASSERT_OK_AND_ASSIGN(store::Principal admin, CreatePrincipal("root", store::Role::kAdmin));
  EXPECT_OK(training_->GetRun(admin, "", "alices").status());
  EXPECT_THAT(training_->GetRun(alice_, "", "nope"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(training_->GetRun(alice_, "other", "alices"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto mine, training_->ListRuns(bob_, "digits"));
  EXPECT_TRUE(mine.empty());
  EXPECT_EQ(Sql("SELECT count(*) FROM audit"), Sql("SELECT 0"));
}

TEST_F(TrainingLedgerTest, BadDeclarationsAreRefusedNamingTheField) {
  TrainingRunRequest r;
  r.dataset = "digits";
  r.name = "bad";
  r.sampling_rate = 1.5;
  r.noise_multiplier = 1;
  r.delta = 1e-5;
  EXPECT_THAT(training_->StartRun(alice_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sampling_rate")));
  r.sampling_rate = 0.01;
  r.name = "bad name";
  EXPECT_THAT(training_->StartRun(alice_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("run")));
  r.name = "bad";
  r.target_epsilon = 1;
  EXPECT_THAT(training_->StartRun(alice_, r), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Sql("SELECT count(*) FROM training_runs"), Sql("SELECT 0"));
}

// A public lookup table has no privacy unit and no ledger: a run on it is refused like a query of
// it alone, before anything is written.
TEST_F(TrainingLedgerTest, ARunOnAPublicTableIsRefusedAndWritesNothing) {
  query::DatasetSchema regions;
  regions.name = "regions";
  regions.is_public = true;
  regions.columns = {{"code", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  ASSERT_OK(CreateFromCsv(regions, "code\nn\n").status());
  TrainingRunRequest r;
  r.dataset = "regions";
  r.name = "lookup";
  r.sampling_rate = kQ;
  r.noise_multiplier = kZ;
  r.delta = kRunDelta;
  EXPECT_THAT(training_->StartRun(alice_, r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("public table")));
  EXPECT_EQ(Sql("SELECT count(*) FROM training_runs"), Sql("SELECT 0"));
  EXPECT_EQ(AuditRows(), Sql("SELECT 0"));
}

// `--target-epsilon E --steps N`: z is calibrated so that one report of N steps costs at most E
// on this ledger (here rdp), and a larger z than a looser target's.
TEST_F(TrainingLedgerTest, CalibratedRunMeetsItsTarget) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(50), DelU(1e-5), "rdp").status());
  TrainingRunRequest r;
  r.dataset = "digits";
  r.name = "calibrated";
  r.sampling_rate = kQ;
  r.delta = kRunDelta;
  r.target_epsilon = 2;
  r.steps = 1000;
  ASSERT_OK_AND_ASSIGN(TrainingRunStatus s, training_->StartRun(alice_, r));
  EXPECT_GT(s.run.noise_multiplier, 0.5);
  ASSERT_OK_AND_ASSIGN(StepReportOutcome out,
                       training_->ReportSteps(alice_, "", "calibrated", 1000, ""));
  EXPECT_LE(out.status.epsilon, 2.0);
  EXPECT_GT(out.status.epsilon, 1.99);
}

// A report whose deadline passes while it is priced is refused before the debit: nothing charged.
TEST_F(TrainingLedgerTest, ReportPastItsDeadlineChargesNothing) {
  ASSERT_OK(ledger_->Set(ds_, EpsU(5), DelU(1e-5), "pld").status());
  ASSERT_OK(Start("late", alice_).status());
  const std::string before = LedgerRow();
  EXPECT_THAT(training_->ReportSteps(alice_, "", "late", 100, "late-1", absl::Now()),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("nothing was charged")));
  EXPECT_EQ(LedgerRow(), before);
  EXPECT_EQ(AuditRows(), Sql("SELECT 0"));
  EXPECT_THAT(training_->GetRun(alice_, "", "late", absl::Now()),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

// Training runs are not readable by the scan role (docs/database-roles.md).
TEST_F(TrainingLedgerTest, ScanRoleCannotReadTrainingRuns) {
  auto r = TrySql("SET ROLE dpq_scan; SELECT count(*) FROM training_runs");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("permission denied"));
}

}  // namespace
}  // namespace dpq::engine
