// Audit verification streamed and incremental (BudgetLedger::Verify, AdminLog::Verify): memory
// that does not grow with the history, checkpoints that make a later run read only the rows
// appended since, and the tampering each kind of run catches (and the one an incremental run
// cannot: a rewritten row before its checkpoint, left to the full run).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/sha256.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/store/admin_log.h"
#include "server/store/audit_chain.h"
#include "server/store/budget_ledger.h"
#include "tests/db/ledger_test_env.h"
#include "tests/support/status_matchers.h"

#if defined(__SANITIZE_ADDRESS__)
#define DPQ_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DPQ_TEST_ASAN 1
#endif
#endif
#ifdef DPQ_TEST_ASAN
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::SumAllocation;
using ::testing::HasSubstr;

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), -1 if absent.
int64_t StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// Resets VmHWM to the current RSS (proc(5), clear_refs "5"), so the next VmHWM is the peak of
// what runs after this call only.
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

std::string CopyBytea(const std::string& bytes) { return absl::StrCat("\\\\x", ToHex(bytes)); }
std::string CopyDouble(double v) { return absl::StrFormat("%.17g", v); }

class AuditVerifyTest : public ::dpq::testing::LedgerTest {
 protected:
  // `n` debits of epsilon 0.01 with request ids prefix-1 .. prefix-n.
  void Debit(int64_t ds, int n, const std::string& prefix, const std::string& events = "") {
    for (int i = 1; i <= n; ++i) {
      Allocation a = SumAllocation(analyst_, absl::StrCat(prefix, "-", i), 0.01);
      a.events = events;
      ASSERT_THAT(ledger_->Debit(ds, a), IsOk());
    }
  }

  BudgetLedger::Verification Verify(int64_t ds, bool full) {
    BudgetLedger::VerifyOptions options;
    options.full = full;
    auto v = ledger_->Verify(ds, options);
    EXPECT_THAT(v, IsOk());
    return v.ok() ? *v : BudgetLedger::Verification();
  }

  // Runs `sql` on the audit table with its append-only trigger off, as its owner could.
  void AsOwner(const std::string& sql) {
    Sql(absl::StrCat("ALTER TABLE audit DISABLE TRIGGER audit_append_only; ", sql,
                     "; ALTER TABLE audit ENABLE TRIGGER audit_append_only"));
  }

  // Appends `n` valid rows to the (empty) chain of `ds` in bulk: hashed by the real chain code,
  // written as COPY text streamed to a file (this process never holds them) and loaded by psql;
  // then points the ledger's head and spent at them, as n debits would have.
  void BulkChain(int64_t ds, int64_t n) {
    const std::string path = absl::StrCat(::testing::TempDir(), "/audit_bulk_", getpid(), ".copy");
    std::string prev = GenesisHash();
    int64_t spent = 0;
    {
      std::ofstream out(path);
      // A row as large as a grouped query's: a long fingerprint and a result of a few groups.
      const std::string result(400, 'r');
      for (int64_t seq = 1; seq <= n; ++seq) {
        Allocation a =
            SumAllocation(analyst_, absl::StrFormat("bulk-%08d-0000-4000-8000-000000000000", seq),
                          0.001, 0, absl::StrCat(std::string(120, 'f'), seq));
        a.seq = seq;
        a.dataset_version = 1;
        a.result = result;
        a.prev_hash = prev;
        a.hash = ChainHash(prev, ds, a);
        out << ds << '\t' << seq << '\t' << a.request_id << '\t' << a.principal_id << '\t'
            << a.analyst << '\t' << a.fingerprint << '\t' << a.aggregate << '\t' << a.column << '\t'
            << a.mechanism << '\t' << a.epsilon_units << '\t' << a.delta_units << '\t'
            << CopyDouble(a.sensitivity) << '\t' << CopyDouble(a.noise_scale) << '\t'
            << CopyDouble(a.count_noise_scale) << '\t' << CopyDouble(a.value) << '\t'
            << CopyDouble(a.confidence) << '\t' << CopyDouble(a.ci_lower) << '\t'
            << CopyDouble(a.ci_upper) << '\t' << CopyDouble(*a.clamp_lower) << '\t'
            << CopyDouble(*a.clamp_upper) << '\t' << a.max_contributions << '\t'
            << CopyBytea(a.prev_hash) << '\t' << CopyBytea(a.hash) << '\t' << a.events << '\t'
            << a.dataset_version << '\t' << a.result << "\tf\n";
        prev = a.hash;
        spent += a.epsilon_units;
      }
    }
    Sql(absl::StrCat(
        "\\copy audit (population_id, seq, request_id, principal_id, analyst, fingerprint, aggregate, "
        "column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
        "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
        "max_contributions, prev_hash, hash, events, dataset_version, result, release_deferred) FROM '",
        path, "'"));
    std::remove(path.c_str());
    Sql(absl::StrCat("UPDATE ledgers SET epsilon_spent_units = ", spent, ", audit_head_seq = ", n,
                     ", audit_head_hash = '\\x", ToHex(prev), "' WHERE population_id = ", ds));
  }
};

TEST_F(AuditVerifyTest, ASecondRunReadsOnlyTheRowsAppendedSinceTheCheckpoint) {
  const int64_t ds = NewDataset("inc", 10);
  Debit(ds, 10, "a");
  // No checkpoint yet: an incremental run reads the whole chain, and leaves a checkpoint.
  BudgetLedger::Verification v = Verify(ds, /*full=*/false);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_TRUE(v.full);
  EXPECT_EQ(v.rows_read, 10);
  EXPECT_EQ(v.checkpoint_seq, 0);
  EXPECT_EQ(Sql(absl::StrCat("SELECT seq FROM audit_verified WHERE population_id = ", ds)), "10");

  Debit(ds, 5, "b");
  v = Verify(ds, /*full=*/false);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_FALSE(v.full);
  EXPECT_EQ(v.checkpoint_seq, 10);
  EXPECT_EQ(v.rows_read, 6);  // the checkpoint row, then the 5 new rows
  EXPECT_EQ(v.entries, 15);
  EXPECT_EQ(v.epsilon_spent_recomputed_units, dpq::testing::EpsU(0.15));
  EXPECT_EQ(v.epsilon_spent_recomputed_units, v.epsilon_spent_ledger_units);

  v = Verify(ds, /*full=*/false);  // nothing new: the checkpoint row alone
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.rows_read, 1);

  v = Verify(ds, /*full=*/true);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_TRUE(v.full);
  EXPECT_EQ(v.rows_read, 15);
  EXPECT_EQ(v.checkpoint_seq, 15);
}

TEST_F(AuditVerifyTest, ARewrittenRowBeforeTheCheckpointIsCaughtByTheFullRun) {
  const int64_t ds = NewDataset("before", 10);
  Debit(ds, 10, "a");
  ASSERT_TRUE(Verify(ds, /*full=*/false).ok);
  AsOwner(absl::StrCat("UPDATE audit SET epsilon_units = 1 WHERE population_id = ", ds,
                       " AND seq = 3"));
  Debit(ds, 2, "b");
  // The incremental run reads the checkpoint row and the 2 new rows only: it cannot see row 3.
  BudgetLedger::Verification v = Verify(ds, /*full=*/false);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.rows_read, 3);
  // The full run reads every row.
  v = Verify(ds, /*full=*/true);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 3);
  EXPECT_THAT(v.reason, HasSubstr("altered"));
  EXPECT_EQ(v.rows_read, 12);
  // A failed run leaves the checkpoint where the last good one put it.
  EXPECT_EQ(Sql(absl::StrCat("SELECT seq FROM audit_verified WHERE population_id = ", ds)), "12");
}

TEST_F(AuditVerifyTest, ARewrittenRowAfterTheCheckpointIsCaughtByTheIncrementalRun) {
  const int64_t ds = NewDataset("after", 10);
  Debit(ds, 10, "a");
  ASSERT_TRUE(Verify(ds, /*full=*/false).ok);
  Debit(ds, 5, "b");
  AsOwner(absl::StrCat("UPDATE audit SET analyst = 'mallory' WHERE population_id = ", ds,
                       " AND seq = 12"));
  BudgetLedger::Verification v = Verify(ds, /*full=*/false);
  EXPECT_FALSE(v.ok);
  EXPECT_FALSE(v.full);
  EXPECT_EQ(v.first_broken_seq, 12);
  EXPECT_THAT(v.reason, HasSubstr("altered"));
  EXPECT_EQ(v.rows_read, 6);
}

TEST_F(AuditVerifyTest, TheCheckpointRowItselfMustStillHoldItsHash) {
  const int64_t ds = NewDataset("cprow", 10);
  Debit(ds, 6, "a");
  ASSERT_TRUE(Verify(ds, /*full=*/false).ok);
  // The owner rewrites row 6 and makes its hash (and the ledger head) agree with the new content:
  // the chain from genesis is self-consistent again, but not the one that was verified.
  ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger_->ListAllocations(ds));
  Allocation forged = rows[5];
  forged.analyst = "mallory";
  forged.hash = ChainHash(forged.prev_hash, ds, forged);
  AsOwner(absl::StrCat("UPDATE audit SET analyst = 'mallory', hash = '\\x", ToHex(forged.hash),
                       "' WHERE population_id = ", ds,
                       " AND seq = 6; UPDATE ledgers SET audit_head_hash = '\\x",
                       ToHex(forged.hash), "' WHERE population_id = ", ds));
  for (bool full : {false, true}) {
    BudgetLedger::Verification v = Verify(ds, full);
    EXPECT_FALSE(v.ok) << "full=" << full;
    EXPECT_EQ(v.first_broken_seq, 6);
    EXPECT_THAT(v.reason, HasSubstr("differs from the row verified at"));
    EXPECT_TRUE(v.full);  // the incremental run went back to genesis to look for the break
  }
}

TEST_F(AuditVerifyTest, ADeletedTailIsCaughtWithAndWithoutTheLedgerHead) {
  const int64_t ds = NewDataset("tail", 10);
  Debit(ds, 8, "a");
  ASSERT_TRUE(Verify(ds, /*full=*/false).ok);
  Debit(ds, 2, "b");
  // Rows 9 and 10 (after the checkpoint) removed: the ledger head still names row 10.
  AsOwner(absl::StrCat("DELETE FROM audit WHERE population_id = ", ds, " AND seq > 8"));
  BudgetLedger::Verification v = Verify(ds, /*full=*/false);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 9);
  EXPECT_THAT(v.reason, HasSubstr("ledger head"));

  // Rows 7 and 8 too (the checkpoint row among them), and the head and spent rewound to row 6:
  // only the checkpoint still knows the chain was longer.
  ASSERT_OK_AND_ASSIGN(std::vector<Allocation> rows, ledger_->ListAllocations(ds));
  AsOwner(absl::StrCat("DELETE FROM audit WHERE population_id = ", ds,
                       " AND seq > 6; "
                       "UPDATE ledgers SET audit_head_seq = 6, audit_head_hash = '\\x",
                       ToHex(rows[5].hash), "', epsilon_spent_units = ",
                       6 * dpq::testing::EpsU(0.01), " WHERE population_id = ", ds));
  for (bool full : {false, true}) {
    v = Verify(ds, full);
    EXPECT_FALSE(v.ok) << "full=" << full;
    EXPECT_EQ(v.first_broken_seq, 7) << v.reason;
    EXPECT_THAT(v.reason, HasSubstr("removed"));
    EXPECT_EQ(v.entries, 6);
  }
}

TEST_F(AuditVerifyTest, AnRdpLedgerContinuesFromTheStoredAccountantState) {
  const int64_t ds = NewDataset("rdp", 50, 1e-6, "rdp");
  const std::string events = dp::accounting::PrivacyEvent::Gaussian(10, 1).ToSpec();
  Debit(ds, 4, "a", events);
  ASSERT_TRUE(Verify(ds, /*full=*/false).ok);
  Debit(ds, 3, "b", events);
  BudgetLedger::Verification v = Verify(ds, /*full=*/false);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_FALSE(v.full);
  EXPECT_EQ(v.rows_read, 4);
  EXPECT_EQ(v.epsilon_spent_recomputed_units, v.epsilon_spent_ledger_units);
  BudgetLedger::Verification full = Verify(ds, /*full=*/true);
  EXPECT_TRUE(full.ok) << full.reason;
  EXPECT_EQ(full.epsilon_spent_recomputed_units, v.epsilon_spent_recomputed_units);

  // A ledger state that is not the composition of the rows is caught incrementally too.
  Debit(ds, 1, "c", events);
  Sql(absl::StrCat(
      "UPDATE ledgers SET accountant_state = (SELECT accountant_state FROM audit_verified "
      "WHERE population_id = ",
      ds, ") WHERE population_id = ", ds));
  v = Verify(ds, /*full=*/false);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.rows_read, 2);
  EXPECT_THAT(v.reason, HasSubstr("accountant state"));
}

TEST_F(AuditVerifyTest, APeriodicRunGoesBackToGenesisWhenTheLastFullRunIsOld) {
  const int64_t ds = NewDataset("age", 10);
  Debit(ds, 5, "a");
  ASSERT_TRUE(Verify(ds, /*full=*/true).ok);
  BudgetLedger::VerifyOptions periodic;
  periodic.full = false;
  periodic.full_after_seconds = 86400;
  ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification v, ledger_->Verify(ds, periodic));
  EXPECT_FALSE(v.full);
  Sql(
      absl::StrCat("UPDATE audit_verified SET full_verified_at = now() - interval '2 days' "
                   "WHERE population_id = ",
                   ds));
  ASSERT_OK_AND_ASSIGN(v, ledger_->Verify(ds, periodic));
  EXPECT_TRUE(v.full);
  EXPECT_EQ(v.rows_read, 5);
  ASSERT_OK_AND_ASSIGN(v, ledger_->Verify(ds, periodic));  // that run set full_verified_at
  EXPECT_FALSE(v.full);
}

// The whole history of a large ledger never sits in memory: verifying 200,000 rows grows this
// process's peak RSS by less than 30 MB (holding them, as ListAllocations does, takes far more).
TEST_F(AuditVerifyTest, VerifyingALargeChainKeepsMemoryFlat) {
  constexpr int64_t kRows = 200000;
  const int64_t ds = NewDataset("big", 1000);
  auto t0 = std::chrono::steady_clock::now();
  BulkChain(ds, kRows);
  auto t1 = std::chrono::steady_clock::now();

  const int64_t rss_before = StatusKb("VmRSS");
  ASSERT_TRUE(ResetPeakRss()) << "cannot reset VmHWM through /proc/self/clear_refs";
  BudgetLedger::Verification v = Verify(ds, /*full=*/true);
  const int64_t peak = StatusKb("VmHWM");
  auto t2 = std::chrono::steady_clock::now();
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.rows_read, kRows);
  EXPECT_EQ(v.entries, kRows);
  const int64_t growth_kb = peak - rss_before;
  std::cout << "bulk load " << std::chrono::duration<double>(t1 - t0).count()
            << " s; full verify of " << kRows << " rows "
            << std::chrono::duration<double>(t2 - t1).count() << " s, RSS " << rss_before / 1024
            << " MB before, peak " << peak / 1024 << " MB (+" << growth_kb / 1024 << " MB)\n";
  // Under AddressSanitizer RSS measures allocation volume, not live memory: its quarantine keeps
  // freed blocks (up to 256 MB by default) out of reuse. The bound is checked by the plain build
  // and by tests/e2e/audit_verify_test.py on a real dpqd; the sanitizer build checks the rest.
  if (!kAddressSanitizer) {
    EXPECT_LT(growth_kb, 30 * 1024);
  }

  // Incremental after 5 debits: the checkpoint row and the 5 rows.
  Debit(ds, 5, "more");
  v = Verify(ds, /*full=*/false);
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.rows_read, 6);

  // The probe sees memory that does grow with the history.
  const int64_t rss_list = StatusKb("VmRSS");
  ASSERT_TRUE(ResetPeakRss());
  {
    ASSERT_OK_AND_ASSIGN(std::vector<Allocation> all, ledger_->ListAllocations(ds));
    EXPECT_EQ(all.size(), static_cast<size_t>(kRows + 5));
  }
  const int64_t list_growth_kb = StatusKb("VmHWM") - rss_list;
  std::cout << "holding the history instead: +" << list_growth_kb / 1024 << " MB\n";
  EXPECT_GT(list_growth_kb, 100 * 1024);
}

TEST_F(AuditVerifyTest, TheAdminLogIsVerifiedFromItsCheckpoint) {
  PrincipalStore principals(db());
  AdminLog log(db());
  const auto act = [&](const std::string& name) {
    const AdminAction a{"root", "analyst.create", name, "k=v"};
    ASSERT_THAT(principals.Create(name, Role::kAnalyst, Sha256(name), &a), IsOk());
  };
  for (int i = 1; i <= 6; ++i) act(absl::StrCat("a", i));
  ASSERT_OK_AND_ASSIGN(AdminLog::Verification v, log.Verify(/*full=*/false));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_TRUE(v.full);
  EXPECT_EQ(v.rows_read, 6);
  for (int i = 7; i <= 9; ++i) act(absl::StrCat("a", i));
  ASSERT_OK_AND_ASSIGN(v, log.Verify(/*full=*/false));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_FALSE(v.full);
  EXPECT_EQ(v.checkpoint_seq, 6);
  EXPECT_EQ(v.rows_read, 4);
  EXPECT_EQ(v.entries, 9);

  // Before the checkpoint (9): only the full run sees it.
  Sql("ALTER TABLE admin_log DISABLE TRIGGER admin_log_append_only; "
      "UPDATE admin_log SET target = 'someone_else' WHERE seq = 2; "
      "ALTER TABLE admin_log ENABLE TRIGGER admin_log_append_only");
  act("a10");
  ASSERT_OK_AND_ASSIGN(v, log.Verify(/*full=*/false));
  EXPECT_TRUE(v.ok) << v.reason;
  EXPECT_EQ(v.rows_read, 2);
  ASSERT_OK_AND_ASSIGN(v, log.Verify(/*full=*/true));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 2);

  // After the checkpoint (10): the incremental run sees it.
  act("a11");
  act("a12");
  Sql("ALTER TABLE admin_log DISABLE TRIGGER admin_log_append_only; "
      "UPDATE admin_log SET target = 'x' WHERE seq = 11; "
      "ALTER TABLE admin_log ENABLE TRIGGER admin_log_append_only");
  ASSERT_OK_AND_ASSIGN(v, log.Verify(/*full=*/false));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.first_broken_seq, 11);

  // A deleted tail (the admin log has no head to compare with): the checkpoint (10) remembers it.
  // (Row 2 put back as it was, so that the removal is the only damage.)
  Sql("ALTER TABLE admin_log DISABLE TRIGGER admin_log_append_only; "
      "UPDATE admin_log SET target = 'a2' WHERE seq = 2; DELETE FROM admin_log WHERE seq >= 9; "
      "ALTER TABLE admin_log ENABLE TRIGGER admin_log_append_only");
  for (bool full : {false, true}) {
    ASSERT_OK_AND_ASSIGN(v, log.Verify(full));
    EXPECT_FALSE(v.ok) << "full=" << full;
    EXPECT_THAT(v.reason, HasSubstr("removed"));
  }
}

}  // namespace
}  // namespace dpq::store
