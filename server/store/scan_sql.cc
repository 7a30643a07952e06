#include "server/store/scan_sql.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/store/array_literal.h"
#include "server/store/bounding_sql.h"
#include "server/store/database.h"
#include "server/store/dataset_store.h"
#include "server/store/expression_sql.h"
#include "server/store/filter/filter_sql.h"
#include "server/store/join_sql.h"
#include "server/store/sharded_scan.h"
#include "server/store/sharded_table.h"

namespace dpq::store {
namespace {

// Text and float8 arrays as one bound parameter each (array_literal.h); doubles round-trip exactly.
std::string TextArrayLiteral(const std::vector<std::string>& values) {
  ArrayLiteral out;
  for (const std::string& v : values) out.AddText(v);
  return out.str();
}

std::string FloatArrayLiteral(const std::vector<double>& values) {
  ArrayLiteral out;
  for (double v : values) out.AddText(ExactDouble(v));
  return out.str();
}

// Builds one statement; see BuildScanStatement. The query nests as
//   SELECT aggregates FROM (SELECT *, bucket FROM (<ranked>) ranked WHERE rn <= K [AND pn <= M]) kept
// where <ranked> selects from the table (u, the clamped value c, group texts g_i, ranks), or, for
// per-unit pre-aggregation, reduces those rows to one clamped value per unit and group first.
class ScanBuilder {
 public:
  // Where the statement runs and what it reads.
  enum class Placement {
    kTable,          // the dataset's table (or a join's tables) on the coordinator
    kForeignBranch,  // on the coordinator, one shard's foreign partition, shaped for push-down
    kOnShard,        // on a shard itself, its own table (shard_fan_out.h)
  };
  // A shard's statement (`shard` for kForeignBranch) reads rows of committed loads only; a
  // kForeignBranch statement is written so that postgres_fdw runs all of it on the shard
  // (sharded_scan.h).
  ScanBuilder(const query::ScanPlan& plan, const query::filter::TypedFilter* filter,
              const std::string& seed, ScanArithmetic arithmetic,
              const std::function<std::string(const std::string&)>& quote,
              Placement placement = Placement::kTable, const std::string* shard = nullptr)
      : plan_(plan),
        filter_(filter),
        seed_(seed),
        math_(arithmetic),
        quote_(quote),
        placement_(placement),
        shard_(shard) {}

  absl::StatusOr<ScanStatement> Build() {
    pre_ = plan_.pre_aggregate;
    unit_ = quote_(plan_.unit_column);
    unit_ref_ = pre_ ? "u" : unit_;
    // Every parameter must appear in the statement (PostgreSQL cannot type an unused one).
    if (!plan_.value_column.empty() || ReadsExpressionValue() || pre_) {
      lo_ = Param(ExactDouble(plan_.clamp_lower), math_.type());
      hi_ = Param(ExactDouble(plan_.clamp_upper), math_.type());
    }
    inner_ = {absl::StrCat(unit_, " AS u")};
    RETURN_IF_ERROR(SelectValue());
    if (plan_.row_condition != nullptr) {
      ASSIGN_OR_RETURN(std::string condition, Expressions().Condition(plan_.row_condition->root));
      conditions_.push_back(absl::StrCat("(", condition, ") IS TRUE"));
    }
    RETURN_IF_ERROR(SelectGroups());
    std::vector<std::string> reduced = pre_ ? PerUnitReduction() : std::vector<std::string>{};
    if (!pre_) inner_.push_back(RowRankSelect(plan_, filter_ != nullptr, partition_by_));
    if (!group_refs_.empty()) (pre_ ? reduced : inner_).push_back(GroupRank());
    std::string kept = absl::StrCat("rn <= ", Param(absl::StrCat(plan_.max_contributions), "int"));
    if (!group_refs_.empty()) {
      absl::StrAppend(&kept, " AND pn <= ", Param(absl::StrCat(plan_.max_partitions), "int"));
    }
    if (placement_ != Placement::kTable) {
      conditions_.push_back(
          absl::StrCat(kLoadColumn, " <= ", Param(absl::StrCat(plan_.dataset_version), "bigint")));
    }
    if (filter_ != nullptr) {
      ASSIGN_OR_RETURN(SqlFragment fragment, RenderFilter(*filter_, next_param(), quote_));
      conditions_.push_back(fragment.sql);
      params_.insert(params_.end(), fragment.params.begin(), fragment.params.end());
    }
    std::string ranked = absl::StrCat(
        "SELECT ", absl::StrJoin(inner_, ", "), " FROM ", Source(),
        conditions_.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(conditions_, " AND ")));
    if (pre_) {
      std::vector<std::string> by = {"u"};
      by.insert(by.end(), group_refs_.begin(), group_refs_.end());
      ranked = absl::StrCat("SELECT ", absl::StrJoin(reduced, ", "), " FROM (", ranked,
                            ") unit_rows GROUP BY ", absl::StrJoin(by, ", "));
    }
    ScanStatement out;
    out.group_columns = group_refs_.size();
    out.buckets = plan_.bucket_edges.empty() ? 0 : plan_.bucket_edges.size() - 1;
    const std::string bucket = BucketExpression(out.buckets);
    const std::vector<std::string> select = Aggregates();
    out.sql = absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM (SELECT *, ", bucket,
                           " AS b FROM (", ranked, ") ranked WHERE ", kept, ") kept",
                           GroupClause(out.buckets > 0));
    out.params = std::move(params_);
    return out;
  }

 private:
  std::string Param(std::string value, absl::string_view cast) {
    params_.push_back(std::move(value));
    return absl::StrCat("$", params_.size(), "::", cast);
  }
  // The dataset's table, or a joined scan's tables as one subquery (join_sql.h).
  std::string Source() const {
    if (placement_ == Placement::kForeignBranch) {
      return ShardPartitionName(plan_.dataset_id, *shard_);
    }
    if (placement_ == Placement::kOnShard) return ShardLocalTableName(plan_.dataset_id);
    return plan_.join != nullptr ? JoinedSourceSql(*plan_.join, quote_)
                                 : DataTableName(plan_.dataset_id);
  }
  int next_param() const { return static_cast<int>(params_.size()) + 1; }

  ExpressionSql Expressions() {
    return ExpressionSql(
        math_.arithmetic(),
        [this](std::string value, absl::string_view cast) { return Param(std::move(value), cast); },
        quote_);
  }

  // A value expression whose value (not only its NULL test) the scan reads.
  bool ReadsExpressionValue() const {
    return plan_.value_expression != nullptr &&
           (pre_ || plan_.sum_values || plan_.sum_squares || !plan_.bucket_edges.empty());
  }

  // The inner select list's value: the clamped value c (or the raw value v, clamped wide, that a
  // pre-aggregation sums) of the value column or expression, and the condition that it is not
  // NULL. A count that reads no value (no sums, no buckets) selects c as NULL.
  absl::Status SelectValue() {
    std::string raw;
    if (plan_.value_expression != nullptr) {
      const query::expression::Expr& root = plan_.value_expression->root;
      const bool numeric = root.type == query::expression::ValueType::kInt64 ||
                           root.type == query::expression::ValueType::kFloat64;
      ASSIGN_OR_RETURN(raw, numeric ? Expressions().Numeric(root) : Expressions().Text(root));
      conditions_.push_back(absl::StrCat("(", raw, ") IS NOT NULL"));
      if (!numeric || !ReadsExpressionValue()) raw.clear();
    } else if (!plan_.value_column.empty()) {
      const std::string col = quote_(plan_.value_column);
      conditions_.push_back(absl::StrCat(col, " IS NOT NULL"));
      raw = math_.Raw(col);
    }
    if (raw.empty()) {
      if (!pre_) inner_.push_back(absl::StrCat("NULL::", math_.type(), " AS c"));
    } else if (!pre_) {
      inner_.push_back(absl::StrCat(math_.Clamp(raw, lo_, hi_), " AS c"));
    } else if (!plan_.pre_aggregate_count) {
      inner_.push_back(absl::StrCat(math_.ClampForPreAggregate(raw), " AS v"));
    }
    return absl::OkStatus();
  }

  // A date or timestamp column's calendar-bucket key: the first day, 'YYYY-MM-DD', of the bucket
  // of the column clamped into its declared bounds (so 'infinity' or year 200000 stored behind
  // dpq's back is a bound's bucket, never an error or a key outside the domain). Through
  // `timestamp`, never `timestamptz`: the bucket does not depend on the session's TimeZone, and
  // date_trunc('week') starts weeks on Monday (ISO).
  std::string CalendarKey(const std::string& column, const query::CalendarGrouping& g) {
    const absl::string_view type = g.type == query::ColumnType::kDate ? "date" : "timestamp";
    const std::string lower = Param(g.lower, type);
    const std::string clamped = ClampedCalendarSql(column, type, lower, Param(g.upper, type));
    return absl::StrCat("to_char(date_trunc('", query::CalendarBucketName(g.bucket), "', ", clamped,
                        "::timestamp), 'YYYY-MM-DD')");
  }

  // The group texts g_i (a column's text, or a group expression's), the window's partition and
  // the WHERE conditions on them (NULL groups, declared or requested key domains).
  absl::Status SelectGroups() {
    partition_by_ = {unit_};
    for (size_t i = 0; i < plan_.group_columns.size(); ++i) {
      const bool is_expression =
          i < plan_.group_expressions.size() && plan_.group_expressions[i] != nullptr;
      std::string key, nullable;
      if (is_expression) {
        ASSIGN_OR_RETURN(key, Expressions().Text(plan_.group_expressions[i]->root));
        key = absl::StrCat("(", key, ")");
        nullable = key;
      } else if (i < plan_.group_calendars.size() && plan_.group_calendars[i].has_value()) {
        nullable = quote_(plan_.group_columns[i]);
        key = CalendarKey(nullable, *plan_.group_calendars[i]);
      } else {
        nullable = quote_(plan_.group_columns[i]);
        key = absl::StrCat(nullable, "::text");
      }
      const std::string ref = absl::StrCat("g", i);
      inner_.push_back(absl::StrCat(key, " AS ", ref));
      // Partitioned by the same text the rows are grouped by: a unit keeps at most K rows per
      // released group whatever the column's type (typed and text equality differ for -0 and 0,
      // and for distinct doubles printed alike on a session with extra_float_digits <= 0).
      partition_by_.push_back(key);
      texts_.push_back(pre_ ? ref : key);
      group_refs_.push_back(ref);
      // NULL forms its own group in the first null_group_columns columns (planner.h).
      if (i >= plan_.null_group_columns)
        conditions_.push_back(absl::StrCat(nullable, " IS NOT NULL"));
      if (i < plan_.group_domains.size() && !plan_.group_domains[i].empty()) {
        conditions_.push_back(absl::StrCat(
            key, " = ANY(", Param(TextArrayLiteral(plan_.group_domains[i]), "text[]"), ")"));
      }
    }
    return absl::OkStatus();
  }

  // The reduction's select list: one clamped value per unit and group (its row count, the sum or
  // the mean of its wide-clamped raw values), ranked 1: it is the unit's only row of that group.
  std::vector<std::string> PerUnitReduction() const {
    std::string per_unit;
    if (plan_.pre_aggregate_count) {
      per_unit = absl::StrCat("count(*)::", math_.type());
    } else if (plan_.pre_aggregate_mean) {
      per_unit = math_.Mean("sum(v)", "count(*)");
    } else {
      per_unit = "sum(v)";
    }
    std::vector<std::string> reduced = {"u",
                                        absl::StrCat(math_.Clamp(per_unit, lo_, hi_), " AS c")};
    reduced.insert(reduced.end(), group_refs_.begin(), group_refs_.end());
    reduced.push_back("1 AS rn");
    return reduced;
  }

  // md5 over the unit and the length-prefixed values: a keyed, per-query random order of a unit's
  // groups; the values themselves break ties, so distinct groups get distinct ranks. The unit is
  // hashed too, so each unit's choice is an independent draw: hashing the values alone ranks the
  // groups in ONE order shared by every unit, and with M = 1 every unit with groups {a, b} would
  // keep the same one of them (all of a's units or none). The choice still depends only on the
  // unit's own rows and the seed, so the bound holds as before. A NULL unit (all NULL-unit rows
  // form one unit) hashes as "-": real ids print as "n:..."; a NULL group value alike.
  std::string GroupRank() {
    const std::string seed = Param(seed_, "text");
    std::string hashed = absl::StrCat(seed, " || coalesce(length(", unit_ref_,
                                      "::text)::text || ':' || ", unit_ref_, "::text, '-')");
    for (const std::string& t : texts_) {
      absl::StrAppend(&hashed, " || coalesce(length(", t, ")::text || ':' || ", t, ", '-')");
    }
    return absl::StrCat("dense_rank() OVER (PARTITION BY ", unit_ref_, " ORDER BY md5(", hashed,
                        "), ", absl::StrJoin(texts_, ", "), ") AS pn");
  }

  // width_bucket over the sorted edges counts the edges <= c; clamped values lie in [e0, en], so
  // 1..n+1, and en joins the last bucket. The comparison is exact in float8 for either arithmetic
  // (a clamped value is a stored double or a bound); the lower clamp to 1 keeps a value that
  // ToFloat8 flushed to 0 below a tiny positive e0 in the first bucket, where its clamp put it.
  // int4larger / int4smaller, not greatest / least, which postgres_fdw never ships.
  std::string BucketExpression(size_t buckets) {
    if (buckets == 0) return "NULL::int";
    return absl::StrCat("int4larger(int4smaller(width_bucket(", math_.ToFloat8("c"), ", ",
                        Param(FloatArrayLiteral(plan_.bucket_edges), "float8[]"), "), ", buckets,
                        "), 1) - 1");
  }

  // The outer select list (ScanStatement's result columns).
  std::vector<std::string> Aggregates() {
    std::vector<std::string> select = group_refs_;
    const bool bucketed = !plan_.bucket_edges.empty();
    if (placement_ == Placement::kForeignBranch) {
      // A shard's statement groups by b alone (no GROUPING SETS or GROUPING(), which postgres_fdw
      // does not ship), and selects only what the coordinator reads (ShardedScanStatement): an
      // unused column would keep a projection between the Append and the Foreign Scan, which
      // then no longer runs asynchronously.
      if (bucketed) select.push_back("b");
    } else {
      select.push_back(bucketed ? "b" : "NULL::int");
      select.push_back(bucketed ? "GROUPING(b)" : "1");
    }
    select.push_back("count(*)");
    std::string sum = "0::float8", sum_sq = "0::float8";
    if (plan_.sum_values || plan_.sum_squares) {
      const std::string centred =
          absl::StrCat("c - ", Param(ExactDouble(plan_.center), math_.type()));
      if (plan_.sum_values) sum = math_.ToFloat8(math_.Sum(centred));
      if (plan_.sum_squares) sum_sq = math_.ToFloat8(math_.Sum(math_.Square(centred)));
    }
    select.push_back(sum);
    select.push_back(sum_sq);
    select.push_back(
        plan_.count_units ? "count(DISTINCT u) + max(CASE WHEN u IS NULL THEN 1 ELSE 0 END)" : "0");
    return select;
  }

  std::string GroupClause(bool bucketed) const {
    const std::string groups = absl::StrJoin(group_refs_, ", ");
    if (bucketed && placement_ == Placement::kForeignBranch) {
      return absl::StrCat(" GROUP BY ", groups, group_refs_.empty() ? "" : ", ", "b");
    }
    if (bucketed) {
      return absl::StrCat(" GROUP BY GROUPING SETS ((", groups, group_refs_.empty() ? "" : ", ",
                          "b), (", groups, "))");
    }
    return group_refs_.empty() ? "" : absl::StrCat(" GROUP BY ", groups);
  }

  const query::ScanPlan& plan_;
  const query::filter::TypedFilter* filter_;
  const std::string& seed_;
  SafeArithmetic math_;
  const std::function<std::string(const std::string&)>& quote_;
  const Placement placement_;
  const std::string* shard_;
  std::vector<std::string> params_;
  bool pre_ = false;
  std::string unit_, unit_ref_, lo_, hi_;
  std::vector<std::string> inner_, conditions_, partition_by_, texts_, group_refs_;
};

}  // namespace

absl::string_view BoundingModeName(BoundingMode mode) {
  switch (mode) {
    case BoundingMode::kRandomWindow: return "random_window";
    case BoundingMode::kStoredRank: return "stored_rank";
    case BoundingMode::kPerUnitPreAggregate: return "per_unit_pre_aggregate";
  }
  return "random_window";
}

BoundingMode BoundingModeOf(const query::ScanPlan& plan, bool has_filter) {
  if (plan.pre_aggregate) return BoundingMode::kPerUnitPreAggregate;
  return UsesStoredRank(plan, has_filter) ? BoundingMode::kStoredRank : BoundingMode::kRandomWindow;
}

absl::StatusOr<ScanStatement> BuildScanStatement(
    const query::ScanPlan& plan, const query::filter::TypedFilter* filter,
    const std::string& partition_seed, ScanArithmetic arithmetic,
    const std::function<std::string(const std::string&)>& quote_name) {
  if (plan.shards.empty()) {
    return ScanBuilder(plan, filter, partition_seed, arithmetic, quote_name).Build();
  }
  if (!PushesDownWhole(plan, filter != nullptr)) {
    return absl::InternalError(
        "this scan of a sharded dataset does not push down whole: it runs on each shard "
        "(BuildShardLocalScanStatement)");
  }
  std::vector<ScanStatement> branches;
  for (const std::string& shard : plan.shards) {
    ASSIGN_OR_RETURN(ScanStatement branch,
                     ScanBuilder(plan, filter, partition_seed, arithmetic, quote_name,
                                 ScanBuilder::Placement::kForeignBranch, &shard)
                         .Build());
    branches.push_back(std::move(branch));
  }
  return ShardedScanStatement(std::move(branches));
}

absl::StatusOr<ScanStatement> BuildShardLocalScanStatement(
    const query::ScanPlan& plan, const query::filter::TypedFilter* filter,
    const std::string& partition_seed, ScanArithmetic arithmetic,
    const std::function<std::string(const std::string&)>& quote_name) {
  if (plan.shards.empty() || plan.join != nullptr) {
    return absl::InternalError("a shard-local scan needs a sharded dataset's plan without a join");
  }
  return ScanBuilder(plan, filter, partition_seed, arithmetic, quote_name,
                     ScanBuilder::Placement::kOnShard)
      .Build();
}

}  // namespace dpq::store
