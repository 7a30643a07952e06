#include "server/store/aggregate_scanner.h"

#include <map>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/store/bounding_sql.h"
#include "server/store/dataset_store.h"
#include "server/store/filter/filter_sql.h"
#include "server/store/one_trip_transaction.h"

namespace dpq::store {
namespace {

// A PostgreSQL array literal of text values, each double-quoted with '"' and '\' escaped, bound as
// one parameter (never spliced into the statement).
std::string TextArrayLiteral(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('"');
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

std::string FloatArrayLiteral(const std::vector<double>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) absl::StrAppend(&out, i ? "," : "", ExactDouble(values[i]));
  out.push_back('}');
  return out;
}

// Bound parameters, numbered in order of use.
class Params {
 public:
  std::string Add(std::string value, absl::string_view cast) {
    values_.push_back(std::move(value));
    return absl::StrCat("$", values_.size(), "::", cast);
  }
  std::vector<std::string>& values() { return values_; }
  int next() const { return static_cast<int>(values_.size()) + 1; }

 private:
  std::vector<std::string> values_;
};

}  // namespace

absl::StatusOr<ScanResult> AggregateScanner::Scan(const query::ScanPlan& plan, absl::Time deadline,
                                                  const query::filter::TypedFilter* filter,
                                                  const std::string& partition_seed) {
  ScanResult out;
  const bool grouped = !plan.group_columns.empty();
  const bool bucketed = !plan.bucket_edges.empty();
  const size_t n_buckets = bucketed ? plan.bucket_edges.size() - 1 : 0;
  const auto scan = [&](pqxx::connection& c) -> absl::Status {
    out = ScanResult{};
    // Least privilege (docs/database-roles.md): the raw rows are read in a READ ONLY transaction
    // under dpq_scan, which can read the dataset tables and nothing else, so even a flaw in the
    // SQL built below could neither write nor read a ledger, an audit row or a token hash.
    // BEGIN and the settings go in one round trip (one_trip_transaction.h).
    std::string settings = absl::StrCat("SET LOCAL ROLE ", kScanRole);
    if (deadline != absl::InfiniteFuture()) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return absl::DeadlineExceededError("aggregate scan: deadline already passed");
      absl::StrAppend(&settings, "; SET LOCAL statement_timeout = ", ms);  // an integer we computed
    }
    OneTripTransaction read_only(c, OneTripTransaction::Mode::kReadOnly, settings);
    pqxx::transaction_base& tx = read_only.tx();
    // Identifiers come from the stored schema (validated at creation) and are quoted; every value
    // is a bound parameter.
    const auto quote = [&tx](const std::string& name) { return tx.quote_name(name); };
    const std::string unit = quote(plan.unit_column);
    Params params;
    std::vector<std::string> inner = {absl::StrCat(unit, " AS u")};
    std::vector<std::string> conditions;
    std::vector<std::string> group_refs;  // g0, g1, ... in the outer query
    std::string c_expr = "NULL::float8";
    std::string lo, hi;
    if (!plan.value_column.empty() || plan.pre_aggregate) {
      lo = params.Add(ExactDouble(plan.clamp_lower), "float8");
      hi = params.Add(ExactDouble(plan.clamp_upper), "float8");
    }
    if (!plan.value_column.empty()) {
      const std::string col = quote(plan.value_column);
      c_expr = absl::StrCat("least(greatest(", col, "::float8, ", lo, "), ", hi, ")");
      conditions.push_back(absl::StrCat(col, " IS NOT NULL"));
    }
    // Per-unit pre-aggregation (planner.h): the rows are first reduced to one value per unit and
    // group, so `u` and `gi` are referenced by name above that reduction.
    const bool pre = plan.pre_aggregate;
    const std::string unit_ref = pre ? "u" : unit;
    if (pre) {
      inner = {absl::StrCat(unit, " AS u")};
      // A pre-aggregated count reads no value: its per-unit value is count(*) of the unit's rows.
      if (!plan.pre_aggregate_count) {
        inner.push_back(absl::StrCat(quote(plan.value_column), "::float8 AS v"));
      }
    } else {
      inner.push_back(absl::StrCat(c_expr, " AS c"));
    }
    std::vector<std::string> partition_by = {unit};
    std::vector<std::string> texts;  // the group values as text, as the ranking sees them
    for (size_t i = 0; i < plan.group_columns.size(); ++i) {
      const std::string g = quote(plan.group_columns[i]);
      const std::string ref = absl::StrCat("g", i);
      inner.push_back(absl::StrCat(g, "::text AS ", ref));
      // Partitioned by the same text the rows are grouped by: a unit keeps at most K rows per
      // released group whatever the column's type (typed and text equality differ for -0 and 0,
      // and for distinct doubles printed alike on a session with extra_float_digits <= 0).
      partition_by.push_back(absl::StrCat(g, "::text"));
      texts.push_back(pre ? ref : absl::StrCat(g, "::text"));
      group_refs.push_back(ref);
      // NULL forms its own group in the first null_group_columns columns (planner.h).
      if (i >= plan.null_group_columns) conditions.push_back(absl::StrCat(g, " IS NOT NULL"));
      if (i < plan.group_domains.size() && !plan.group_domains[i].empty()) {
        conditions.push_back(absl::StrCat(
            g, "::text = ANY(", params.Add(TextArrayLiteral(plan.group_domains[i]), "text[]"), ")"));
      }
    }
    // The reduction's select list: one clamped value per unit and group, ranked 1 (it is the
    // unit's only row of that group, so K = 1 keeps it).
    std::vector<std::string> reduced;
    if (pre) {
      const char* per_unit = plan.pre_aggregate_count  ? "count(*)::float8"
                             : plan.pre_aggregate_mean ? "avg(v)"
                                                       : "sum(v)";
      reduced = {"u", absl::StrCat("least(greatest(", per_unit, ", ", lo, "), ", hi, ") AS c")};
      for (const std::string& ref : group_refs) reduced.push_back(ref);
      reduced.push_back("1 AS rn");
    } else {
      // rn: the stored per-unit rank when it applies, else a random order (bounding_sql.h says why
      // both keep at most K rows per unit and stay private).
      inner.push_back(RowRankSelect(plan, filter != nullptr, partition_by));
    }
    if (grouped) {
      const std::string seed = params.Add(partition_seed, "text");
      // md5 over the unit and the length-prefixed values: a keyed, per-query random order of a
      // unit's groups; the values themselves break ties, so distinct groups get distinct ranks.
      // The unit is hashed too, so each unit's choice is an independent draw: hashing the values
      // alone ranks the groups in ONE order shared by every unit, and with M = 1 every unit with
      // groups {a, b} would keep the same one of them (all of a's units or none). The choice
      // still depends only on the unit's own rows and the seed, so the bound holds as before.
      // A NULL unit (all NULL-unit rows form one unit) hashes as "-": real ids print as "n:...";
      // a NULL group value alike (coalesce leaves every non-NULL value's hash as it was).
      std::string hashed = absl::StrCat(seed, " || coalesce(length(", unit_ref, "::text)::text || ':' || ",
                                        unit_ref, "::text, '-')");
      for (const std::string& t : texts) {
        absl::StrAppend(&hashed, " || coalesce(length(", t, ")::text || ':' || ", t, ", '-')");
      }
      (pre ? reduced : inner)
          .push_back(absl::StrCat("dense_rank() OVER (PARTITION BY ", unit_ref, " ORDER BY md5(",
                                  hashed, "), ", absl::StrJoin(texts, ", "), ") AS pn"));
    }
    const std::string k_param = params.Add(absl::StrCat(plan.max_contributions), "int");
    std::string kept_condition = absl::StrCat("rn <= ", k_param);
    if (grouped) {
      absl::StrAppend(&kept_condition, " AND pn <= ",
                      params.Add(absl::StrCat(plan.max_partitions), "int"));
    }
    if (filter != nullptr) {
      ASSIGN_OR_RETURN(SqlFragment fragment, RenderFilter(*filter, params.next(), quote));
      conditions.push_back(fragment.sql);
      params.values().insert(params.values().end(), fragment.params.begin(), fragment.params.end());
    }

    std::vector<std::string> select = group_refs;
    std::string bucket_expr = "NULL::int";
    if (bucketed) {
      // width_bucket over the sorted edges counts the edges <= c; clamped values lie in
      // [e0, en], so 1..n+1, and en joins the last bucket.
      bucket_expr = absl::StrCat(
          "least(width_bucket(c, ", params.Add(FloatArrayLiteral(plan.bucket_edges), "float8[]"),
          "), ", n_buckets, ") - 1");
    }
    select.push_back(bucketed ? "b" : "NULL::int");
    select.push_back(bucketed ? "GROUPING(b)" : "1");
    select.push_back("count(*)");
    // Sums of clamped values cannot overflow: every bound is within +-1e15 (query::ValidateBound).
    if (plan.sum_values || plan.sum_squares) {
      const std::string center = params.Add(ExactDouble(plan.center), "float8");
      select.push_back(plan.sum_values ? absl::StrCat("coalesce(sum(c - ", center, "), 0)::float8")
                                       : "0::float8");
      select.push_back(plan.sum_squares
                           ? absl::StrCat("coalesce(sum((c - ", center, ") ^ 2), 0)::float8")
                           : "0::float8");
    } else {
      select.push_back("0::float8");
      select.push_back("0::float8");
    }
    select.push_back(plan.count_units
                         ? "count(DISTINCT u) + max(CASE WHEN u IS NULL THEN 1 ELSE 0 END)"
                         : "0");
    std::string group_clause;
    const std::string groups = absl::StrJoin(group_refs, ", ");
    if (bucketed) {
      group_clause = absl::StrCat(" GROUP BY GROUPING SETS ((", groups, grouped ? ", " : "", "b), (",
                                  groups, "))");
    } else if (grouped) {
      group_clause = absl::StrCat(" GROUP BY ", groups);
    }
    std::string ranked = absl::StrCat(
        "SELECT ", absl::StrJoin(inner, ", "), " FROM ", DataTableName(plan.dataset_id),
        conditions.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(conditions, " AND ")));
    if (pre) {
      std::vector<std::string> by = {"u"};
      by.insert(by.end(), group_refs.begin(), group_refs.end());
      ranked = absl::StrCat("SELECT ", absl::StrJoin(reduced, ", "), " FROM (", ranked,
                            ") unit_rows GROUP BY ", absl::StrJoin(by, ", "));
    }
    const std::string sql = absl::StrCat(
        "SELECT ", absl::StrJoin(select, ", "), " FROM (SELECT *, ", bucket_expr, " AS b FROM (",
        ranked, ") ranked WHERE ", kept_condition, ") kept", group_clause);

    std::map<std::vector<std::string>, GroupStats> by_key;
    for (const pqxx::row& r : tx.exec_params(sql, pqxx::prepare::make_dynamic_params(params.values()))) {
      std::vector<std::string> key;
      for (size_t i = 0; i < group_refs.size(); ++i) {
        const pqxx::field value = r[static_cast<int>(i)];
        key.push_back(value.is_null() ? query::NullGroupKey() : value.as<std::string>());
      }
      const int base = static_cast<int>(group_refs.size());
      GroupStats& g = grouped ? by_key[key] : static_cast<GroupStats&>(out);
      if (grouped) g.key = key;
      if (bucketed && g.buckets.empty()) g.buckets.assign(n_buckets, 0);
      const bool total_row = r[base + 1].as<int>() == 1;
      if (!total_row) {  // a bucket's row
        const int64_t b = r[base].as<int64_t>();
        if (b < 0 || b >= static_cast<int64_t>(n_buckets)) {
          return absl::InternalError(absl::StrCat("aggregate scan: bucket ", b, " out of range"));
        }
        g.buckets[b] = r[base + 2].as<int64_t>();
        continue;
      }
      g.count = r[base + 2].as<int64_t>();
      g.sum = r[base + 3].as<double>();
      g.sum_sq = r[base + 4].as<double>();
      g.units = r[base + 5].as<int64_t>();
    }
    for (auto& [key, stats] : by_key) out.groups.push_back(std::move(stats));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(router_->Run("aggregate scan", plan.dataset_id, plan.dataset_version, deadline, scan));
  return out;
}

}  // namespace dpq::store
