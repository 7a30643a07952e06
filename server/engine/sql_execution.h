// Runs a DP SQL script (server/sql) through the query engine: parse, authorise, compile onto
// QuerySpecs, then one engine call for the whole script, so every aggregate of every statement is
// priced, charged and audited together (one allocation, one audit row) exactly as the flag queries
// it compiles to. A script of one aggregate runs as that one flag query (QueryEngine::Run: its
// result cache and request-id replay); larger ones as a batch (QueryEngine::RunBatch: request-id
// replay). The released rows are then shaped as the SELECT asks (post-processing only: arithmetic,
// ORDER BY, LIMIT on released rows). No gRPC here.
#ifndef DPQ_SERVER_ENGINE_SQL_EXECUTION_H_
#define DPQ_SERVER_ENGINE_SQL_EXECUTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/engine/plan_report.h"
#include "server/engine/query_engine.h"
#include "server/sql/analyzer.h"

namespace dpq::engine {

// One output value. Released aggregates carry their noise scale and interval (an interval only
// for a bare aggregate column; arithmetic over them has none).
struct SqlCell {
  enum class Kind { kNull, kNumber, kText, kArray };
  Kind kind = Kind::kNull;
  double number = 0;
  std::string text;
  std::vector<double> array;
  bool released = false;  // a bare released aggregate: noise_scale and interval below hold
  double noise_scale = 0;
  double ci_lower = 0;
  double ci_upper = 0;
  // Every noise component of the part it reads (a variance's sum, sum of squares and count).
  std::vector<ComponentReport> components;
};

struct SqlResultSet {
  std::vector<sql::OutputColumn> columns;  // name and type (expr unused by callers)
  std::vector<std::vector<SqlCell>> rows;
};

struct SqlOutcome {
  std::string dataset;
  std::string request_id;
  std::vector<SqlResultSet> results;  // one per statement
  double epsilon = 0;                 // charged (0 when cached)
  double delta = 0;
  double epsilon_sum = 0;  // the parts' own charges added up (what joint pricing is compared with)
  double delta_sum = 0;
  double confidence = 0.95;
  store::BudgetState budget;
  bool cached = false;
  bool replayed = false;
};

// What an explained part's `accuracy.error` measures.
//  kValue: the released value's interval half-width (COUNT, SUM).
//  kRank: a quantile's rank error, in rows (PERCENTILE_CONT, APPROX_QUANTILES).
//  kPerCount: AVG's noisy (centred) sum's half-width; the mean's error is about error / N for a
//    group of N (units with per-unit bounds, kept rows with row bounds), N unknown before the scan,
//    and the noisy count divided by adds its own share (`dpqctl plan --expected-count` plans it).
//  kNotStated: VAR_POP / STDDEV_POP: no single number without the group's count and the data's
//    moments; error is 0 and means nothing.
enum class ErrorBasis { kValue, kRank, kPerCount, kNotStated };
absl::string_view ErrorBasisName(ErrorBasis basis);  // "value", "rank", "per_count", "not_stated"

// One aggregate's plan, as ExplainSql reports it: accuracy.report holds every noise component,
// the quantile method, the released keys and the value's per-row expression.
struct SqlPlanPart {
  int statement = 0;
  std::string function;  // "COUNT", "AVG", ...
  query::QuerySpec spec;
  AccuracyPlan accuracy;
  ErrorBasis error_basis = ErrorBasis::kValue;
};

struct SqlExplanation {
  std::string dataset;
  std::string population;  // whose one ledger a run charges (every dataset of it shares it)
  JoinReport join;         // present for a join
  std::vector<SqlPlanPart> parts;
  double epsilon = 0;  // what running the script would charge (the joint price when it is lower)
  double delta = 0;
  double epsilon_sum = 0;  // the parts' own charges added up
  double delta_sum = 0;
  double confidence = 0.95;
};

inline constexpr double kDefaultSqlConfidence = 0.95;

// How a script is run: the interval level and the joint price's delta.
struct SqlOptions {
  double confidence = 0;  // 0 means 0.95
  // Delta of the joint (RDP/PLD) price of a script of several aggregates, as QueryBatchRequest's
  // delta: the script is charged the smaller of that price and the parts' charges added up.
  // 0: the parts' charges add up. A script of one aggregate is charged its own price.
  double joint_delta = 0;
};

// Errors: the parser's and analyser's (INVALID_ARGUMENT / UNIMPLEMENTED with line and column),
// then those of QueryEngine::Run / RunBatch; none charges.
absl::StatusOr<SqlOutcome> ExecuteSql(QueryEngine& engine, const store::Principal& principal,
                                      const std::string& statement, std::string request_id,
                                      const SqlOptions& options, absl::Time deadline);

// Everything ExecuteSql would check and charge, without charging or reading any row.
absl::StatusOr<SqlExplanation> ExplainSql(QueryEngine& engine, const store::Principal& principal,
                                          const std::string& statement, const SqlOptions& options);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_SQL_EXECUTION_H_
