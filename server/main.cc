// dpqd: the dpq server. Wires the layers together; all logic lives in the libraries.
#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/api/audit_verifier.h"
#include "server/api/auth.h"
#include "server/api/collection_service.h"
#include "server/api/grpc_metrics_interceptor.h"
#include "server/api/health_watcher.h"
#include "server/api/request_log.h"
#include "server/api/services.h"
#include "server/api/training_service.h"
#include "server/engine/training_engine.h"
#include "server/store/training_store.h"
#include "server/api/unparsable_request.h"
#include "server/base/listen_address.h"
#include "server/base/tls_files.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/build_info.h"
#include "server/dp/secure_random.h"
#include "server/engine/query_engine.h"
#include "server/metrics/metrics.h"
#include "server/query/privacy_units.h"
#include "server/store/admin_log.h"
#include "server/store/collection_store.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/result_cache.h"
#include "server/store/budget_ledger.h"
#include "server/store/cap_figures.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/postgres/embedded_postgres.h"
#include "server/store/postgres/migrator.h"
#include "server/store/principal_store.h"
#include "server/store/scan_router.h"
#include "server/store/spend_tally.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7777", "gRPC listen address host:port");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464", "Prometheus /metrics listen address");
ABSL_FLAG(std::string, database_url, "",
          "libpq URL of the database; empty: run an embedded PostgreSQL under --data-dir");
ABSL_FLAG(std::string, data_dir, "./dpq-data", "directory of the embedded PostgreSQL cluster");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the bootstrap admin token (else env DPQ_ADMIN_TOKEN; no default exists)");
ABSL_FLAG(std::string, migrations_dir, "",
          "directory of NNNN_*.sql migrations; empty: the migrations built into dpqd");
ABSL_FLAG(int, db_pool_size, 8, "database connections per dpqd process");
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
ABSL_FLAG(int, max_queries_per_minute, 6000,
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
          "how often dpqd verifies every dataset's audit chain (first at start-up; 0: only when "
          "`dpqctl audit verify` asks); results in dpq_audit_verify_ok. Each pass reads only the "
          "rows appended since the last verified row (its checkpoint, kept in the database)");
ABSL_FLAG(double, audit_full_verify_seconds, 7 * 86400,
          "a pass of --audit-verify-seconds reads a dataset's audit chain from its first row again "
          "when the last such full verification of it (by any dpqd on the database) is older than "
          "this (0: only when `dpqctl audit verify --full` asks, or without a checkpoint)");

namespace dpq {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bootstrap admin token: --admin-token-file, else $DPQ_ADMIN_TOKEN; empty when neither is set.
absl::StatusOr<std::string> BootstrapToken() {
  std::string token;
  if (!absl::GetFlag(FLAGS_admin_token_file).empty()) {
    ASSIGN_OR_RETURN(token, ReadFile(absl::GetFlag(FLAGS_admin_token_file)));
  } else if (const char* env = std::getenv("DPQ_ADMIN_TOKEN")) {
    token = env;
  }
  token = std::string(absl::StripAsciiWhitespace(token));
  if (!token.empty() && token.size() < 16) {
    return absl::InvalidArgumentError("the admin token must be at least 16 characters");
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key);
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  const std::string client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (!client_ca.empty() && cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (cert.empty()) return grpc::InsecureServerCredentials();
  // With TLS configured the one listening port speaks only TLS: a plaintext client fails the
  // handshake and never reaches a handler.
  grpc::SslServerCredentialsOptions options(
      client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                        : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert));
  ASSIGN_OR_RETURN(std::string key_pem, ReadFile(key));
  options.pem_key_cert_pairs.push_back({key_pem, cert_pem});
  if (!client_ca.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadFile(client_ca));
  }
  return grpc::SslServerCredentials(options);
}

// The limits (issue 12), checked with the other flags before anything starts.
struct Limits {
  api::AdmissionLimits admission;
  api::UploadLimits upload;
};

absl::StatusOr<Limits> LimitFlags() {
  Limits l;
  l.admission.max_concurrent = absl::GetFlag(FLAGS_max_concurrent_queries);
  l.admission.max_per_minute = absl::GetFlag(FLAGS_max_queries_per_minute);
  const int64_t load_mb = absl::GetFlag(FLAGS_max_load_mb);
  l.upload.max_rows = absl::GetFlag(FLAGS_max_load_rows);
  const int message_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (l.admission.max_concurrent < 0 || l.admission.max_per_minute < 0 || load_mb < 0 ||
      l.upload.max_rows < 0) {
    return absl::InvalidArgumentError(
        "--max-concurrent-queries, --max-queries-per-minute, --max-load-mb and --max-load-rows "
        "must be >= 0 (0: unlimited)");
  }
  if (load_mb > (int64_t{1} << 40)) return absl::InvalidArgumentError("--max-load-mb is at most 2^40");
  if (message_mb < 1 || message_mb > 1024) {
    return absl::InvalidArgumentError("--max-message-mb must lie in [1, 1024]");
  }
  l.upload.max_bytes = load_mb << 20;
  return l;
}

// The flags Serve needs beyond the plain ones, validated once by CheckFlags.
struct ServeFlags {
  Limits limits;
  double audit_verify_seconds = 0;
  double audit_full_verify_seconds = 0;
  std::string read_database_url;
  store::ScanRouterOptions scan_routing;
};

// Every flag that can be wrong on its own, checked before anything starts (the embedded database
// among it), so a bad flag is the error reported, whatever else is wrong.
absl::StatusOr<ServeFlags> CheckFlags() {
  ServeFlags f;
  const double health_seconds = absl::GetFlag(FLAGS_health_check_seconds);
  if (!(health_seconds > 0 && health_seconds <= 3600)) {
    return absl::InvalidArgumentError("--health-check-seconds must lie in (0, 3600]");
  }
  const double grace = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  if (!(grace >= 0 && grace <= 3600)) {
    return absl::InvalidArgumentError("--shutdown-grace-seconds must lie in [0, 3600]");
  }
  const int pool = absl::GetFlag(FLAGS_db_pool_size);
  if (pool < 1 || pool > 1000) return absl::InvalidArgumentError("--db-pool-size must lie in [1, 1000]");
  f.audit_verify_seconds = absl::GetFlag(FLAGS_audit_verify_seconds);
  if (!(f.audit_verify_seconds >= 0 && f.audit_verify_seconds <= 7 * 86400)) {
    return absl::InvalidArgumentError("--audit-verify-seconds must lie in [0, 604800] (0: off)");
  }
  f.audit_full_verify_seconds = absl::GetFlag(FLAGS_audit_full_verify_seconds);
  if (!(f.audit_full_verify_seconds >= 0 && f.audit_full_verify_seconds <= 366 * 86400)) {
    return absl::InvalidArgumentError("--audit-full-verify-seconds must lie in [0, 31622400] (0: off)");
  }
  f.read_database_url = absl::GetFlag(FLAGS_read_database_url);
  if (!f.read_database_url.empty() && absl::GetFlag(FLAGS_database_url).empty()) {
    return absl::InvalidArgumentError(
        "--read-database-url needs --database-url: the standby replicates a primary that dpqd "
        "reaches by URL, not the embedded cluster");
  }
  const int lag_wait_ms = absl::GetFlag(FLAGS_read_lag_wait_ms);
  if (lag_wait_ms < 0 || lag_wait_ms > 60000) {
    return absl::InvalidArgumentError("--read-lag-wait-ms must lie in [0, 60000]");
  }
  f.scan_routing.max_lag_wait = absl::Milliseconds(lag_wait_ms);
  ASSIGN_OR_RETURN(f.limits, LimitFlags());
  return f;
}

// `dpqd --check-config`: what a deployment checks before it switches traffic (a Kubernetes init
// container, a systemd ExecStartPre). Nothing is created or changed: the embedded cluster is not
// started, migrations are not applied.
absl::Status CheckConfig() {
  const auto ok = [](const std::string& what) { std::printf("ok     %s\n", what.c_str()); };
  RETURN_IF_ERROR(CheckFlags().status());
  ok("flags");
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  RETURN_IF_ERROR(Credentials().status());
  if (cert.empty()) {
    ok(absl::StrCat("plaintext on ", absl::GetFlag(FLAGS_listen),
                    IsLoopbackAddress(absl::GetFlag(FLAGS_listen)) ? " (loopback)"
                                                                   : " (WARNING: not loopback)"));
  } else {
    RETURN_IF_ERROR(CheckCertificateAndKey(cert, absl::GetFlag(FLAGS_tls_key)));
    const std::string client_ca = absl::GetFlag(FLAGS_tls_client_ca);
    if (!client_ca.empty()) RETURN_IF_ERROR(CheckCertificateFile(client_ca, "--tls-client-ca"));
    ok(absl::StrCat("TLS certificate and key", client_ca.empty() ? "" : ", client CA"));
  }
  const int binary_version = store::EmbeddedMigrations().empty()
                                 ? 0
                                 : store::EmbeddedMigrations().back().version;
  const std::string url = absl::GetFlag(FLAGS_database_url);
  if (url.empty()) {
    const std::string dir = absl::GetFlag(FLAGS_data_dir);
    ok(absl::StrCat("embedded PostgreSQL under ", dir, " (not started by --check-config)"));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto db, store::Database::Open(url, 1));
  store::PrincipalStore principals(db.get());
  ASSIGN_OR_RETURN(int64_t version, principals.SchemaVersion());
  if (version > binary_version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the database's schema version ", version, " is newer than this dpqd's (", binary_version,
        "): run a newer dpqd"));
  }
  ok(absl::StrCat("database reachable, schema version ", version, " (this dpqd: ", binary_version,
                  version < binary_version ? "; dpqd migrates it at start" : "", ")"));
  const std::string read_url = absl::GetFlag(FLAGS_read_database_url);
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
  ASSIGN_OR_RETURN(ServeFlags flags, CheckFlags());
  const Limits& limits = flags.limits;
  ASSIGN_OR_RETURN(auto credentials, Credentials());
  // Block the shutdown signals in every thread; the main thread waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<store::EmbeddedPostgres> embedded;
  std::string url = absl::GetFlag(FLAGS_database_url);
  std::string database_desc = "the database at --database-url";
  if (url.empty()) {
    store::EmbeddedPostgresOptions options;
    options.data_dir = absl::GetFlag(FLAGS_data_dir);
    ASSIGN_OR_RETURN(embedded, store::EmbeddedPostgres::Start(options));
    url = embedded->connection_url();
    database_desc = absl::StrCat("embedded PostgreSQL in ", embedded->pg_data_dir(), " (socket ",
                                 embedded->socket_dir(), ")");
  }
  const std::string migrations_dir = absl::GetFlag(FLAGS_migrations_dir);
  ASSIGN_OR_RETURN(store::MigrationReport migrations,
                   migrations_dir.empty()
                       ? store::ApplyMigrations(url, store::EmbeddedMigrations())
                       : store::ApplyMigrations(url, migrations_dir));
  ASSIGN_OR_RETURN(auto db, store::Database::Open(url, absl::GetFlag(FLAGS_db_pool_size)));

  store::DatasetStore datasets(db.get());
  store::PrincipalStore principals(db.get());
  store::BudgetLedger ledger(db.get());
  // Scans on the read standby when there is one (store/scan_router.h); it may be down now: the
  // primary serves the scans until it answers.
  auto scan_router =
      flags.read_database_url.empty()
          ? std::make_unique<store::ScanRouter>(db.get())
          : std::make_unique<store::ScanRouter>(
                db.get(),
                store::Database::OpenDeferred(flags.read_database_url,
                                              absl::GetFlag(FLAGS_db_pool_size)),
                flags.scan_routing);
  if (!flags.read_database_url.empty()) {
    absl::StrAppend(&database_desc, "; aggregate scans on the read standby at --read-database-url");
  }
  store::AggregateScanner scanner(scan_router.get());
  store::ResultCache cache(db.get());

  ASSIGN_OR_RETURN(std::string token, BootstrapToken());
  if (!token.empty()) {
    RETURN_IF_ERROR(principals.UpsertAdmin("admin", api::TokenHash(token)).status());
  } else {
    LogWarning("no bootstrap admin token (DPQ_ADMIN_TOKEN / --admin-token-file): only existing admins can log in");
  }

  store::SpendTally spend(db.get());  // per-analyst spend, read incrementally at each scrape
  metrics::Metrics metrics([&ledger, &spend, &db]() -> absl::StatusOr<metrics::LedgerFigures> {
    metrics::LedgerFigures f;
    ASSIGN_OR_RETURN(auto budgets, ledger.ListBudgets());
    for (const auto& b : budgets) {
      f.budgets.push_back({b.dataset, std::string(dp::accounting::AccountantName(b.accountant)),
                           b.epsilon_total(), b.epsilon_remaining(),
                           b.delta_total(), b.delta_remaining()});
    }
    ASSIGN_OR_RETURN(auto spent, spend.Refresh());
    for (const auto& s : spent) f.spent.push_back({s.dataset, s.analyst, s.epsilon, s.delta});
    std::vector<int64_t> windows;
    for (const auto& w : metrics::kRecentWindows) windows.push_back(w.seconds);
    for (const auto& h : spend.History(windows)) {
      metrics::LedgerFigures::History out{h.dataset, h.audit_rows, {}};
      std::copy(h.epsilon_recent.begin(), h.epsilon_recent.end(), out.epsilon_recent);
      f.history.push_back(out);
    }
    ASSIGN_OR_RETURN(auto caps, store::ListAnalystCaps(db.get()));
    for (const auto& c : caps) {
      f.caps.push_back({c.dataset, c.analyst, c.has_epsilon_cap,
                        query::EpsilonFromUnits(c.epsilon_cap_units),
                        query::EpsilonFromUnits(c.epsilon_spent_units), c.has_delta_cap,
                        query::DeltaFromUnits(c.delta_cap_units),
                        query::DeltaFromUnits(c.delta_spent_units)});
    }
    return f;
  }, [&db, &scan_router]() {
    const store::PoolStats s = db->Stats();
    const store::ScanRouteStats r = scan_router->Stats();
    return metrics::PoolFigures{s.opened,           s.connect_failures,     s.closed_after_error,
                                s.closed_by_server, s.in_use,               s.idle,
                                r.scans_on_primary, r.scans_on_standby,     r.has_standby,
                                r.standby_up,       r.fallbacks_lagging,    r.fallbacks_unavailable};
  }, metrics::BuildInfo{BuildVersion(), BuildGitSha()});
  ledger.SetDebitObserver([&metrics](double seconds) { metrics.RecordDebit(seconds); });
  RETURN_IF_ERROR(metrics.Serve(absl::GetFlag(FLAGS_metrics_listen)));

  engine::QueryEngine engine({&datasets, &principals, &ledger, &scanner, &cache}, &dp::SecureRandom());
  engine.OnScanDataError([&metrics](const std::string& dataset) { metrics.RecordScanDataError(dataset); });
  api::Authenticator auth(&principals);
  store::AdminLog admin_log(db.get());
  api::QueryAdmission admission(limits.admission);
  api::ServiceOptions options{&auth,      &engine,  &datasets,  &principals,  &ledger,
                              &admin_log, &metrics, &admission, limits.upload};
  api::AnalystService analyst_service(options);
  api::AdminService admin_service(options);
  api::AccountingService accounting_service(options);
  store::CollectionStore collection_store(db.get());
  collection::Collections collections(&collection_store);
  api::CollectionService collection_service({&auth, &collections, &metrics});

  store::TrainingStore training_runs(db.get());
  engine::TrainingEngine training(&engine, &ledger, &training_runs, &dp::SecureRandom());
  api::TrainingService training_service(&auth, &training);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_message_mb) << 20);
  // gRPC enables SO_REUSEPORT by default on Linux: a second dpqd on the same port would silently
  // share it instead of failing. Refuse that.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // dpq's services: registered, counted per method by the metrics interceptor, and reported by
  // gRPC health, from this one list.
  const std::vector<grpc::Service*> services = {&analyst_service, &admin_service,
                                                &accounting_service, &collection_service,
                                                &training_service};
  const std::vector<std::string> service_names = {
      dpq::v1::AnalystService::service_full_name(), dpq::v1::AdminService::service_full_name(),
      dpq::v1::AccountingService::service_full_name(),
      dpq::v1::CollectionService::service_full_name(),
      dpq::v1::TrainingService::service_full_name()};
  for (grpc::Service* service : services) builder.RegisterService(service);
  // The order matters: a request that did not parse gets its status rewritten first, so that the
  // metrics and the log line record the status the client receives.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<api::UnparsableRequestInterceptorFactory>());
  interceptors.push_back(std::make_unique<api::RpcMetricsInterceptorFactory>(
      &metrics, [&service_names] {
        std::vector<std::string> counted = service_names;
        counted.push_back("grpc.reflection.v1alpha.ServerReflection");
        return counted;
      }()));
  interceptors.push_back(std::make_unique<api::RequestLogFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", absl::GetFlag(FLAGS_listen)));
  }
  if (absl::GetFlag(FLAGS_tls_cert).empty() && !IsLoopbackAddress(absl::GetFlag(FLAGS_listen))) {
    // Bearer tokens and released values would cross the network in the clear.
    LogWarning(absl::StrCat(
        "WARNING: listening on ", absl::GetFlag(FLAGS_listen),
        ", reachable from other machines, WITHOUT TLS: tokens and answers travel in plaintext. "
        "Give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a TLS proxy."));
  }
  api::HealthWatcher health(server->GetHealthCheckService(), &principals, migrations.binary_version,
                            absl::Seconds(absl::GetFlag(FLAGS_health_check_seconds)),
                            service_names);
  health.Start();
  std::unique_ptr<api::AuditVerifier> verifier;
  if (flags.audit_verify_seconds > 0) {
    verifier = std::make_unique<api::AuditVerifier>(&ledger, &metrics,
                                                     absl::Seconds(flags.audit_verify_seconds),
                                                     flags.audit_full_verify_seconds);
    verifier->Start();
  }
  LogInfo(absl::StrCat("dpqd listening on ", absl::GetFlag(FLAGS_listen),
                       absl::GetFlag(FLAGS_tls_cert).empty()         ? " (plaintext)"
                       : absl::GetFlag(FLAGS_tls_client_ca).empty() ? " (TLS)"
                                                                     : " (TLS, client certificates required)",
                       ", metrics on http://", absl::GetFlag(FLAGS_metrics_listen), "/metrics (status page: /status); database: ",
                       database_desc, "; schema version ", migrations.schema_version, " (",
                       migrations.applied, " migration(s) applied now)"));

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  const double grace = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  LogInfo(absl::StrCat("signal ", signal_number, " received: draining (new calls refused, calls in "
                       "flight finish within ", grace, " s)"));
  // Health first, so that balancers stop sending before the port closes; then gRPC stops
  // accepting and waits for the calls in flight (their debits, scans and stored answers) until
  // the grace period ends, after which it cancels what is left: a cancelled query that was already
  // charged keeps its charge and its answer is served to a retry with the same request id.
  health.Stop();
  if (verifier != nullptr) verifier->Stop();
  server->GetHealthCheckService()->Shutdown();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(grace)));
  server->Wait();
  // The metrics server's threads call back into the ledger and the pool: stop them before closing the
  // database (a scrape during shutdown once aborted dpqd on SIGTERM).
  metrics.StopServing();
  db.reset();
  if (embedded) RETURN_IF_ERROR(embedded->Stop());
  LogInfo("dpqd stopped");
  return absl::OkStatus();
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
  std::sort(own.begin(), own.end(), [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
    return a->Name() < b->Name();
  });
  std::string out = absl::StrCat(absl::ProgramUsageMessage(),
                                 "\n\nUsage: dpqd [--flag=value ...]   (--data-dir and --data_dir "
                                 "are the same flag)\n\nFlags:\n");
  for (const absl::CommandLineFlag* flag : own) {
    std::string name(flag->Name());
    std::replace(name.begin(), name.end(), '_', '-');
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&out, "  --", name, "\n      ", flag->Help(), "\n      default: ",
                    value.empty() ? "(empty)" : value, "\n");
  }
  absl::StrAppend(&out, "\nEnvironment: DPQ_ADMIN_TOKEN (the bootstrap admin token, unless "
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
