#include "server/metrics/metrics.h"

#include <CivetServer.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/logging.h"
#include "server/metrics/figure_families.h"
#include "server/metrics/status_page.h"

namespace dpq::metrics {
namespace {

// The host to connect to for reaching a server listening on `listen` ("host:port", "[v6]:port",
// or a bare port): the wildcard addresses are reached through loopback.
std::string ConnectHost(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

// civetweb 1.15's accept loop polls its listening sockets with a fixed 2 s timeout
// (SOCKET_TIMEOUT_QUANTUM) and reads the stop flag only between polls, so stopping an idle server
// took up to 2 s (dpqd was still running 2-3 s after SIGTERM). A connection to the port wakes the
// poll. It is closed at once, so the worker that may receive it reads EOF instead of waiting for
// a request (request_timeout_ms).
void WakeAcceptLoop(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const bool connected = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
    if (connected) break;
  }
  freeaddrinfo(found);
}

// A gRPC path "/package.Service/Method" split into its service and method, or {"unknown",
// "unknown"} for anything else. The interceptor passes only methods dpqd serves; this is the
// second fence on label values.
std::pair<std::string, std::string> SplitMethod(absl::string_view full) {
  const auto bad = std::make_pair(std::string("unknown"), std::string("unknown"));
  if (full.size() < 4 || full.size() > 200 || full[0] != '/') return bad;
  full.remove_prefix(1);
  const size_t slash = full.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == full.size()) return bad;
  for (char c : full) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/')) {
      return bad;
    }
  }
  absl::string_view service = full.substr(0, slash), method = full.substr(slash + 1);
  if (method.find('/') != absl::string_view::npos) return bad;
  return {std::string(service), std::string(method)};
}

}  // namespace

class Metrics::PoolCollector : public prometheus::Collectable {
 public:
  explicit PoolCollector(PoolSnapshot snapshot) : snapshot_(std::move(snapshot)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const PoolFigures f = snapshot_();
    prometheus::MetricFamily opened{"dpq_db_connections_opened_total",
                                    "Database sessions this process established",
                                    kCounter,
                                    {}};
    opened.metric.push_back(Sample({}, static_cast<double>(f.opened), kCounter));
    prometheus::MetricFamily failures{"dpq_db_connect_failures_total",
                                      "Attempts to establish a database session that failed",
                                      kCounter,
                                      {}};
    failures.metric.push_back(Sample({}, static_cast<double>(f.connect_failures), kCounter));
    prometheus::MetricFamily closed{
        "dpq_db_connections_closed_total",
        "Database sessions closed (reason: error = the work on it threw, so its state was unknown; "
        "server = closed or broken by the server)",
        kCounter,
        {}};
    closed.metric.push_back(
        Sample({{"reason", "error"}}, static_cast<double>(f.closed_after_error), kCounter));
    closed.metric.push_back(
        Sample({{"reason", "server"}}, static_cast<double>(f.closed_by_server), kCounter));
    prometheus::MetricFamily sessions{
        "dpq_db_connections",
        "Database sessions held now (state: in_use or idle in the pool)",
        kGauge,
        {}};
    sessions.metric.push_back(Sample({{"state", "in_use"}}, f.in_use, kGauge));
    sessions.metric.push_back(Sample({{"state", "idle"}}, f.idle, kGauge));
    prometheus::MetricFamily scans{
        "dpq_scans_total",
        "Aggregate scans of raw rows by where they ran (target: primary, or the read standby of "
        "--read-database-url)",
        kCounter,
        {}};
    scans.metric.push_back(
        Sample({{"target", "primary"}}, static_cast<double>(f.scans_on_primary), kCounter));
    scans.metric.push_back(
        Sample({{"target", "standby"}}, static_cast<double>(f.scans_on_standby), kCounter));
    prometheus::MetricFamily one_trip{
        "dpq_debit_one_trip_total",
        "Debit groups decided on the ledger and grant rows this process remembered (outcome: "
        "written = by one statement; changed = a row had changed, so nothing was written and the "
        "group ran the locked transaction, one more round trip and WAL flush)",
        kCounter,
        {}};
    one_trip.metric.push_back(
        Sample({{"outcome", "written"}}, static_cast<double>(f.debits_one_trip), kCounter));
    one_trip.metric.push_back(
        Sample({{"outcome", "changed"}}, static_cast<double>(f.debits_rows_changed), kCounter));
    std::vector<prometheus::MetricFamily> out = {opened,   failures, closed,
                                                 sessions, scans,    one_trip};
    if (f.has_standby) {
      prometheus::MetricFamily up{"dpq_read_standby_up",
                                  "1 if the last attempt to use the read standby reached it",
                                  kGauge,
                                  {}};
      up.metric.push_back(Sample({}, f.standby_up ? 1 : 0, kGauge));
      prometheus::MetricFamily fallbacks{
          "dpq_read_standby_fallbacks_total",
          "Scans meant for the read standby that ran on the primary (reason: lagging = it had not "
          "replayed the dataset within --read-lag-wait-ms; unavailable = unreachable or failed)",
          kCounter,
          {}};
      fallbacks.metric.push_back(Sample(
          {{"reason", "lagging"}}, static_cast<double>(f.standby_fallbacks_lagging), kCounter));
      fallbacks.metric.push_back(Sample({{"reason", "unavailable"}},
                                        static_cast<double>(f.standby_fallbacks_unavailable),
                                        kCounter));
      out.push_back(up);
      out.push_back(fallbacks);
    }
    return out;
  }

 private:
  PoolSnapshot snapshot_;
};

// A civetweb server (the library prometheus-cpp's Exposer embeds, from Debian's libcivetweb-dev)
// with one handler: /metrics is the exposition of Collect(), / and /status the page rendered from
// that same collection. The Exposer could not serve another path on its port.
class Metrics::HttpServer : public CivetHandler {
 public:
  HttpServer(const Metrics* metrics, const std::string& listen)
      : metrics_(metrics),
        host_(ConnectHost(listen)),
        // Throws CivetException when the address cannot be bound.
        server_(std::vector<std::string>{"listening_ports", listen, "num_threads", "4",
                                         "request_timeout_ms", "10000"}) {
    server_.addHandler("/", this);
  }
  ~HttpServer() override { server_.close(); }

  // Where a connection reaches this server (for WakeAcceptLoop).
  const std::string& host() const { return host_; }
  std::vector<int> ports() { return server_.getListeningPorts(); }

  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    const mg_request_info* info = mg_get_request_info(conn);
    const std::string uri = info != nullptr && info->local_uri != nullptr ? info->local_uri : "";
    if (uri == "/metrics") {
      std::vector<prometheus::MetricFamily> families = metrics_->Collect();
      Reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
            prometheus::TextSerializer().Serialize(families));
    } else if (uri == "/" || uri == "/status") {
      std::vector<prometheus::MetricFamily> families = metrics_->Collect();
      Reply(conn, 200, "text/html; charset=utf-8", RenderStatusPage(families, absl::Now()));
    } else {
      Reply(conn, 404, "text/plain; charset=utf-8",
            "not found: dpqd serves /metrics and /status\n");
    }
    return true;
  }

 private:
  static void Reply(mg_connection* conn, int code, const char* type, const std::string& body) {
    // The page loads nothing and runs nothing: no script, no request to any other origin.
    mg_printf(
        conn,
        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
        "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n"
        "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        code, code == 200 ? "OK" : "Not Found", type, body.size());
    mg_write(conn, body.data(), body.size());
  }

  const Metrics* metrics_;
  const std::string host_;
  CivetServer server_;
};

Metrics::Metrics(LedgerSnapshot snapshot, PoolSnapshot pool, BuildInfo build)
    : registry_(std::make_shared<prometheus::Registry>()),
      ledger_(std::move(snapshot)),
      pool_(pool ? std::make_shared<PoolCollector>(std::move(pool)) : nullptr),
      queries_(&prometheus::BuildCounter()
                    .Name("dpq_queries_total")
                    .Help("Query RPCs answered by this process, by dataset, aggregate and outcome")
                    .Register(*registry_)),
      rejections_(&prometheus::BuildCounter()
                       .Name("dpq_budget_rejections_total")
                       .Help("Queries refused because the privacy budget would be exceeded")
                       .Register(*registry_)),
      duration_(&prometheus::BuildHistogram()
                     .Name("dpq_query_duration_seconds")
                     .Help("Wall time of query RPCs in this process")
                     .Register(*registry_)),
      rpcs_(&prometheus::BuildCounter()
                 .Name("dpq_grpc_server_handled_total")
                 .Help("gRPC calls completed by this process, by service, method and status code")
                 .Register(*registry_)),
      debit_duration_(&prometheus::BuildHistogram()
                           .Name("dpq_debit_duration_seconds")
                           .Help("Wall time of ledger debits in this process (group-commit wait, "
                                 "lock and transaction), whatever their outcome")
                           .Register(*registry_)),
      verify_ok_(
          &prometheus::BuildGauge()
               .Name("dpq_audit_verify_ok")
               .Help("1 if the last audit verification of the population's ledger by this process "
                     "passed, 0 if it found the chain or the ledger broken or if this process has "
                     "not verified it yet (then the timestamp is 0)")
               .Register(*registry_)),
      verify_time_(&prometheus::BuildGauge()
                        .Name("dpq_audit_verify_timestamp_seconds")
                        .Help("Unix time at which that verification finished; 0 until this "
                              "process has verified the population")
                        .Register(*registry_)) {
  prometheus::BuildGauge()
      .Name("dpq_build_info")
      .Help("Always 1: the version and git commit of this dpqd")
      .Register(*registry_)
      .Add({{"version", build.version.empty() ? "unknown" : build.version},
            {"git_sha", build.git_sha.empty() ? "unknown" : build.git_sha}})
      .Set(1);
  ldp_reports_ = &prometheus::BuildCounter()
                      .Name("dpq_ldp_reports_total")
                      .Help(
                          "Local-DP reports submitted to this process, by collection and outcome "
                          "(accepted, or the refusal's code)")
                      .Register(*registry_);
  verify_rows_ = &prometheus::BuildCounter()
                      .Name("dpq_audit_verify_rows_total")
                      .Help(
                          "Audit rows read by the audit verifications of this process, by "
                          "population; population=\"\" counts the admin log's rows")
                      .Register(*registry_);
  scan_data_errors_ = &prometheus::BuildCounter()
                           .Name("dpq_scan_data_errors_total")
                           .Help(
                               "Scans whose float8 statement raised a data exception (a bug: "
                               "scans are total by construction) and were answered by the "
                               "exact numeric fallback, by dataset")
                           .Register(*registry_);
  shard_scan_duration_ = &prometheus::BuildHistogram()
                              .Name("dpq_shard_scan_seconds")
                              .Help(
                                  "Wall time of one shard's part of the scans dpqd sends to each "
                                  "shard itself (grouped, filtered, per-person pre-aggregated), "
                                  "by shard, whatever the outcome")
                              .Register(*registry_);
}

Metrics::~Metrics() = default;

void Metrics::RecordShardScan(absl::string_view shard, double seconds) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  shard_scan_duration_->Add({{"shard", std::string(shard)}}, kBuckets).Observe(seconds);
}

void Metrics::RecordAuditVerifyRows(absl::string_view population, int64_t rows) {
  verify_rows_->Add({{"population", std::string(population)}}).Increment(static_cast<double>(rows));
}

void Metrics::RecordScanDataError(absl::string_view dataset) {
  scan_data_errors_->Add({{"dataset", std::string(dataset)}}).Increment();
}

void Metrics::RecordLdpReport(absl::string_view collection, absl::string_view outcome) {
  ldp_reports_->Add({{"collection", std::string(collection)}, {"outcome", std::string(outcome)}})
      .Increment();
}

void Metrics::RecordQuery(absl::string_view dataset, absl::string_view aggregate,
                          absl::string_view outcome, double seconds) {
  const std::string ds(dataset);
  queries_
      ->Add({{"dataset", ds},
             {"aggregate", std::string(aggregate)},
             {"outcome", std::string(outcome)}})
      .Increment();
  if (outcome == "resource_exhausted") rejections_->Add({{"dataset", ds}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  duration_->Add({}, kBuckets).Observe(seconds);
}

void Metrics::RecordRpc(absl::string_view full_method, absl::string_view code) {
  auto [service, method] = SplitMethod(full_method);
  rpcs_->Add({{"grpc_service", service}, {"grpc_method", method}, {"grpc_code", std::string(code)}})
      .Increment();
}

void Metrics::RecordDebit(double seconds) {
  // A lone debit is one short transaction (~1 ms on a local socket); a group-commit wait behind
  // a busy dataset adds the leader's transaction.
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  debit_duration_->Add({}, kBuckets).Observe(seconds);
}

void Metrics::RecordAuditVerify(absl::string_view population, bool ok, double unix_seconds) {
  const std::string name(population);
  verify_ok_->Add({{"population", name}}).Set(ok ? 1 : 0);
  verify_time_->Add({{"population", name}}).Set(unix_seconds);
}

void Metrics::ExpectAuditVerifications(const LedgerFigures& figures) const {
  // Family::Add returns the existing gauge when the labels match, so a verification recorded
  // before (or concurrently) keeps its values; a new gauge starts at 0.
  // A per-block population has no Budget but its blocks; its chain is verified all the same.
  std::vector<std::string> populations;
  for (const LedgerFigures::Budget& b : figures.budgets) populations.push_back(b.population);
  for (const LedgerFigures::Block& b : figures.blocks) populations.push_back(b.population);
  for (const std::string& p : populations) {
    verify_ok_->Add({{"population", p}});
    verify_time_->Add({{"population", p}});
  }
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  const absl::StatusOr<LedgerFigures> figures = ledger_();
  if (figures.ok()) ExpectAuditVerifications(*figures);  // before the registry is read
  std::vector<prometheus::MetricFamily> out = registry_->Collect();
  for (auto& f : LedgerFamilies(figures)) out.push_back(std::move(f));
  if (pool_ != nullptr) {
    for (auto& f : pool_->Collect()) out.push_back(std::move(f));
  }
  absl::MutexLock lock(&shards_mu_);
  for (auto& f : ShardFamilies(shards_)) out.push_back(std::move(f));
  return out;
}

void Metrics::SetShards(std::vector<ShardFigures> shards) {
  absl::MutexLock lock(&shards_mu_);
  shards_ = std::move(shards);
}

void Metrics::StopServing() {
  if (http_ == nullptr) return;
  const std::string host = http_->host();
  const std::vector<int> ports = http_->ports();
  std::atomic<bool> closed{false};
  std::thread closer([this, &closed] {
    http_.reset();  // sets civetweb's stop flag, then waits for its threads
    closed = true;
  });
  // Until the server is down: wake its accept loop (WakeAcceptLoop says why), a few times in case
  // the first connection came before the stop flag was set.
  while (!closed.load()) {
    for (int port : ports) WakeAcceptLoop(host, port);
    absl::SleepFor(absl::Milliseconds(20));
  }
  closer.join();
}

absl::Status Metrics::Serve(const std::string& listen) {
  try {
    http_ = std::make_unique<HttpServer>(this, listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace dpq::metrics
