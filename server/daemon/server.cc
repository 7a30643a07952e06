#include "server/daemon/server.h"

#include <utility>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/api/auth.h"
#include "server/api/grpc_metrics_interceptor.h"
#include "server/api/request_log.h"
#include "server/api/unparsable_request.h"
#include "server/base/listen_address.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/build_info.h"
#include "server/daemon/ledger_figures.h"
#include "server/dp/secure_random.h"

namespace dpq::daemon {

absl::StatusOr<std::unique_ptr<Server>> Server::BuildAndStart(const Options& options) {
  ASSIGN_OR_RETURN(auto credentials, ServerCredentialsFromFiles(options.tls));
  auto server = absl::WrapUnique(new Server(options));
  server->BlockShutdownSignals();
  RETURN_IF_ERROR(server->OpenDatabase());
  server->BuildStores();
  RETURN_IF_ERROR(server->AddBootstrapAdmin());
  server->BuildEngine();
  RETURN_IF_ERROR(server->StartMetrics());
  server->BuildAdministration();
  server->BuildServices();
  RETURN_IF_ERROR(server->BuildGrpcServer(std::move(credentials)));
  server->StartBackgroundJobs();
  server->LogListening();
  return server;
}

Server::~Server() = default;

// Block the shutdown signals in every thread; the main thread waits for them with sigwait.
void Server::BlockShutdownSignals() {
  sigemptyset(&shutdown_signals_);
  sigaddset(&shutdown_signals_, SIGINT);
  sigaddset(&shutdown_signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals_, nullptr);
}

absl::Status Server::OpenDatabase() {
  std::string url = options_.database_url;
  database_description_ = "the database at --database-url";
  if (url.empty()) {
    store::EmbeddedPostgresOptions embedded_options;
    embedded_options.data_dir = options_.data_dir;
    ASSIGN_OR_RETURN(embedded_, store::EmbeddedPostgres::Start(embedded_options));
    url = embedded_->connection_url();
    database_description_ = absl::StrCat("embedded PostgreSQL in ", embedded_->pg_data_dir(),
                                         " (socket ", embedded_->socket_dir(), ")");
  }
  ASSIGN_OR_RETURN(migrations_, options_.migrations_dir.empty()
                                    ? store::ApplyMigrations(url, store::EmbeddedMigrations())
                                    : store::ApplyMigrations(url, options_.migrations_dir));
  ASSIGN_OR_RETURN(db_, store::Database::Open(url, options_.db_pool_size));
  return absl::OkStatus();
}

void Server::BuildStores() {
  datasets_ = std::make_unique<store::DatasetStore>(db_.get());
  shards_ = std::make_unique<store::ShardStore>(db_.get());
  principals_ = std::make_unique<store::PrincipalStore>(db_.get());
  ledger_ = std::make_unique<store::BudgetLedger>(db_.get());
  // Scans on the read standby when there is one (store/scan_router.h); it may be down now: the
  // primary serves the scans until it answers.
  scan_router_ =
      options_.read_database_url.empty()
          ? std::make_unique<store::ScanRouter>(db_.get())
          : std::make_unique<store::ScanRouter>(
                db_.get(),
                store::Database::OpenDeferred(options_.read_database_url, options_.db_pool_size),
                options_.scan_routing);
  if (!options_.read_database_url.empty()) {
    absl::StrAppend(&database_description_,
                    "; aggregate scans on the read standby at --read-database-url");
  }
  scanner_ = std::make_unique<store::AggregateScanner>(scan_router_.get());
  shard_fan_out_ = std::make_unique<store::ShardFanOut>(shards_.get());
  scanner_->SetShardFanOut(shard_fan_out_.get());
  cache_ = std::make_unique<store::ResultCache>(db_.get());
  blocks_ = std::make_unique<store::BlockLedger>(db_.get());
}

absl::Status Server::AddBootstrapAdmin() {
  ASSIGN_OR_RETURN(std::string token,
                   BootstrapAdminToken(options_.admin_token_file, options_.admin_token_from_env));
  if (!token.empty()) {
    RETURN_IF_ERROR(principals_->UpsertAdmin("admin", engine::TokenHash(token)).status());
  } else {
    LogWarning(
        "no bootstrap admin token (DPQ_ADMIN_TOKEN / --admin-token-file): only existing admins can log in");
  }
  return absl::OkStatus();
}

absl::Status Server::StartMetrics() {
  spend_ = std::make_unique<store::SpendTally>(db_.get());
  // The engine's clock decides which time block is current, for the queries and the gauges alike.
  metrics_ = std::make_unique<metrics::Metrics>(
      [this] {
        return ReadLedgerFigures(*ledger_, *blocks_, engine_->Today(), *spend_, db_.get());
      },
      [this] { return ReadPoolFigures(*db_, *scan_router_); },
      metrics::BuildInfo{BuildVersion(), BuildGitSha()});
  ledger_->SetDebitObserver(
      [metrics = metrics_.get()](double seconds) { metrics->RecordDebit(seconds); });
  shard_fan_out_->SetScanObserver(
      [metrics = metrics_.get()](const std::string& shard, double seconds) {
        metrics->RecordShardScan(shard, seconds);
      });
  engine_->OnScanDataError([metrics = metrics_.get()](const std::string& dataset) {
    metrics->RecordScanDataError(dataset);
  });
  return metrics_->Serve(options_.metrics_listen);
}

void Server::BuildEngine() {
  engine_ = std::make_unique<engine::QueryEngine>(
      engine::QueryEngine::Stores{datasets_.get(), principals_.get(), ledger_.get(), scanner_.get(),
                                  cache_.get(), shards_.get()},
      &dp::SecureRandom());
}

void Server::BuildAdministration() {
  auth_ = std::make_unique<engine::Authenticator>(principals_.get());
  admin_log_ = std::make_unique<store::AdminLog>(db_.get());
  dataset_admin_ = std::make_unique<engine::DatasetAdmin>(datasets_.get());
  access_admin_ = std::make_unique<engine::AccessAdmin>(principals_.get());
  populations_ = std::make_unique<store::PopulationStore>(db_.get());
  population_admin_ = std::make_unique<engine::PopulationAdmin>(populations_.get(), ledger_.get());
  shard_admin_ = std::make_unique<engine::ShardAdmin>(shards_.get());
  budget_book_ = std::make_unique<engine::BudgetBook>(
      engine_.get(), engine::BudgetBook::Stores{datasets_.get(), principals_.get(), ledger_.get(),
                                                populations_.get(), blocks_.get()});
  audit_trails_ =
      std::make_unique<engine::AuditTrails>(populations_.get(), ledger_.get(), admin_log_.get());
}

void Server::BuildServices() {
  admission_ = std::make_unique<api::QueryAdmission>(options_.admission);
  api::ServiceOptions options{auth_.get(),         engine_.get(),          dataset_admin_.get(),
                              access_admin_.get(), budget_book_.get(),     audit_trails_.get(),
                              &accounting_,        metrics_.get(),         admission_.get(),
                              options_.upload,     population_admin_.get()};
  options.shards = shard_admin_.get();
  analyst_service_ = std::make_unique<api::AnalystService>(options);
  admin_service_ = std::make_unique<api::AdminService>(options);
  accounting_service_ = std::make_unique<api::AccountingService>(options);
  collection_store_ = std::make_unique<store::CollectionStore>(db_.get());
  collections_ = std::make_unique<collection::Collections>(collection_store_.get());
  collection_service_ = std::make_unique<api::CollectionService>(
      api::CollectionServiceOptions{auth_.get(), collections_.get(), metrics_.get()});

  training_runs_ = std::make_unique<store::TrainingStore>(db_.get());
  training_ = std::make_unique<engine::TrainingEngine>(engine_.get(), ledger_.get(),
                                                       training_runs_.get(), &dp::SecureRandom());
  training_service_ = std::make_unique<api::TrainingService>(auth_.get(), training_.get());
}

absl::Status Server::BuildGrpcServer(std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(options_.listen_address, credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(options_.max_message_mb << 20);
  // gRPC enables SO_REUSEPORT by default on Linux: a second dpqd on the same port would silently
  // share it instead of failing. Refuse that.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  services_ = {analyst_service_.get(), admin_service_.get(), accounting_service_.get(),
               collection_service_.get(), training_service_.get()};
  service_names_ = {dpq::v1::AnalystService::service_full_name(),
                    dpq::v1::AdminService::service_full_name(),
                    dpq::v1::AccountingService::service_full_name(),
                    dpq::v1::CollectionService::service_full_name(),
                    dpq::v1::TrainingService::service_full_name()};
  for (grpc::Service* service : services_) builder.RegisterService(service);
  // The order matters: a request that did not parse gets its status rewritten first, so that the
  // metrics and the log line record the status the client receives.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<api::UnparsableRequestInterceptorFactory>());
  std::vector<std::string> counted = service_names_;
  counted.push_back("grpc.reflection.v1alpha.ServerReflection");
  interceptors.push_back(
      std::make_unique<api::RpcMetricsInterceptorFactory>(metrics_.get(), counted));
  interceptors.push_back(std::make_unique<api::RequestLogFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  grpc_server_ = builder.BuildAndStart();
  if (grpc_server_ == nullptr || bound_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen_address));
  }
  if (options_.tls.cert.empty() && !IsLoopbackAddress(options_.listen_address)) {
    // Bearer tokens and released values would cross the network in the clear.
    LogWarning(absl::StrCat(
        "WARNING: listening on ", options_.listen_address,
        ", reachable from other machines, WITHOUT TLS: tokens and answers travel in plaintext. "
        "Give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a TLS proxy."));
  }
  return absl::OkStatus();
}

void Server::StartBackgroundJobs() {
  health_ = std::make_unique<HealthWatcher>(
      grpc_server_->GetHealthCheckService(), principals_.get(), migrations_.binary_version,
      absl::Seconds(options_.health_check_seconds), service_names_);
  health_->Start();
  if (options_.audit_verify_seconds > 0) {
    verifier_ = std::make_unique<AuditVerifier>(ledger_.get(), metrics_.get(),
                                                absl::Seconds(options_.audit_verify_seconds),
                                                options_.audit_full_verify_seconds);
    verifier_->Start();
  }
  shard_prober_ = std::make_unique<ShardProber>(shards_.get(), metrics_.get(),
                                                absl::Seconds(options_.shard_probe_seconds));
  shard_prober_->Start();
}

void Server::LogListening() const {
  LogInfo(absl::StrCat("dpqd listening on ", options_.listen_address,
                       options_.tls.cert.empty()        ? " (plaintext)"
                       : options_.tls.client_ca.empty() ? " (TLS)"
                                                        : " (TLS, client certificates required)",
                       ", metrics on http://", options_.metrics_listen,
                       "/metrics (status page: /status); database: ", database_description_,
                       "; schema version ", migrations_.schema_version, " (", migrations_.applied,
                       " migration(s) applied now)"));
}

absl::Status Server::WaitAndDrain() {
  int signal_number = 0;
  sigwait(&shutdown_signals_, &signal_number);
  LogInfo(absl::StrCat("signal ", signal_number,
                       " received: draining (new calls refused, calls in "
                       "flight finish within ",
                       options_.shutdown_grace_seconds, " s)"));
  return Drain();
}

absl::Status Server::Drain() {
  // Health first, so that balancers stop sending before the port closes; then gRPC stops
  // accepting and waits for the calls in flight (their debits, scans and stored answers) until
  // the grace period ends, after which it cancels what is left: a cancelled query that was already
  // charged keeps its charge and its answer is served to a retry with the same request id.
  health_->Stop();
  if (verifier_ != nullptr) verifier_->Stop();
  shard_prober_->Stop();
  grpc_server_->GetHealthCheckService()->Shutdown();
  grpc_server_->Shutdown(
      absl::ToChronoTime(absl::Now() + absl::Seconds(options_.shutdown_grace_seconds)));
  grpc_server_->Wait();
  // The metrics server's threads call back into the ledger and the pool: stop them before closing the
  // database (a scrape during shutdown once aborted dpqd on SIGTERM).
  metrics_->StopServing();
  db_.reset();
  if (embedded_) RETURN_IF_ERROR(embedded_->Stop());
  LogInfo("dpqd stopped");
  return absl::OkStatus();
}

}  // namespace dpq::daemon
