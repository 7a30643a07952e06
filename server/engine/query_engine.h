// Runs one central-DP query end to end (DESIGN.md §2; docs/threat-model.md):
//   authorise -> plan and calibrate (every check that can refuse) -> replay check -> result cache
//   (per analyst) -> debit (lock ledger, check, audit row, COMMIT) -> scan in SQL -> add noise ->
//   store the release -> return.
// Pay before you look: the charge commits before the scan starts and stays whatever happens next;
// a retry with the same request id returns the stored answer, or runs the paid scan once more if
// none was stored, and never charges twice. A value leaves only once its release is stored.
// No gRPC here: api/ translates protos to these types and back.
#ifndef DPQ_SERVER_ENGINE_QUERY_ENGINE_H_
#define DPQ_SERVER_ENGINE_QUERY_ENGINE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "server/query/filter/type_checker.h"

#include "absl/status/statusor.h"
#include "server/dp/random_source.h"
#include "server/engine/noisy_release.h"
#include "server/engine/plan_report.h"
#include "server/engine/recent_schemas.h"
#include "server/query/planner.h"
#include "server/query/query_spec.h"
#include "server/query/time_blocks/time_blocks.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/budget_ledger.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"
#include "server/store/result_cache.h"
#include "server/store/shard_store.h"

namespace dpq::engine {

struct QueryOutcome {
  query::QuerySpec spec;         // normalised (resolved bounds)
  store::Allocation allocation;  // the committed audit row: value, scales, interval, charge
  store::BudgetState budget;     // after the debit
  bool replayed = false;
  bool cached = false;                // answered from the result cache: nothing charged
  std::vector<ReleasedRow> rows;      // every released value
  std::vector<std::string> warnings;  // epsilon guidance (query/epsilon_guidance.h)
  // Every noise component's mechanism and scale (a function of the plan alone, so a replayed or
  // cached answer carries the same ones as the release it reads back).
  std::vector<ComponentReport> components;
};

// A query batch's result: one answer per query (in request order) and the batch's one allocation.
struct BatchOutcome {
  std::vector<QueryOutcome> answers;
  store::Allocation allocation;  // the batch's audit row: the joint charge
  store::BudgetState budget;
  bool replayed = false;
  bool cached =
      false;  // the same analyst's identical batch on this dataset version: nothing charged
  int64_t epsilon_sum_units = 0;  // the queries' own charges added up (basic composition)
  int64_t delta_sum_units = 0;
};

// What a batch would be charged (QueryBatchRequest in the proto for the rule), without charging.
struct BatchPrice {
  int64_t epsilon_units = 0;  // the charge: the joint price when it is below the sum
  int64_t delta_units = 0;
  int64_t epsilon_sum_units = 0;  // the queries' own charges added up (basic composition)
  int64_t delta_sum_units = 0;
  std::string events;  // what the ledger's accountant composes
};

// Accuracy planning (no scan, no charge).
struct AccuracyPlan {
  double epsilon = 0;
  double delta = 0;
  query::MechanismKind mechanism = query::MechanismKind::kLaplace;
  double sensitivity = 0;
  double noise_scale = 0;
  double error = 0;  // CI half-width at `confidence` (quantiles: rank error)
  double confidence = 0.95;
  // Quantiles: `error` is in rows of rank; report.quantile says whether the exponential
  // mechanism chooses the values or the noisy histogram's CDF gives them.
  bool rank_error = false;
  // Every noise component, the quantile method, the released keys, the value's expression: what
  // the run will use (plan_report.h).
  PlanReport report;
  std::vector<std::string> warnings;
};

class QueryEngine {
 public:
  struct Stores {
    store::DatasetStore* datasets;
    store::PrincipalStore* principals;
    store::BudgetLedger* ledger;
    store::AggregateScanner* scanner;
    store::ResultCache* cache;
    // Probed before a query on a sharded dataset is charged; may stay null where no dataset is
    // sharded (a sharded one is then refused before its charge).
    store::ShardStore* shards = nullptr;
  };
  // `rng` must be dp::SecureRandom() in production.
  QueryEngine(Stores stores, dp::RandomSource* rng) : stores_(stores), rng_(rng) {}

  // Called with the dataset's name whenever a scan's float8 statement raised a data exception
  // and the numeric fallback answered (store::ScanResult::recovered_data_error): dpqd counts it in
  // dpq_scan_data_errors_total. Set before serving.
  void OnScanDataError(std::function<void(const std::string& dataset)> hook) {
    on_scan_data_error_ = std::move(hook);
  }

  // Today (days since 1970-01-01, UTC): the last time block that has started, for per-block
  // budgets (query/time_blocks.h). The wall clock unless a test sets another. Set before serving.
  void SetToday(std::function<int64_t()> today) { today_ = std::move(today); }
  int64_t Today() const;

  // The dataset if `principal` may query it: admins may query any dataset, analysts only granted
  // ones (PERMISSION_DENIED). NOT_FOUND for an unknown dataset.
  absl::StatusOr<query::DatasetSchema> AuthorizedDataset(const store::Principal& principal,
                                                         const std::string& dataset);

  // AuthorizedDataset for a query of the dataset alone (a flag query, a batch, a SQL statement
  // without a join): a public table is INVALID_ARGUMENT before anything is planned or charged (it
  // is only ever joined to a private dataset), for admins and analysts alike.
  absl::StatusOr<query::DatasetSchema> QueriedDataset(const store::Principal& principal,
                                                      const std::string& dataset);

  // The schemas of a join's tables (query/join_source.h), in FROM order: private tables as
  // AuthorizedDataset gives them; a public table needs no grant (it is public) but must exist.
  absl::StatusOr<std::vector<query::DatasetSchema>> JoinedTables(const store::Principal& principal,
                                                                 const query::JoinRequest& join);

  // The schema `spec` is planned against: its dataset's (QueriedDataset), or with spec.join the
  // joined schema of its tables (query::ResolveJoin, which checks the join's rules again: the
  // request may come from any caller). The joined schema carries the first private table's id,
  // name and version and the shared population (the ledger charged is the population's).
  absl::StatusOr<query::DatasetSchema> SchemaFor(const store::Principal& principal,
                                                 const query::QuerySpec& spec);

  // request_id: empty means "assign one". The scan is cancelled at `deadline`. Errors: see the
  // proto's AnalystService.Query. Every failure a retry with the same request id resolves
  // (UNAVAILABLE, DEADLINE_EXCEEDED) carries that id, drawn or given (RequestIdOf,
  // server/base/database_failure.h): the caller must retry with it.
  absl::StatusOr<QueryOutcome> Run(const store::Principal& principal, const query::QuerySpec& spec,
                                   std::string request_id,
                                   absl::Time deadline = absl::InfiniteFuture());

  // Runs a declared list of queries on `dataset` and charges them once (see QueryBatchRequest in
  // the proto for the pricing rule). `delta` 0 disables joint pricing. With BatchCache::kUse the
  // same analyst's identical batch on the same dataset version is answered from its stored release
  // at no charge (cached), as Run does for one query: SQL scripts are one question and use it.
  // query-batch does not (kBypass): it is the way to ask for fresh releases of a repeated list
  // (docs/decisions.md). INVALID_ARGUMENT names "queries[i]" for a bad query; the rest as Run.
  enum class BatchCache { kBypass, kUse };
  absl::StatusOr<BatchOutcome> RunBatch(const store::Principal& principal,
                                        const std::string& dataset,
                                        std::vector<query::QuerySpec> specs, double delta,
                                        std::string request_id,
                                        absl::Time deadline = absl::InfiniteFuture(),
                                        BatchCache cache = BatchCache::kBypass);

  // The charge RunBatch would make for this batch: every check it makes before charging, no scan,
  // nothing charged.
  absl::StatusOr<BatchPrice> PriceBatch(const store::Principal& principal,
                                        const std::string& dataset,
                                        std::vector<query::QuerySpec> specs, double delta);

  // With spec.epsilon > 0: the error of that query. With spec.epsilon == 0 and target_error > 0:
  // the smallest epsilon (to 1e-12 relative, then rounded up to the ledger's units) whose error is
  // at most target_error. expected_count scales a mean/variance's sum error to the value's units.
  // OUT_OF_RANGE if no epsilon up to 1e6 reaches the target.
  absl::StatusOr<AccuracyPlan> PlanAccuracy(const store::Principal& principal,
                                            const query::QuerySpec& spec, double target_error,
                                            double expected_count);

 private:
  // What an earlier request left for this one: `own`, the allocation charged under this request
  // id (a replay; never looked up for an id the server drew), else, with `use_cache`, `cached`,
  // the same analyst's answered allocation of the same question on this dataset version.
  struct Earlier {
    absl::optional<store::Allocation> own;
    absl::optional<store::Allocation> cached;
  };
  // `probed`: the cache probe the query's first statement made (null if none); it stands for the
  // probe only if its fingerprint is this one's and the request id is the server's.
  absl::StatusOr<Earlier> FindEarlier(const store::Principal& principal,
                                      const query::DatasetSchema& schema,
                                      const std::string& fingerprint, const std::string& request_id,
                                      bool callers_id, bool use_cache,
                                      const store::ProbedCache* probed);
  struct Prepared {
    query::QueryPlan plan;
    absl::optional<query::filter::TypedFilter> filter;
    ReleasePlan release;  // the calibrated mechanisms and events (empty without with_release)
    // A per-block population: the time blocks the query pays (and `filter` keeps the scan in).
    absl::optional<query::BlockRange> blocks;
  };

  // What a query's first statement read: its schema and, if it probed the result cache, the probe.
  struct LookedUp {
    query::DatasetSchema schema;
    absl::optional<store::ProbedCache> probed;
  };
  // AuthorizedDataset (refuse_public: QueriedDataset), confirming a remembered caller's token
  // (Principal::token_to_confirm) in the same statement, and with a `probe_fingerprint` probing
  // the result cache there too (query_lookup.cc).
  absl::StatusOr<LookedUp> GrantedDataset(const store::Principal& principal,
                                          const std::string& dataset, bool refuse_public,
                                          const std::string& probe_fingerprint = "");
  // Run's first step: SchemaFor, in one statement when it can (query_lookup.cc). With `server_id`
  // (the server draws the request id) the statement probes the result cache for the fingerprint
  // the query has on the schema last read for its dataset (recent_schemas.h).
  absl::StatusOr<LookedUp> LookUp(const store::Principal& principal, const query::QuerySpec& spec,
                                  bool server_id);
  // OK if `principal` needs no confirmation or its token still names it, unrevoked; else
  // UNAUTHENTICATED, as an unknown token.
  absl::Status ConfirmCaller(const store::Principal& principal);
  // Plans `spec` on `schema` (the fingerprint includes the canonical filter) and, with_release,
  // calibrates its mechanisms: every check that can refuse the query, before any data is read.
  absl::StatusOr<Prepared> Prepare(const query::QuerySpec& spec, const query::DatasetSchema& schema,
                                   bool with_release = true);
  // A per-block population's query: the blocks it pays, from its text and today, and its filter
  // restricted to them (INVALID_ARGUMENT when no started block is left; joins: UNIMPLEMENTED).
  absl::Status PayTimeBlocks(const query::DatasetSchema& schema, Prepared& q);
  absl::StatusOr<Prepared> PrepareOnSchema(const query::QuerySpec& spec,
                                           const query::DatasetSchema& schema, bool with_release);
  struct PreparedBatch {
    query::DatasetSchema schema;
    std::vector<Prepared> prepared;
    int64_t delta_units = 0;  // of the joint price; 0: none
    int64_t epsilon_sum_units = 0;
    int64_t delta_sum_units = 0;
    std::string fingerprint;  // of the whole batch: its request-id replay and cache key
  };
  // Authorises, then prepares every query of a batch (INVALID_ARGUMENT names "queries[i]").
  absl::StatusOr<PreparedBatch> PrepareBatch(const store::Principal& principal,
                                             const std::string& dataset,
                                             std::vector<query::QuerySpec> specs, double delta);
  static absl::StatusOr<BatchPrice> PriceOf(const PreparedBatch& batch);
  // Validates the caller's request id, or draws one into `request_id` when it is empty. True when
  // the id is the caller's.
  absl::StatusOr<bool> ResolveRequestId(std::string& request_id);
  // What differs between one query and a batch in the life RunCharged gives them.
  template <typename Outcome>
  struct RequestSteps {
    // The audit row to charge; RunCharged sets its request id.
    std::function<absl::StatusOr<store::Allocation>()> allocation;
    // The answer read back from a stored, answered allocation.
    std::function<absl::StatusOr<Outcome>(store::Allocation stored, store::BudgetState budget,
                                          bool replayed)>
        from_stored;
    // For a committed allocation: scan, noise, store the release once, return the stored answer.
    std::function<absl::StatusOr<Outcome>(const store::Allocation& paid, store::BudgetState budget,
                                          bool replayed)>
        answer;
    // Marks an answer served from the result cache.
    std::function<void(Outcome& out)> mark_cached;
  };
  // The skeleton Run and RunBatch share once the request is prepared and its id known: the answer
  // an earlier request with this id left, else (use_cache) the result cache, else the debit, then
  // the answer the charge paid for (defined in the .cc, its only user).
  template <typename Outcome>
  absl::StatusOr<Outcome> RunCharged(const store::Principal& principal,
                                     const query::DatasetSchema& schema,
                                     const std::string& fingerprint, const std::string& request_id,
                                     bool callers_id, bool use_cache,
                                     const store::ProbedCache* probed,
                                     const RequestSteps<Outcome>& steps);
  // Run and RunBatch once the request is prepared and its id known (steps 2 to 5 of Run).
  absl::StatusOr<QueryOutcome> RunPrepared(const store::Principal& principal,
                                           const query::DatasetSchema& schema, const Prepared& q,
                                           const std::string& request_id, bool callers_id,
                                           absl::Time deadline, const store::ProbedCache* probed);
  absl::StatusOr<BatchOutcome> RunPreparedBatch(const store::Principal& principal,
                                                const PreparedBatch& batch,
                                                const std::string& request_id, bool callers_id,
                                                absl::Time deadline, BatchCache cache);
  // A batch's answer read back from its stored allocation `a` (replayed, cached or just stored).
  static absl::StatusOr<BatchOutcome> BatchFromStored(const PreparedBatch& batch,
                                                      store::Allocation a,
                                                      store::BudgetState budget, bool replayed);
  // For `paid` (a committed, deferred allocation of `batch`): every query's scan and noise, the
  // answers stored once, and the stored answer returned (as Answer for one query).
  absl::StatusOr<BatchOutcome> AnswerBatch(const store::Principal& principal,
                                           const PreparedBatch& batch,
                                           const store::Allocation& paid, store::BudgetState budget,
                                           bool replayed, absl::Time deadline);
  // Scans and adds noise: the released values (they must not leave before they are stored).
  absl::StatusOr<NoisyRelease> Execute(const Prepared& q, absl::Time deadline);
  // For `paid` (a committed, deferred allocation of `q`): scan, noise, store the release once, and
  // return the stored answer. Any failure keeps the charge (ChargedButUnanswered in the .cc).
  absl::StatusOr<QueryOutcome> Answer(const Prepared& q, const query::DatasetSchema& schema,
                                      const store::Allocation& paid, store::BudgetState budget,
                                      bool replayed, absl::Time deadline);

  Stores stores_;
  dp::RandomSource* rng_;
  RecentSchemas recent_schemas_;
  std::function<int64_t()> today_;
  std::function<void(const std::string& dataset)> on_scan_data_error_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_QUERY_ENGINE_H_
