// dpqd: the dpq server. Its flags, --help and --check-config; daemon::Server does the serving.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/base/listen_address.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/base/tls_files.h"
#include "server/daemon/server.h"
#include "server/daemon/startup_files.h"
#include "server/store/database.h"
#include "server/store/postgres/migrator.h"
#include "server/store/principal_store.h"
#include "server/store/scan_router.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7777", "gRPC listen address host:port");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464", "Prometheus /metrics listen address");
ABSL_FLAG(std::string, database_url, "",
          "libpq URL of the database; empty: run an embedded PostgreSQL under --data-dir");
ABSL_FLAG(std::string, data_dir, "./dpq-data", "directory of the embedded PostgreSQL cluster");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the bootstrap admin token (else env DPQ_ADMIN_TOKEN; no default exists)");
ABSL_FLAG(std::string, migrations_dir, "",
          "directory of NNNN_*.sql migrations; empty: the migrations built into dpqd");
ABSL_FLAG(int, db_pool_size, 8,
          "sessions in each of dpqd's two pools per database server (its own and the scan pool)");
ABSL_FLAG(std::string, read_database_url, "",
          "libpq URL of a streaming-replication hot standby of --database-url: aggregate scans run "
          "there once it has replayed the dataset, every write stays on the primary (docs/"
          "scaling.md); add connect_timeout=2 to a TCP URL so a dead host costs little");
ABSL_FLAG(int, read_lag_wait_ms, 500,
          "how long a scan waits for the read standby to replay a dataset loaded moments ago "
          "before it runs on the primary instead");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls-key enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificate(s): with --tls-cert, every client must present a certificate they "
          "signed (mutual TLS)");
ABSL_FLAG(int, max_message_mb, 16,
          "largest gRPC message accepted, MiB (larger: RESOURCE_EXHAUSTED from gRPC itself)");
ABSL_FLAG(int, max_concurrent_queries, 64,
          "queries (Query, QueryBatch) one analyst may have in flight in this dpqd; 0: unlimited");
ABSL_FLAG(
    int, max_queries_per_minute, 6000,
    "queries (Query, QueryBatch) one analyst may start in any 60 s in this dpqd; 0: unlimited");
ABSL_FLAG(int64_t, max_load_mb, 4096,
          "largest CSV upload of one dataset create or load, MiB; 0: unlimited");
ABSL_FLAG(int64_t, max_load_rows, 100000000,
          "most data rows in one dataset create or load; 0: unlimited");
ABSL_FLAG(double, health_check_seconds, 2.0,
          "how often gRPC health re-checks the database and its schema version");
ABSL_FLAG(std::string, log_format, "auto",
          "json (one object per line), text, or auto: json unless stderr is a terminal");
ABSL_FLAG(std::string, log_level, "info",
          "debug, info, warning or error; each RPC is one info line (health probes: debug)");
ABSL_FLAG(double, shutdown_grace_seconds, 10.0,
          "on SIGTERM/SIGINT: stop accepting, let calls in flight finish (their debit, scan and "
          "answer) for at most this long, then cancel the rest and exit");
ABSL_FLAG(bool, check_config, false,
          "check the flags, the TLS files and the database, print what was checked, and exit "
          "(0: all good) without serving");
ABSL_FLAG(double, audit_verify_seconds, 3600,
          "how often dpqd verifies every population's audit chain (first at start-up; 0: only "
          "when `dpqctl audit verify` asks); results in dpq_audit_verify_ok. Each pass reads only "
          "the rows appended since the last verified row (its checkpoint, kept in the database)");
ABSL_FLAG(double, audit_full_verify_seconds, 7 * 86400,
          "a pass of --audit-verify-seconds reads a population's audit chain from its first row "
          "again when the last such full verification of it (by any dpqd on the database) is older "
          "than this (0: only when `dpqctl audit verify --full` asks, or without a checkpoint)");

namespace dpq {
namespace {

using daemon::Server;

// Server::Options from the flags, each flag that can be wrong on its own checked before anything
// starts (the embedded database among it), so a bad flag is the error reported, whatever else is
// wrong. The TLS files are read later, by Server::BuildAndStart and --check-config.
absl::StatusOr<Server::Options> OptionsFromFlags() {
  Server::Options o;
  o.listen_address = absl::GetFlag(FLAGS_listen);
  o.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
           absl::GetFlag(FLAGS_tls_client_ca)};
  o.database_url = absl::GetFlag(FLAGS_database_url);
  o.data_dir = absl::GetFlag(FLAGS_data_dir);
  o.migrations_dir = absl::GetFlag(FLAGS_migrations_dir);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.admin_token_file = absl::GetFlag(FLAGS_admin_token_file);
  if (const char* env = std::getenv("DPQ_ADMIN_TOKEN")) o.admin_token_from_env = env;

  o.health_check_seconds = absl::GetFlag(FLAGS_health_check_seconds);
  if (!(o.health_check_seconds > 0 && o.health_check_seconds <= 3600)) {
    return absl::InvalidArgumentError("--health-check-seconds must lie in (0, 3600]");
  }
  o.shutdown_grace_seconds = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  if (!(o.shutdown_grace_seconds >= 0 && o.shutdown_grace_seconds <= 3600)) {
    return absl::InvalidArgumentError("--shutdown-grace-seconds must lie in [0, 3600]");
  }
  o.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  if (o.db_pool_size < 1 || o.db_pool_size > 1000) {
    return absl::InvalidArgumentError("--db-pool-size must lie in [1, 1000]");
  }
  o.audit_verify_seconds = absl::GetFlag(FLAGS_audit_verify_seconds);
  if (!(o.audit_verify_seconds >= 0 && o.audit_verify_seconds <= 7 * 86400)) {
    return absl::InvalidArgumentError("--audit-verify-seconds must lie in [0, 604800] (0: off)");
  }
  o.audit_full_verify_seconds = absl::GetFlag(FLAGS_audit_full_verify_seconds);
  if (!(o.audit_full_verify_seconds >= 0 && o.audit_full_verify_seconds <= 366 * 86400)) {
    return absl::InvalidArgumentError(
        "--audit-full-verify-seconds must lie in [0, 31622400] (0: off)");
  }
  o.read_database_url = absl::GetFlag(FLAGS_read_database_url);
  if (!o.read_database_url.empty() && o.database_url.empty()) {
    return absl::InvalidArgumentError(
        "--read-database-url needs --database-url: the standby replicates a primary that dpqd "
        "reaches by URL, not the embedded cluster");
  }
  const int lag_wait_ms = absl::GetFlag(FLAGS_read_lag_wait_ms);
  if (lag_wait_ms < 0 || lag_wait_ms > 60000) {
    return absl::InvalidArgumentError("--read-lag-wait-ms must lie in [0, 60000]");
  }
  o.scan_routing.max_lag_wait = absl::Milliseconds(lag_wait_ms);

  // The limits on what one analyst and one upload may use.
  o.admission.max_concurrent = absl::GetFlag(FLAGS_max_concurrent_queries);
  o.admission.max_per_minute = absl::GetFlag(FLAGS_max_queries_per_minute);
  const int64_t load_mb = absl::GetFlag(FLAGS_max_load_mb);
  o.upload.max_rows = absl::GetFlag(FLAGS_max_load_rows);
  o.max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (o.admission.max_concurrent < 0 || o.admission.max_per_minute < 0 || load_mb < 0 ||
      o.upload.max_rows < 0) {
    return absl::InvalidArgumentError(
        "--max-concurrent-queries, --max-queries-per-minute, --max-load-mb and --max-load-rows "
        "must be >= 0 (0: unlimited)");
  }
  if (load_mb > (int64_t{1} << 40))
    return absl::InvalidArgumentError("--max-load-mb is at most 2^40");
  if (o.max_message_mb < 1 || o.max_message_mb > 1024) {
    return absl::InvalidArgumentError("--max-message-mb must lie in [1, 1024]");
  }
  o.upload.max_bytes = load_mb << 20;
  return o;
}

// `dpqd --check-config`: what a deployment checks before it switches traffic (a Kubernetes init
// container, a systemd ExecStartPre). Nothing is created or changed: the embedded cluster is not
// started, migrations are not applied.
absl::Status CheckConfig() {
  const auto ok = [](const std::string& what) { std::printf("ok     %s\n", what.c_str()); };
  ASSIGN_OR_RETURN(const Server::Options options, OptionsFromFlags());
  ok("flags");
  const std::string& cert = options.tls.cert;
  RETURN_IF_ERROR(daemon::ServerCredentialsFromFiles(options.tls).status());
  if (cert.empty()) {
    ok(absl::StrCat(
        "plaintext on ", options.listen_address,
        IsLoopbackAddress(options.listen_address) ? " (loopback)" : " (WARNING: not loopback)"));
  } else {
    RETURN_IF_ERROR(CheckCertificateAndKey(cert, options.tls.key));
    const std::string& client_ca = options.tls.client_ca;
    if (!client_ca.empty()) RETURN_IF_ERROR(CheckCertificateFile(client_ca, "--tls-client-ca"));
    ok(absl::StrCat("TLS certificate and key", client_ca.empty() ? "" : ", client CA"));
  }
  const int binary_version =
      store::EmbeddedMigrations().empty() ? 0 : store::EmbeddedMigrations().back().version;
  const std::string& url = options.database_url;
  if (url.empty()) {
    ok(absl::StrCat("embedded PostgreSQL under ", options.data_dir,
                    " (not started by --check-config)"));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto db, store::Database::Open(url, 1));
  store::PrincipalStore principals(db.get());
  ASSIGN_OR_RETURN(int64_t version, principals.SchemaVersion());
  if (version > binary_version) {
    return absl::FailedPreconditionError(absl::StrCat("the database's schema version ", version,
                                                      " is newer than this dpqd's (",
                                                      binary_version, "): run a newer dpqd"));
  }
  ok(absl::StrCat("database reachable, schema version ", version, " (this dpqd: ", binary_version,
                  version < binary_version ? "; dpqd migrates it at start" : "", ")"));
  const std::string& read_url = options.read_database_url;
  if (!read_url.empty()) {
    // Unlike at start-up, where a standby that is down only sends scans to the primary, a check
    // asks for everything configured to answer.
    ASSIGN_OR_RETURN(auto standby, store::Database::Open(read_url, 1));
    ASSIGN_OR_RETURN(bool in_recovery, store::InRecovery(*standby));
    ASSIGN_OR_RETURN(int64_t standby_version, store::PrincipalStore(standby.get()).SchemaVersion());
    ok(absl::StrCat("read standby reachable, ",
                    in_recovery ? "in recovery (a hot standby)"
                                : "NOT in recovery (a primary: scans still run there)",
                    ", schema version ", standby_version));
  }
  return absl::OkStatus();
}

absl::Status Serve() {
  ASSIGN_OR_RETURN(Server::Options options, OptionsFromFlags());
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::BuildAndStart(options));
  return server->WaitAndDrain();
}

// `dpqd --help`: dpqd's own flags, sorted, each with its help and default. absl's --help lists only
// flags defined in a file named like the program ("No flags matched" for dpqd); --helpfull still
// lists every library's flags.
bool WantsHelp(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-help" || args[i] == "-h") return true;
  }
  return false;
}

void PrintHelp() {
  std::vector<absl::CommandLineFlag*> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), "server/main.cc")) own.push_back(flag);
  }
  std::sort(own.begin(), own.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return a->Name() < b->Name();
            });
  std::string out = absl::StrCat(absl::ProgramUsageMessage(),
                                 "\n\nUsage: dpqd [--flag=value ...]   (--data-dir and --data_dir "
                                 "are the same flag)\n\nFlags:\n");
  for (const absl::CommandLineFlag* flag : own) {
    std::string name(flag->Name());
    std::replace(name.begin(), name.end(), '_', '-');
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&out, "  --", name, "\n      ", flag->Help(),
                    "\n      default: ", value.empty() ? "(empty)" : value, "\n");
  }
  absl::StrAppend(&out,
                  "\nEnvironment: DPQ_ADMIN_TOKEN (the bootstrap admin token, unless "
                  "--admin-token-file).\n--helpfull lists the flags of the libraries too.\n");
  std::fputs(out.c_str(), stdout);
}

}  // namespace
}  // namespace dpq

int main(int argc, char** argv) {
  // glibc gives each thread that allocates an arena of its own, up to eight per core, and an
  // arena keeps what its thread freed. dpqd has ~20 threads (gRPC's pollers and executors,
  // civetweb's workers, the health watcher, the audit verifier) that mostly wait on the
  // database: one arena per core is enough parallelism, and after a burst of 32 clients it left
  // 2 MB less resident on a 2-core VM (docs/decisions.md, "Memory at rest"). Set before any
  // thread starts.
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  absl::SetProgramUsageMessage("dpqd: differentially private query server");
  // Accept the documented --data-dir spelling as well as absl's --data_dir: rewrite dashes in flag
  // names (never in values) before absl parses them.
  std::vector<std::string> args(argv, argv + argc);
  if (dpq::WantsHelp(args)) {
    dpq::PrintHelp();
    return 0;
  }
  std::vector<char*> rewritten;
  for (std::string& a : args) {
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      for (size_t i = 2; i < a.size() && a[i] != '='; ++i) {
        if (a[i] == '-') a[i] = '_';
      }
    }
    rewritten.push_back(a.data());
  }
  absl::ParseCommandLine(static_cast<int>(rewritten.size()), rewritten.data());
  absl::StatusOr<dpq::LogFormat> format = dpq::ParseLogFormat(absl::GetFlag(FLAGS_log_format));
  absl::StatusOr<dpq::LogLevel> level = dpq::ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!format.ok() || !level.ok()) {
    std::fprintf(stderr, "dpqd: %s\n",
                 std::string((format.ok() ? level.status() : format.status()).message()).c_str());
    return 1;
  }
  dpq::ConfigureLogging(*format, *level);
  if (absl::GetFlag(FLAGS_check_config)) {
    absl::Status checked = dpq::CheckConfig();
    if (!checked.ok()) {
      std::printf("FAILED %s\n", std::string(checked.message()).c_str());
      return 1;
    }
    std::printf("dpqd --check-config: all checks passed\n");
    return 0;
  }
  absl::Status status = dpq::Serve();
  if (!status.ok()) {
    dpq::LogError(absl::StrCat("dpqd: ", status.ToString()));
    return 1;
  }
  return 0;
}
