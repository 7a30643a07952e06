// dpq's store behind PgBouncer (Debian's pgbouncer 1.18), a real pooler on loopback.
// Session pooling carries the whole query path; transaction pooling cannot, because dpqd pins
// settings per session and keeps named prepared statements per session (docs/scaling.md says why
// that is the right trade and what would change with PgBouncer >= 1.21). The second test pins that
// limitation down, so that the documentation changes when it does.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/base/status_macros.h"
#include "server/dp/testing/seeded_random.h"
#include "server/engine/query_engine.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/postgres/process.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::IsOk;
using ::dpq::testing::TempDir;

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A pgbouncer daemon on 127.0.0.1 in front of one cluster's unix socket, trusting user postgres.
// PgBouncer refuses to run as root, so as root it runs as the cluster's user, postgres.
class PgBouncer {
 public:
  static absl::StatusOr<std::unique_ptr<PgBouncer>> Start(const std::string& server_socket_dir,
                                                          const std::string& pool_mode,
                                                          int server_connections) {
    std::unique_ptr<PgBouncer> b(new PgBouncer());
    ASSIGN_OR_RETURN(b->dir_, TempDir::Create("dpq-pgbouncer-"));
    b->port_ = FreeLoopbackPort();
    const std::string dir = b->dir_->path();
    RETURN_IF_ERROR(b->dir_->WriteFile("users.txt", "\"postgres\" \"\"\n"));
    RETURN_IF_ERROR(b->dir_->WriteFile(
        "pgbouncer.ini",
        absl::StrCat("[databases]\n* = host=", server_socket_dir, " port=5432 user=postgres\n\n",
                     "[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = ", b->port_,
                     "\nunix_socket_dir =\nauth_type = trust\nauth_file = ", dir,
                     "/users.txt\npool_mode = ", pool_mode,
                     "\ndefault_pool_size = ", server_connections,
                     "\nmax_client_conn = 50\n"
                     "ignore_startup_parameters = options\nlogfile = ",
                     dir, "/pgbouncer.log\npidfile = ", dir, "/pgbouncer.pid\n")));
    absl::optional<RunAsUser> as;
    if (geteuid() == 0) {
      ASSIGN_OR_RETURN(RunAsUser postgres, LookUpUser("postgres"));
      if (chown(dir.c_str(), postgres.uid, postgres.gid) != 0) {
        return absl::InternalError(absl::StrCat("cannot chown ", dir));
      }
      for (const char* f : {"users.txt", "pgbouncer.ini"}) {
        const std::string path = absl::StrCat(dir, "/", f);
        if (chown(path.c_str(), postgres.uid, postgres.gid) != 0) {
          return absl::InternalError(absl::StrCat("cannot chown ", path));
        }
      }
      as = std::move(postgres);
    }
    ASSIGN_OR_RETURN(ProcessResult r,
                     RunProcess({"/usr/sbin/pgbouncer", "-d", dir + "/pgbouncer.ini"}, as));
    if (r.exit_code != 0) {
      return absl::InternalError(
          absl::StrCat("pgbouncer failed (exit ", r.exit_code, "): ", r.output));
    }
    b->started_ = true;
    // -d returns once daemonised; wait for the port.
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!::dpq::testing::TestPostgres::RunPsql(b->url("postgres"), "SELECT 1").ok()) {
      if (absl::Now() > give_up) return absl::UnavailableError("pgbouncer did not start listening");
      absl::SleepFor(absl::Milliseconds(50));
    }
    return b;
  }

  ~PgBouncer() {
    if (!started_) return;
    std::ifstream pid_file(dir_->path() + "/pgbouncer.pid");
    pid_t pid = 0;
    if (pid_file >> pid && pid > 0) {
      kill(pid, SIGINT);  // immediate shutdown
      for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) absl::SleepFor(absl::Milliseconds(20));
    }
  }

  std::string url(const std::string& database) const {
    return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", database);
  }

 private:
  PgBouncer() = default;
  std::unique_ptr<TempDir> dir_;
  int port_ = 0;
  bool started_ = false;
};

class ConnectionPoolerTest : public ::dpq::testing::StoreTest {};

// The whole query path through PgBouncer in session mode, with two server connections for all the
// clients: one for dpqd's pool, one for the scan pool beside it (scan_session.h), each used by one
// caller at a time. A session-mode pooler lends a server connection to a client for the client's
// whole session, so it needs as many as dpqd holds sessions open: dataset load (COPY), grants, a query (plan, debit with its audit row, scan under
// the scan role, release), its replay, and audit verification.
TEST_F(ConnectionPoolerTest, SessionModeCarriesTheWholeQueryPath) {
  ASSERT_OK_AND_ASSIGN(auto bouncer, PgBouncer::Start(pg_->server().socket_dir(), "session", 2));
  ASSERT_OK_AND_ASSIGN(auto pooled, Database::Open(bouncer->url(database()), 4));
  DatasetStore datasets(pooled.get());
  PrincipalStore principals(pooled.get());
  BudgetLedger ledger(pooled.get());
  AggregateScanner scanner(pooled.get());
  ResultCache cache(pooled.get());
  dp::SeededRandom rng(11);
  engine::QueryEngine engine({&datasets, &principals, &ledger, &scanner, &cache}, &rng);

  query::DatasetSchema schema;
  schema.name = "people";
  schema.privacy_unit = "uid";
  schema.columns = {{"uid", query::ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                    {"x", query::ColumnType::kDouble, 0.0, 10.0, {}}};
  std::string csv = "uid,x\n";
  for (int i = 1; i <= 30; ++i) absl::StrAppend(&csv, i, ",", i % 10, ".5\n");
  ASSERT_OK_AND_ASSIGN(CreatedDataset ds, datasets.Create(schema, CsvSource(schema, csv, 64)));
  ASSERT_THAT(ledger.Set(ds.schema.population_id, ::dpq::testing::EpsU(2e6), 0), IsOk());
  ASSERT_OK_AND_ASSIGN(Principal ann, principals.Create("ann", Role::kAnalyst, Sha256("t-ann")));
  ASSERT_OK(principals.Grant("ann", "people"));

  query::QuerySpec sum;
  sum.dataset = "people";
  sum.aggregate = query::AggregateKind::kSum;
  sum.column = "x";
  sum.epsilon = 1e6;  // near-exact: the pooled path computes the same statistic
  ASSERT_OK_AND_ASSIGN(engine::QueryOutcome first, engine.Run(ann, sum, "via-bouncer"));
  ASSERT_EQ(first.rows.size(), 1u);
  EXPECT_NEAR(first.rows[0].value, 3 * (0.5 + 1.5 + 2.5 + 3.5 + 4.5 + 5.5 + 6.5 + 7.5 + 8.5 + 9.5),
              1e-3);
  ASSERT_OK_AND_ASSIGN(engine::QueryOutcome again, engine.Run(ann, sum, "via-bouncer"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.rows[0].value, first.rows[0].value);
  ASSERT_OK_AND_ASSIGN(BudgetState budget, ledger.Get(ds.schema.population_id));
  EXPECT_EQ(budget.epsilon_spent_units, ::dpq::testing::EpsU(1e6)) << "charged once";
  ASSERT_OK_AND_ASSIGN(BudgetLedger::Verification verified, ledger.Verify(ds.schema.population_id));
  EXPECT_TRUE(verified.ok) << verified.reason;
}

// Transaction pooling hands each transaction whichever server session is free. dpqd's ledger
// prepares its statements by name once per session, so a second client reaching the same server
// session meets a statement of that name already prepared (or a session without the one it
// prepared): the debit fails, cleanly and without a charge, instead of running with unpinned
// settings. PgBouncer 1.18 (bookworm) has no prepared-statement tracking (1.21 added it).
TEST_F(ConnectionPoolerTest, TransactionModeBreaksPerSessionPreparedStatements) {
  ASSERT_OK_AND_ASSIGN(auto dataset, CreateTinyDataset("tiny", 5));
  ASSERT_THAT(BudgetLedger(db()).Set(dataset.schema.population_id, ::dpq::testing::EpsU(10), 0),
              IsOk());
  ASSERT_OK_AND_ASSIGN(Principal ann, CreatePrincipal("ann"));
  ASSERT_OK_AND_ASSIGN(auto bouncer,
                       PgBouncer::Start(pg_->server().socket_dir(), "transaction", 1));
  ASSERT_OK_AND_ASSIGN(auto client_a, Database::Open(bouncer->url(database()), 1));
  ASSERT_OK_AND_ASSIGN(auto client_b, Database::Open(bouncer->url(database()), 1));
  BudgetLedger ledger_a(client_a.get()), ledger_b(client_b.get());
  auto first =
      ledger_a.Debit(dataset.schema.population_id, ::dpq::testing::SumAllocation(ann, "a-1", 1));
  auto second =
      ledger_b.Debit(dataset.schema.population_id, ::dpq::testing::SumAllocation(ann, "b-1", 1));
  EXPECT_TRUE(!first.ok() || !second.ok())
      << "both debits succeeded through transaction pooling: update docs/scaling.md";
  const absl::Status failed = first.ok() ? second.status() : first.status();
  EXPECT_THAT(std::string(failed.message()), ::testing::HasSubstr("prepared statement")) << failed;
  RecordProperty("failure", std::string(failed.message()));
  // Whatever failed charged nothing: the ledger shows only the debits that committed.
  const int64_t committed = (first.ok() ? 1 : 0) + (second.ok() ? 1 : 0);
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT epsilon_spent_units = ", committed, " * ", ::dpq::testing::EpsU(1),
                       " FROM ledgers WHERE population_id = ", dataset.schema.population_id)),
      "t");
}

}  // namespace
}  // namespace dpq::store
