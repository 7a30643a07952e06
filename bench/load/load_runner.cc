#include "bench/load/load_runner.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "bench/load/status_names.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace dpqbench {
namespace {

using Clock = std::chrono::steady_clock;

// Two of the server's epsilon units (1e-12), so that no rounding makes two queries equal.
constexpr double kEpsilonStep = 2e-12;

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const BenchOptions& o) {
  if (o.tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  std::ifstream file(o.tls_ca_file, std::ios::binary);
  std::ostringstream pem;
  pem << file.rdbuf();
  if (!file || pem.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-ca: cannot read '", o.tls_ca_file, "' (a PEM root certificate)"));
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.str();
  return grpc::SslCredentials(ssl);
}

// What one client thread saw.
struct ClientTally {
  std::vector<double> latencies_ms;
  std::map<std::string, int64_t> errors;
  int64_t requests = 0, ok = 0, cached = 0, queries = 0;
};

class Client {
 public:
  Client(const BenchOptions& o, std::shared_ptr<grpc::Channel> channel, uint64_t seed)
      : o_(o), stub_(dpq::v1::AnalystService::NewStub(channel)), rng_(seed) {
    for (const MixEntry& e : o.mix) total_weight_ += e.weight;
  }

  // Sends request number `seq` (unique over the run) and records its outcome.
  void SendOne(int64_t seq, ClientTally* tally) {
    const RequestKind kind = PickKind();
    const std::string& dataset = o_.datasets[Pick(o_.datasets.size())];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(static_cast<int64_t>(o_.timeout_seconds * 1e6)));
    if (!o_.token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", o_.token));
    grpc::Status status;
    bool cached = false;
    int64_t queries = 1;
    const Clock::time_point start = Clock::now();
    if (kind == RequestKind::kBatch) {
      dpq::v1::QueryBatchRequest batch;
      batch.set_dataset(dataset);
      for (int i = 0; i < o_.batch_size; ++i) {
        FillQuery(RequestKind::kCount, "", seq * o_.batch_size + i, batch.add_queries());
      }
      dpq::v1::QueryBatchResponse response;
      status = stub_->QueryBatch(&context, batch, &response);
      queries = o_.batch_size;
      for (const auto& a : response.answers()) cached = cached || a.cached();
    } else {
      dpq::v1::QueryRequest request;
      FillQuery(kind, dataset, seq * o_.batch_size, &request);
      dpq::v1::QueryResponse response;
      status = stub_->Query(&context, request, &response);
      cached = response.cached();
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    ++tally->requests;
    if (status.ok()) {
      ++tally->ok;
      tally->queries += queries;
      tally->cached += cached ? 1 : 0;
      tally->latencies_ms.push_back(ms);
    } else {
      ++tally->errors[std::string(StatusCodeName(status.error_code()))];
    }
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  RequestKind PickKind() {
    int r = std::uniform_int_distribution<int>(0, total_weight_ - 1)(rng_);
    for (const MixEntry& e : o_.mix) {
      if (r < e.weight) return e.kind;
      r -= e.weight;
    }
    return o_.mix.back().kind;
  }

  // `unique` makes epsilon differ from every other query of the run, so the result cache (which
  // keys on the whole query, epsilon in units of 1e-12: server/query/planner.cc) never answers
  // and every query is a real debit. Runs that follow one another on one dataset need different
  // --epsilon values (bench/run_bench.py steps them by 1e-5, far more than a run's spread).
  void FillQuery(RequestKind kind, const std::string& dataset, int64_t unique,
                 dpq::v1::QueryRequest* q) const {
    q->set_dataset(dataset);
    q->set_epsilon(o_.epsilon + kEpsilonStep * static_cast<double>(unique));
    if (o_.max_contributions > 0) q->set_max_contributions(o_.max_contributions);
    switch (kind) {
      case RequestKind::kSum:
        q->set_aggregate(dpq::v1::AGGREGATE_SUM);
        q->set_column(o_.column);
        break;
      case RequestKind::kMean:
        q->set_aggregate(dpq::v1::AGGREGATE_MEAN);
        q->set_column(o_.column);
        break;
      default: q->set_aggregate(dpq::v1::AGGREGATE_COUNT);
    }
  }

  const BenchOptions& o_;
  std::unique_ptr<dpq::v1::AnalystService::Stub> stub_;
  std::mt19937_64 rng_;  // picks datasets and kinds only: no privacy role
  int total_weight_ = 0;
};

}  // namespace

absl::StatusOr<RunFigures> RunLoad(const BenchOptions& o) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials(o);
  if (!credentials.ok()) return credentials.status();

  // One connection per client, as separate client processes would have: a local subchannel pool
  // keeps gRPC from sharing one TCP connection between the channels.
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < o.clients; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(o.server, *credentials, args);
    channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10));
    clients.push_back(std::make_unique<Client>(o, channel, 0x9E3779B97F4A7C15ull * (i + 1)));
  }

  std::atomic<int64_t> next_seq{0};
  std::vector<ClientTally> tallies(o.clients);
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop =
      start + std::chrono::microseconds(static_cast<int64_t>(o.duration_seconds * 1e6));
  // With --rate, request number s is due at start + s / rate (an open schedule over all clients);
  // a client that is behind sends at once.
  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      while (true) {
        const int64_t seq = next_seq.fetch_add(1);
        if (o.count > 0 && seq >= o.count) break;
        if (o.rate > 0) {
          const Clock::time_point due =
              start + std::chrono::microseconds(static_cast<int64_t>(seq * 1e6 / o.rate));
          if (due >= stop) break;
          std::this_thread::sleep_until(due);
        }
        if (Clock::now() >= stop) break;
        clients[i]->SendOne(seq, &tallies[i]);
      }
    });
  }
  for (std::thread& t : threads) t.join();

  RunFigures f;
  f.clients = o.clients;
  f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (ClientTally& t : tallies) {
    f.requests += t.requests;
    f.ok += t.ok;
    f.cached += t.cached;
    f.queries += t.queries;
    for (const auto& [code, n] : t.errors) f.errors[code] += n;
    all.insert(all.end(), t.latencies_ms.begin(), t.latencies_ms.end());
  }
  f.latency_ms = Summarize(&all);
  return f;
}

}  // namespace dpqbench
