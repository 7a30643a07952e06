// dpqd's server: opens the database (an embedded PostgreSQL, or one at a URL), migrates it, builds
// the stores, the engine and the gRPC services on top, serves them with metrics, gRPC health and
// periodic audit verification, and on SIGINT/SIGTERM drains them in an order that loses no call
// in flight. main.cc turns the flags into Server::Options; everything after that lives here.
#ifndef DPQ_SERVER_DAEMON_SERVER_H_
#define DPQ_SERVER_DAEMON_SERVER_H_

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/api/collection_service.h"
#include "server/api/query_admission.h"
#include "server/api/services.h"
#include "server/api/training_service.h"
#include "server/collection/collections.h"
#include "server/daemon/audit_verifier.h"
#include "server/daemon/health_watcher.h"
#include "server/daemon/shard_prober.h"
#include "server/daemon/startup_files.h"
#include "server/engine/accounting.h"
#include "server/engine/admin/access_admin.h"
#include "server/engine/admin/audit_trails.h"
#include "server/engine/admin/budget_book.h"
#include "server/engine/admin/dataset_admin.h"
#include "server/engine/admin/population_admin.h"
#include "server/engine/admin/shard_admin.h"
#include "server/engine/authenticator.h"
#include "server/engine/query_engine.h"
#include "server/engine/training_engine.h"
#include "server/metrics/metrics.h"
#include "server/store/admin_log.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/block_ledger.h"
#include "server/store/budget_ledger.h"
#include "server/store/collection_store.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/population_store.h"
#include "server/store/postgres/embedded_postgres.h"
#include "server/store/postgres/migrator.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "server/store/scan_router.h"
#include "server/store/shard_fan_out.h"
#include "server/store/shard_store.h"
#include "server/store/spend_tally.h"
#include "server/store/training_store.h"

namespace dpq::daemon {

class Server {
 public:
  // Every setting of one dpqd, already validated (main.cc checks the flags it fills them from).
  struct Options {
    std::string listen_address = "127.0.0.1:7777";  // gRPC, host:port
    TlsFiles tls;                                   // all empty: plaintext
    int max_message_mb = 16;                        // largest gRPC message accepted, MiB
    std::string database_url;  // libpq URL; empty: an embedded PostgreSQL under data_dir
    std::string data_dir = "./dpq-data";
    std::string migrations_dir;     // NNNN_*.sql; empty: the migrations built into dpqd
    int db_pool_size = 8;           // connections to the primary, and to the read standby
    std::string read_database_url;  // a hot standby of database_url for aggregate scans; optional
    store::ScanRouterOptions scan_routing;
    api::AdmissionLimits admission;                 // per analyst: queries in flight and per minute
    api::UploadLimits upload;                       // per dataset create or load
    std::string metrics_listen = "127.0.0.1:9464";  // /metrics and /status
    double health_check_seconds = 2.0;              // how often gRPC health re-checks the database
    double audit_verify_seconds = 3600;             // 0: audit chains verified only on request
    // BudgetLedger::VerifyOptions::full_after_seconds of each periodic pass (0: never by age).
    double audit_full_verify_seconds = 7 * 86400;
    double shard_probe_seconds = 5.0;      // how often the shard servers are probed
    double shutdown_grace_seconds = 10.0;  // how long calls in flight may finish on SIGTERM
    std::string admin_token_file;          // the bootstrap admin token's file, else:
    std::string admin_token_from_env;      // its value from $DPQ_ADMIN_TOKEN (either may be empty)
  };

  // Starts everything in order and returns once dpqd serves; an error from the first step that
  // failed (what was started before it is stopped again). Blocks SIGINT and SIGTERM in every
  // thread (WaitAndDrain waits for them), so call it before any other thread starts.
  static absl::StatusOr<std::unique_ptr<Server>> BuildAndStart(const Options& options);

  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Waits for SIGINT or SIGTERM, then Drain().
  absl::Status WaitAndDrain();
  // Stops serving without losing a call in flight (the order is explained in server.cc), closes
  // the database and stops the embedded PostgreSQL. Call at most once.
  absl::Status Drain();

 private:
  explicit Server(const Options& options) : options_(options) {}

  // The steps of BuildAndStart, in their order.
  void BlockShutdownSignals();
  absl::Status OpenDatabase();
  void BuildStores();
  absl::Status AddBootstrapAdmin();
  void BuildEngine();
  absl::Status StartMetrics();
  void BuildAdministration();  // authentication, admin actions and reads, accounting
  void BuildServices();
  absl::Status BuildGrpcServer(std::shared_ptr<grpc::ServerCredentials> credentials);
  void StartBackgroundJobs();
  void LogListening() const;

  const Options options_;
  sigset_t shutdown_signals_;

  // Members are declared in the order they are built, so that a failed start-up, and the
  // destructor after Drain, take them down in reverse.
  std::unique_ptr<store::EmbeddedPostgres> embedded_;  // null with options_.database_url
  std::string database_description_;                   // for the start-up log line
  store::MigrationReport migrations_;
  std::unique_ptr<store::Database> db_;

  std::unique_ptr<store::DatasetStore> datasets_;
  std::unique_ptr<store::PrincipalStore> principals_;
  std::unique_ptr<store::BudgetLedger> ledger_;
  std::unique_ptr<store::BlockLedger> blocks_;  // the time-block cells of per-block budgets
  std::unique_ptr<store::ScanRouter> scan_router_;
  std::unique_ptr<store::ShardFanOut> shard_fan_out_;  // before scanner_, which points to it
  std::unique_ptr<store::AggregateScanner> scanner_;
  std::unique_ptr<store::ResultCache> cache_;
  // Before metrics_: a scrape reads the engine's clock (Today()), so the engine outlives it.
  std::unique_ptr<engine::QueryEngine> engine_;
  // Per-analyst spend, read incrementally at each scrape.
  std::unique_ptr<store::SpendTally> spend_;
  std::unique_ptr<metrics::Metrics> metrics_;

  std::unique_ptr<engine::Authenticator> auth_;
  std::unique_ptr<store::AdminLog> admin_log_;
  std::unique_ptr<store::PopulationStore> populations_;
  std::unique_ptr<engine::PopulationAdmin> population_admin_;
  std::unique_ptr<store::ShardStore> shards_;
  std::unique_ptr<engine::ShardAdmin> shard_admin_;
  std::unique_ptr<engine::DatasetAdmin> dataset_admin_;
  std::unique_ptr<engine::AccessAdmin> access_admin_;
  std::unique_ptr<engine::BudgetBook> budget_book_;
  std::unique_ptr<engine::AuditTrails> audit_trails_;
  const engine::Accounting accounting_{};
  std::unique_ptr<api::QueryAdmission> admission_;
  std::unique_ptr<api::AnalystService> analyst_service_;
  std::unique_ptr<api::AdminService> admin_service_;
  std::unique_ptr<api::AccountingService> accounting_service_;
  std::unique_ptr<store::CollectionStore> collection_store_;
  std::unique_ptr<collection::Collections> collections_;
  std::unique_ptr<api::CollectionService> collection_service_;
  std::unique_ptr<store::TrainingStore> training_runs_;
  std::unique_ptr<engine::TrainingEngine> training_;
  std::unique_ptr<api::TrainingService> training_service_;
  // dpq's services: registered, counted per method by the metrics interceptor, and reported by
  // gRPC health, from this one list.
  std::vector<grpc::Service*> services_;
  std::vector<std::string> service_names_;

  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<HealthWatcher> health_;
  std::unique_ptr<AuditVerifier> verifier_;  // null when audit_verify_seconds is 0
  std::unique_ptr<ShardProber> shard_prober_;
};

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_SERVER_H_
