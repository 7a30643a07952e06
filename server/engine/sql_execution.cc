#include "server/engine/sql_execution.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/sql/join_resolution.h"
#include "server/sql/parser.h"

namespace dpq::engine {
namespace {

struct CompiledScript {
  std::string dataset;
  std::string population;                           // the population charged (ExplainSql says it)
  std::shared_ptr<const query::JoinRequest> join;   // null: one dataset
  std::shared_ptr<const query::JoinSource> source;  // the resolved join; null: one dataset
  JoinReport join_report;                           // what ExplainSql states of the join
  std::vector<sql::CompiledStatement> statements;
  std::vector<query::QuerySpec> specs;  // every statement's parts, in order
  double epsilon = 0;
  double delta = 0;
};

// The tables every statement reads (null: one dataset, no join); a script reads one set of tables
// (one batch, one ledger).
absl::StatusOr<std::shared_ptr<query::JoinRequest>> ScriptTables(const sql::Script& script) {
  std::shared_ptr<query::JoinRequest> first = sql::JoinTablesOf(script.statements[0]);
  const std::string text = first != nullptr ? first->CanonicalText() : "";
  for (const sql::Statement& s : script.statements) {
    std::shared_ptr<query::JoinRequest> tables = sql::JoinTablesOf(s);
    if ((tables != nullptr ? tables->CanonicalText() : "") != text) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sql: ", sql::FormatPosition(s.table_pos),
          ": every statement of a script reads the same tables (a batch is one question)"));
    }
  }
  return first;
}

// Parse errors come first (they depend on the text alone), then the dataset's authorisation
// (NOT_FOUND / PERMISSION_DENIED as for flag queries; every private table of a join), then the
// analysis against its schema (a join's rules first, sql/join_resolution.h).
absl::StatusOr<CompiledScript> Compile(QueryEngine& engine, const store::Principal& principal,
                                       const std::string& text, double confidence) {
  ASSIGN_OR_RETURN(sql::Script script, sql::Parse(text));
  CompiledScript out;
  ASSIGN_OR_RETURN(out.dataset, sql::DatasetOf(script));
  ASSIGN_OR_RETURN(std::shared_ptr<query::JoinRequest> tables, ScriptTables(script));
  query::DatasetSchema schema;
  std::vector<query::DatasetSchema> joined_tables;
  if (tables == nullptr) {
    ASSIGN_OR_RETURN(schema, engine.QueriedDataset(principal, out.dataset));
    out.population = schema.population;
  } else {
    ASSIGN_OR_RETURN(joined_tables, engine.JoinedTables(principal, *tables));
  }
  for (const sql::Statement& s : script.statements) {
    sql::CompiledStatement c;
    std::shared_ptr<const query::JoinRequest> join;
    if (tables == nullptr) {
      ASSIGN_OR_RETURN(c, sql::Analyze(s, schema));
    } else {
      ASSIGN_OR_RETURN(sql::ResolvedJoin resolved, sql::ResolveJoin(s, joined_tables));
      ASSIGN_OR_RETURN(c, sql::AnalyzeJoin(resolved));
      join = resolved.request;
      out.dataset = resolved.schema.name;  // the first private table: the batch's dataset
      out.population = resolved.schema.population;
      out.join = resolved.request;
      out.source = resolved.schema.join;
      out.join_report = JoinReportOf(resolved.schema);
    }
    // Every part reads the join, both where the script runs (specs) and where ExplainSql plans
    // each statement's parts one by one (statements).
    for (query::QuerySpec& part : c.parts) part.join = join;
    for (query::QuerySpec spec : c.parts) {
      spec.confidence = confidence;
      out.specs.push_back(std::move(spec));
    }
    out.epsilon += c.epsilon;
    out.delta += c.delta;
    out.statements.push_back(std::move(c));
  }
  if (out.specs.size() > 1000) {
    return absl::InvalidArgumentError("sql: a script may hold at most 1000 aggregates in all");
  }
  return out;
}

absl::StatusOr<double> ConfidenceOrDefault(double confidence) {
  if (confidence == 0) return kDefaultSqlConfidence;
  if (!(confidence > 0 && confidence < 1)) {
    return absl::InvalidArgumentError("confidence must lie in (0, 1)");
  }
  return confidence;
}

// Checked before the script is parsed, so a bad value is refused whatever the statement.
absl::Status CheckJointDelta(double joint_delta) {
  if (!(joint_delta >= 0 && joint_delta < 1)) {
    return absl::InvalidArgumentError(
        "joint_delta must lie in [0, 1): the delta of the joint price (0: the parts' charges add up)");
  }
  return absl::OkStatus();
}

// One part's released rows by group key, in release order.
struct PartRows {
  std::map<std::vector<std::string>, std::vector<const ReleasedRow*>> by_key;
  std::vector<std::vector<std::string>> order;
  const std::vector<ComponentReport>* components = nullptr;  // the part's noise, every row's
};

PartRows IndexRows(const QueryOutcome& answer) {
  PartRows p;
  p.components = &answer.components;
  for (const ReleasedRow& r : answer.rows) {
    auto [it, fresh] = p.by_key.try_emplace(r.key);
    if (fresh) p.order.push_back(r.key);
    it->second.push_back(&r);
  }
  return p;
}

// A histogram part releases, per key, one row per bin. The statement's rows are keyed by the
// bin too: `bin_key(i, row)` is appended to the key, so parts line up by (group, bin).
// GROUP BY WIDTH_BUCKET: the bucket number 1..n. max_rows_contributed with GROUP BY a text
// column: the row's category label.
template <typename BinKey>
PartRows KeyedByBin(const PartRows& p, BinKey bin_key) {
  PartRows out;
  out.components = p.components;
  for (const auto& key : p.order) {
    const std::vector<const ReleasedRow*>& rows = p.by_key.at(key);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<std::string> binned = key;
      binned.push_back(bin_key(i, *rows[i]));
      out.by_key[binned].push_back(rows[i]);
      out.order.push_back(std::move(binned));
    }
  }
  return out;
}

SqlCell Number(double v) {
  SqlCell c;
  c.kind = std::isfinite(v) ? SqlCell::Kind::kNumber : SqlCell::Kind::kNull;
  c.number = v;
  return c;
}

class Shaper {
 public:
  Shaper(const sql::CompiledStatement& st, std::vector<PartRows> parts)
      : st_(st), parts_(std::move(parts)) {
    if (st_.width_bucket) {
      for (PartRows& p : parts_) {
        p = KeyedByBin(p, [](size_t i, const ReleasedRow&) { return std::to_string(i + 1); });
      }
    }
    if (st_.category_histogram) {
      for (PartRows& p : parts_) {
        p = KeyedByBin(p, [](size_t, const ReleasedRow& r) { return r.label; });
      }
    }
  }

  SqlResultSet Shape() {
    SqlResultSet out;
    out.columns = st_.columns;
    // A group is released when every aggregate of the statement released it (each part selects
    // its groups on its own when the keys are not declared; with declared keys all agree).
    for (const auto& key : parts_[0].order) {
      bool everywhere = true;
      for (const PartRows& p : parts_) everywhere = everywhere && p.by_key.count(key) > 0;
      if (!everywhere) continue;
      std::vector<SqlCell> row;
      for (const sql::OutputColumn& c : st_.columns) row.push_back(Eval(c.expr, key));
      out.rows.push_back(std::move(row));
    }
    if (!st_.order_by.empty()) {
      std::stable_sort(out.rows.begin(), out.rows.end(),
                       [this](const std::vector<SqlCell>& a, const std::vector<SqlCell>& b) {
                         for (const sql::OrderKey& k : st_.order_by) {
                           const int c = Compare(a[k.column], b[k.column]);
                           if (c != 0) return k.descending ? c > 0 : c < 0;
                         }
                         return false;
                       });
    }
    if (st_.limit.has_value() && out.rows.size() > static_cast<size_t>(*st_.limit)) {
      out.rows.resize(static_cast<size_t>(*st_.limit));
    }
    return out;
  }

 private:
  // NULL sorts first, then numbers, then text (BigQuery's ascending order puts NULLs first).
  static int Compare(const SqlCell& a, const SqlCell& b) {
    const auto rank = [](const SqlCell& c) {
      return c.kind == SqlCell::Kind::kNull ? 0 : c.kind == SqlCell::Kind::kNumber ? 1 : 2;
    };
    if (rank(a) != rank(b)) return rank(a) < rank(b) ? -1 : 1;
    if (a.kind == SqlCell::Kind::kNumber)
      return a.number < b.number ? -1 : a.number > b.number ? 1 : 0;
    if (a.kind == SqlCell::Kind::kText) return a.text.compare(b.text);
    return 0;
  }

  SqlCell Eval(const sql::OutputExpr& e, const std::vector<std::string>& key) const {
    using K = sql::OutputExpr::Kind;
    switch (e.kind) {
      case K::kPart: {
        const std::vector<const ReleasedRow*>& rows = parts_[e.index].by_key.at(key);
        const sql::PartInfo& info = st_.part_info[e.index];
        if (info.array) {
          SqlCell c;
          c.kind = SqlCell::Kind::kArray;
          for (const ReleasedRow* r : rows) c.array.push_back(r->value);
          return c;
        }
        // A PERCENTILE_CONT sharing its part with others reads its own level's row (a part
        // releases one row per level, in order, for every key).
        if (static_cast<size_t>(e.level) >= rows.size()) return SqlCell{};
        const ReleasedRow& r = *rows[e.level];
        // COUNT answers a whole number of rows (rounding is post-processing of the noisy count).
        SqlCell c = Number(info.function == "COUNT" ? std::round(r.value) : r.value);
        c.released = true;
        c.noise_scale = r.noise_scale;
        if (parts_[e.index].components != nullptr) c.components = *parts_[e.index].components;
        c.ci_lower = r.has_interval ? r.ci_lower : r.value;
        c.ci_upper = r.has_interval ? r.ci_upper : r.value;
        return c;
      }
      case K::kKey: {
        const std::string& v = key[e.index];
        if (query::IsNullGroupKey(v)) return SqlCell{};  // the NULL group (planner.h)
        SqlCell c;
        if (st_.group_types[e.index] == query::ColumnType::kText) {
          c.kind = SqlCell::Kind::kText;
          c.text = v;
          return c;
        }
        return Number(std::strtod(v.c_str(), nullptr));
      }
      case K::kNumber: return Number(e.number);
      case K::kString: {
        SqlCell c;
        c.kind = SqlCell::Kind::kText;
        c.text = e.text;
        return c;
      }
      case K::kNull: return SqlCell{};
      case K::kNegate: {
        SqlCell inner = Eval(e.children[0], key);
        if (inner.kind != SqlCell::Kind::kNumber) return SqlCell{};
        return Number(-inner.number);
      }
      case K::kBinary: {
        const SqlCell a = Eval(e.children[0], key);
        const SqlCell b = Eval(e.children[1], key);
        if (a.kind != SqlCell::Kind::kNumber || b.kind != SqlCell::Kind::kNumber) return SqlCell{};
        switch (e.op) {
          case '+': return Number(a.number + b.number);
          case '-': return Number(a.number - b.number);
          case '*': return Number(a.number * b.number);
          default:
            // Division by a zero noisy value is NULL, never an error: the release is paid already.
            return b.number == 0 ? SqlCell{} : Number(a.number / b.number);
        }
      }
    }
    return SqlCell{};
  }

  const sql::CompiledStatement& st_;
  std::vector<PartRows> parts_;
};

// A mean's or variance's error cannot be stated before the scan (it divides by the group's
// count): say what `error` measures rather than report the sum's as the value's.
ErrorBasis ErrorBasisOf(const query::QuerySpec& spec) {
  switch (spec.aggregate) {
    case query::AggregateKind::kQuantile: return ErrorBasis::kRank;
    case query::AggregateKind::kMean: return ErrorBasis::kPerCount;
    case query::AggregateKind::kVariance:
    case query::AggregateKind::kStddev: return ErrorBasis::kNotStated;
    default: return ErrorBasis::kValue;
  }
}

}  // namespace

absl::string_view ErrorBasisName(ErrorBasis basis) {
  switch (basis) {
    case ErrorBasis::kValue: return "value";
    case ErrorBasis::kRank: return "rank";
    case ErrorBasis::kPerCount: return "per_count";
    case ErrorBasis::kNotStated: return "not_stated";
  }
  return "value";
}

absl::StatusOr<SqlOutcome> ExecuteSql(QueryEngine& engine, const store::Principal& principal,
                                      const std::string& statement, std::string request_id,
                                      const SqlOptions& options, absl::Time deadline) {
  ASSIGN_OR_RETURN(const double confidence, ConfidenceOrDefault(options.confidence));
  RETURN_IF_ERROR(CheckJointDelta(options.joint_delta));
  ASSIGN_OR_RETURN(CompiledScript script, Compile(engine, principal, statement, confidence));
  SqlOutcome out;
  out.dataset = script.dataset;
  out.confidence = confidence;
  std::vector<QueryOutcome> answers;
  if (script.specs.size() == 1) {
    ASSIGN_OR_RETURN(QueryOutcome one,
                     engine.Run(principal, script.specs[0], request_id, deadline));
    out.request_id = one.allocation.request_id;
    out.cached = one.cached;
    out.replayed = one.replayed;
    out.epsilon = one.cached ? 0 : one.allocation.epsilon();
    out.delta = one.cached ? 0 : one.allocation.delta();
    out.epsilon_sum = out.epsilon;
    out.delta_sum = out.delta;
    out.budget = one.budget;
    answers.push_back(std::move(one));
  } else {
    ASSIGN_OR_RETURN(BatchOutcome batch,
                     engine.RunBatch(principal, script.dataset, script.specs, options.joint_delta,
                                     request_id, deadline, QueryEngine::BatchCache::kUse));
    out.request_id = batch.allocation.request_id;
    out.replayed = batch.replayed;
    out.cached = batch.cached;
    out.epsilon = batch.cached ? 0 : batch.allocation.epsilon();
    out.delta = batch.cached ? 0 : batch.allocation.delta();
    out.epsilon_sum = batch.cached ? 0 : query::EpsilonFromUnits(batch.epsilon_sum_units);
    out.delta_sum = batch.cached ? 0 : query::DeltaFromUnits(batch.delta_sum_units);
    out.budget = batch.budget;
    answers = std::move(batch.answers);
  }
  size_t next = 0;
  for (const sql::CompiledStatement& st : script.statements) {
    std::vector<PartRows> parts;
    for (size_t i = 0; i < st.parts.size(); ++i) parts.push_back(IndexRows(answers[next++]));
    out.results.push_back(Shaper(st, std::move(parts)).Shape());
  }
  return out;
}

namespace {

// A joined part's columns as the statement writes them (`v.cost`, not the joined schema's
// `v__cost`): what explain shows, after everything was planned on the joined schema.
void WriteNamesAsWritten(const query::JoinSource& join, SqlPlanPart& part) {
  part.spec.column = join.WrittenNames(part.spec.column);
  part.spec.where = join.WrittenNames(part.spec.where);
  for (std::string& key : part.spec.group_by) key = join.WrittenNames(key);
  ExpressionReport& e = part.accuracy.report.value_expression;
  e.canonical = join.WrittenNames(e.canonical);
  for (std::string& line : e.derivation) line = join.WrittenNames(line);
}

}  // namespace

absl::StatusOr<SqlExplanation> ExplainSql(QueryEngine& engine, const store::Principal& principal,
                                          const std::string& statement, const SqlOptions& options) {
  ASSIGN_OR_RETURN(const double confidence, ConfidenceOrDefault(options.confidence));
  RETURN_IF_ERROR(CheckJointDelta(options.joint_delta));
  ASSIGN_OR_RETURN(CompiledScript script, Compile(engine, principal, statement, confidence));
  SqlExplanation out;
  out.dataset = script.dataset;
  out.population = script.population;
  out.join = script.join_report;
  out.epsilon = out.epsilon_sum = script.epsilon;
  out.delta = out.delta_sum = script.delta;
  out.confidence = confidence;
  for (size_t s = 0; s < script.statements.size(); ++s) {
    const sql::CompiledStatement& st = script.statements[s];
    for (size_t i = 0; i < st.parts.size(); ++i) {
      SqlPlanPart part;
      part.statement = static_cast<int>(s);
      part.function = st.part_info[i].function;
      part.spec = st.parts[i];
      part.spec.confidence = confidence;
      // The same planning and calibration a run does (every refusal a run could give), no scan.
      ASSIGN_OR_RETURN(part.accuracy, engine.PlanAccuracy(principal, part.spec, 0, 0));
      part.error_basis = ErrorBasisOf(part.spec);
      if (part.error_basis == ErrorBasis::kNotStated) part.accuracy.error = 0;
      if (script.source != nullptr) WriteNamesAsWritten(*script.source, part);
      out.parts.push_back(std::move(part));
    }
  }
  if (script.specs.size() > 1) {
    // The price RunBatch would charge, from the same prepared parts (no scan).
    ASSIGN_OR_RETURN(BatchPrice price, engine.PriceBatch(principal, script.dataset, script.specs,
                                                         options.joint_delta));
    out.epsilon = query::EpsilonFromUnits(price.epsilon_units);
    out.delta = query::DeltaFromUnits(price.delta_units);
    out.epsilon_sum = query::EpsilonFromUnits(price.epsilon_sum_units);
    out.delta_sum = query::DeltaFromUnits(price.delta_sum_units);
  }
  return out;
}

}  // namespace dpq::engine
