#include "server/api/proto_convert.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/api/plan_report_convert.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/engine/release_codec.h"
#include "server/query/calendar.h"
#include "server/query/privacy_units.h"

namespace dpq::api {
namespace {

v1::Aggregate AggregateToProto(absl::string_view name) {
  if (name == "count") return v1::AGGREGATE_COUNT;
  if (name == "sum") return v1::AGGREGATE_SUM;
  if (name == "mean") return v1::AGGREGATE_MEAN;
  if (name == "variance") return v1::AGGREGATE_VARIANCE;
  if (name == "stddev") return v1::AGGREGATE_STDDEV;
  if (name == "quantile") return v1::AGGREGATE_QUANTILE;
  if (name == "histogram") return v1::AGGREGATE_HISTOGRAM;
  return v1::AGGREGATE_UNSPECIFIED;
}

v1::Mechanism MechanismToProto(absl::string_view name) {
  if (name == "laplace") return v1::MECHANISM_LAPLACE;
  if (name == "gaussian") return v1::MECHANISM_GAUSSIAN;
  if (name == "exponential") return v1::MECHANISM_EXPONENTIAL;
  return v1::MECHANISM_UNSPECIFIED;
}

}  // namespace

absl::StatusOr<query::QuerySpec> QuerySpecFromProto(const v1::QueryRequest& r) {
  query::QuerySpec s;
  s.dataset = r.dataset();
  switch (r.aggregate()) {
    case v1::AGGREGATE_COUNT: s.aggregate = query::AggregateKind::kCount; break;
    case v1::AGGREGATE_SUM: s.aggregate = query::AggregateKind::kSum; break;
    case v1::AGGREGATE_MEAN: s.aggregate = query::AggregateKind::kMean; break;
    case v1::AGGREGATE_VARIANCE: s.aggregate = query::AggregateKind::kVariance; break;
    case v1::AGGREGATE_STDDEV: s.aggregate = query::AggregateKind::kStddev; break;
    case v1::AGGREGATE_QUANTILE: s.aggregate = query::AggregateKind::kQuantile; break;
    case v1::AGGREGATE_HISTOGRAM: s.aggregate = query::AggregateKind::kHistogram; break;
    case v1::AGGREGATE_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "aggregate is required (count, sum, mean, variance, stddev, quantile or histogram)");
    default:
      return absl::InvalidArgumentError(absl::StrCat("aggregate ", r.aggregate(), " is not known"));
  }
  switch (r.mechanism()) {
    case v1::MECHANISM_UNSPECIFIED:
    case v1::MECHANISM_LAPLACE: s.mechanism = query::MechanismKind::kLaplace; break;
    case v1::MECHANISM_GAUSSIAN: s.mechanism = query::MechanismKind::kGaussian; break;
    case v1::MECHANISM_EXPONENTIAL:
      return absl::InvalidArgumentError(
          "mechanism: exponential is chosen by the server for quantiles; requests take laplace "
          "(the default) or gaussian");
    default:
      return absl::InvalidArgumentError(absl::StrCat("mechanism ", r.mechanism(), " is not known"));
  }
  s.column = r.column();
  if (r.has_lower()) s.lower = r.lower();
  if (r.has_upper()) s.upper = r.upper();
  s.epsilon = r.epsilon();
  s.delta = r.delta();
  s.max_contributions = r.max_contributions() == 0 ? 1 : r.max_contributions();
  s.confidence = r.confidence() == 0 ? 0.95 : r.confidence();
  s.where = r.where();
  s.quantiles.assign(r.quantiles().begin(), r.quantiles().end());
  s.bins.assign(r.bins().begin(), r.bins().end());
  s.group_by.assign(r.group_by().begin(), r.group_by().end());
  s.keys.assign(r.keys().begin(), r.keys().end());
  s.max_partitions = r.max_partitions() == 0 ? 1 : r.max_partitions();
  s.pre_aggregate = r.per_unit();
  return s;
}

v1::ColumnType ColumnTypeToProto(query::ColumnType type) {
  switch (type) {
    case query::ColumnType::kInteger: return v1::COLUMN_TYPE_INTEGER;
    case query::ColumnType::kDouble: return v1::COLUMN_TYPE_DOUBLE;
    case query::ColumnType::kText: return v1::COLUMN_TYPE_TEXT;
    case query::ColumnType::kDate: return v1::COLUMN_TYPE_DATE;
    case query::ColumnType::kTimestamp: return v1::COLUMN_TYPE_TIMESTAMP;
  }
  return v1::COLUMN_TYPE_UNSPECIFIED;
}

absl::optional<query::ColumnType> ColumnTypeFromProto(v1::ColumnType type) {
  switch (type) {
    case v1::COLUMN_TYPE_INTEGER: return query::ColumnType::kInteger;
    case v1::COLUMN_TYPE_DOUBLE: return query::ColumnType::kDouble;
    case v1::COLUMN_TYPE_TEXT: return query::ColumnType::kText;
    case v1::COLUMN_TYPE_DATE: return query::ColumnType::kDate;
    case v1::COLUMN_TYPE_TIMESTAMP: return query::ColumnType::kTimestamp;
    default: return absl::nullopt;
  }
}

namespace {

// lower_text / upper_text: a date or timestamp column's bounds in its text form. A bound that
// does not parse is INVALID_ARGUMENT naming it; missing ones are refused by ValidateNewDataset.
absl::Status CalendarBoundsFromProto(const v1::Column& c, query::ColumnSchema& col) {
  if (!c.has_lower_text() && !c.has_upper_text()) return absl::OkStatus();
  if (!col.is_calendar()) {
    return absl::InvalidArgumentError(absl::StrCat("column ", QuoteForMessage(c.name()),
                                                   ": text bounds are only for date or timestamp "
                                                   "columns"));
  }
  for (const bool lower : {true, false}) {
    if (!(lower ? c.has_lower_text() : c.has_upper_text())) continue;
    const std::string& text = lower ? c.lower_text() : c.upper_text();
    absl::optional<int64_t> v = query::ParseCalendarValue(col.type, text);
    if (!v.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          lower ? "lower" : "upper", " bound of ", QuoteForMessage(c.name()), " (",
          query::ColumnTypeName(col.type), "): ", QuoteForMessage(text), " is not of the form ",
          query::CalendarFormHint(col.type), " with a year in 0001..9999"));
    }
    (lower ? col.calendar_lower : col.calendar_upper) = *v;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<query::DatasetSchema> DatasetSchemaFromProto(const v1::DatasetHeader& h) {
  query::DatasetSchema s;
  s.name = h.name();
  s.privacy_unit = h.privacy_unit();
  s.population = h.population();
  s.is_public = h.is_public();
  s.shards.assign(h.shards().begin(), h.shards().end());
  if (!h.block_by().empty() || !h.block_width().empty()) {
    const absl::optional<query::CalendarBucket> width = query::ParseCalendarBucket(h.block_width());
    if (h.block_by().empty() || !width.has_value()) {
      return absl::InvalidArgumentError(
          "block_by and block_width go together: a date or timestamp column and the width of a "
          "time block, day, week or month");
    }
    s.time_blocks = query::TimeBlocking{h.block_by(), *width};
  }
  for (const v1::Column& c : h.columns()) {
    query::ColumnSchema col;
    col.name = c.name();
    const absl::optional<query::ColumnType> type = ColumnTypeFromProto(c.type());
    if (!type.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", QuoteForMessage(c.name()),
                       ": type is required (integer, double, text, date or timestamp)"));
    }
    col.type = *type;
    if (c.has_lower()) col.lower = c.lower();
    if (c.has_upper()) col.upper = c.upper();
    RETURN_IF_ERROR(CalendarBoundsFromProto(c, col));
    col.categories.assign(c.categories().begin(), c.categories().end());
    s.columns.push_back(std::move(col));
  }
  return s;
}

void ToProto(const store::BudgetState& b, v1::Budget* out) {
  out->set_dataset(b.population);
  out->set_population(b.population);
  out->set_epsilon_total(b.epsilon_total());
  out->set_delta_total(b.delta_total());
  out->set_epsilon_spent(b.epsilon_spent());
  out->set_delta_spent(b.delta_spent());
  out->set_epsilon_remaining(b.epsilon_remaining());
  out->set_delta_remaining(b.delta_remaining());
  out->set_accountant(std::string(dp::accounting::AccountantName(b.accountant)));
  if (b.max_query_epsilon_units > 0) {
    out->set_max_query_epsilon(query::EpsilonFromUnits(b.max_query_epsilon_units));
  }
  out->set_per_block(b.per_block);
}

void ToProto(const store::BlockBudget& b, v1::BlockBudget* out) {
  out->set_start(query::FormatDate(b.start));
  out->set_epsilon_total(query::EpsilonFromUnits(b.epsilon_total_units));
  out->set_delta_total(query::DeltaFromUnits(b.delta_total_units));
  out->set_epsilon_spent(query::EpsilonFromUnits(b.epsilon_spent_units));
  out->set_delta_spent(query::DeltaFromUnits(b.delta_spent_units));
  out->set_epsilon_remaining(query::EpsilonFromUnits(b.epsilon_remaining_units()));
  out->set_delta_remaining(query::DeltaFromUnits(b.delta_remaining_units()));
  out->set_own_budget(b.own_budget);
}

void ToProto(const engine::DatasetBudget& b, v1::Budget* out) {
  ToProto(b.budget, out);
  out->set_preset(b.preset);
  out->set_via_dataset(b.via_dataset);
  for (const std::string& w : b.warnings) out->add_warnings(w);
  for (const store::BlockBudget& block : b.blocks) ToProto(block, out->add_blocks());
}

v1::Role RoleToProto(store::Role role) {
  return role == store::Role::kAdmin ? v1::ROLE_ADMIN : v1::ROLE_ANALYST;
}

void ToProto(const engine::IssuedToken& issued, v1::CreateAnalystResponse* out) {
  out->set_name(issued.principal.name);
  out->set_role(RoleToProto(issued.principal.role));
  out->set_token(issued.token);
}

void ToProto(const engine::QueryOutcome& o, v1::QueryResponse* out) {
  const store::Allocation& a = o.allocation;
  out->set_request_id(a.request_id);
  out->set_value(a.value);
  out->set_mechanism(MechanismToProto(a.mechanism));
  out->set_epsilon(a.epsilon());
  out->set_delta(a.delta());
  out->set_noise_scale(a.noise_scale);
  out->set_count_noise_scale(a.count_noise_scale);
  out->set_sensitivity(a.sensitivity);
  out->mutable_interval()->set_confidence(a.confidence);
  out->mutable_interval()->set_lower(a.ci_lower);
  out->mutable_interval()->set_upper(a.ci_upper);
  ToProto(o.budget, out->mutable_budget());
  out->set_replayed(o.replayed);
  if (a.clamp_lower) out->set_lower(*a.clamp_lower);
  if (a.clamp_upper) out->set_upper(*a.clamp_upper);
  out->set_max_contributions(a.max_contributions);
  out->set_max_partitions(o.spec.max_partitions);
  out->set_cached(o.cached);
  for (const std::string& w : o.warnings) out->add_warnings(w);
  ToProto(o.components, out->mutable_components());
  for (const engine::ReleasedRow& r : o.rows) {
    v1::ResultRow* row = out->add_rows();
    for (size_t i = 0; i < r.key.size(); ++i) {
      const bool null = query::IsNullGroupKey(r.key[i]);
      row->add_key(null ? std::string() : r.key[i]);
      if (null) row->add_null_keys(static_cast<uint32_t>(i));
    }
    row->set_label(r.label);
    row->set_value(r.value);
    if (r.has_interval) {
      row->mutable_interval()->set_confidence(a.confidence);
      row->mutable_interval()->set_lower(r.ci_lower);
      row->mutable_interval()->set_upper(r.ci_upper);
    }
    row->set_noise_scale(r.noise_scale);
    row->set_rank_error(r.rank_error);
  }
}

void ToProto(const engine::BatchOutcome& o, v1::QueryBatchResponse* out) {
  out->set_request_id(o.allocation.request_id);
  for (const engine::QueryOutcome& answer : o.answers) {
    v1::QueryResponse* r = out->add_answers();
    ToProto(answer, r);
    ToProto(o.budget, r->mutable_budget());
  }
  out->set_epsilon(o.allocation.epsilon());
  out->set_delta(o.allocation.delta());
  out->set_epsilon_sum(query::EpsilonFromUnits(o.epsilon_sum_units));
  ToProto(o.budget, out->mutable_budget());
  out->set_replayed(o.replayed);
}

void ToProto(const engine::AccuracyPlan& p, v1::PlanResponse* out) {
  out->set_epsilon(p.epsilon);
  out->set_delta(p.delta);
  out->set_mechanism(MechanismOf(p));
  out->set_sensitivity(p.sensitivity);
  out->set_noise_scale(p.noise_scale);
  out->set_error(p.error);
  out->set_confidence(p.confidence);
  out->set_rank_error(p.rank_error);
  for (const std::string& w : p.warnings) out->add_warnings(w);
  ReportToProto(p.report, out);
}

void ToProto(const query::DatasetSchema& s, v1::Dataset* out) {
  out->set_name(s.name);
  out->set_privacy_unit(s.privacy_unit);
  out->set_version(s.version);
  out->set_created_at(s.created_at);
  out->set_population(s.population);
  out->set_is_public(s.is_public);
  if (s.time_blocks.has_value()) {
    out->set_block_by(s.time_blocks->column);
    out->set_block_width(std::string(query::CalendarBucketName(s.time_blocks->width)));
  }
  out->set_per_block_budget(s.per_block_budget);
  for (const std::string& shard : s.shards) out->add_shards(shard);
  if (!s.is_public) out->set_promise(query::BudgetPromise(s));
  for (const query::ColumnSchema& c : s.columns) {
    v1::Column* col = out->add_columns();
    col->set_name(c.name);
    col->set_type(ColumnTypeToProto(c.type));
    if (c.lower) col->set_lower(*c.lower);
    if (c.upper) col->set_upper(*c.upper);
    for (const std::string& v : c.categories) col->add_categories(v);
    if (c.calendar_lower)
      col->set_lower_text(query::FormatCalendarValue(c.type, *c.calendar_lower));
    if (c.calendar_upper)
      col->set_upper_text(query::FormatCalendarValue(c.type, *c.calendar_upper));
  }
}

namespace {

// The number of values an allocation released (AuditEntry.rows).
int64_t ReleasedCount(const store::Allocation& a) {
  if (a.release_deferred && !a.release.has_value()) return 0;
  const std::string& result = a.release.has_value() ? a.release->result : a.result;
  if (result.empty()) return 1;
  if (absl::StatusOr<std::vector<engine::ReleasedRow>> rows = engine::DecodeRows(result);
      rows.ok()) {
    return static_cast<int64_t>(rows->size());
  }
  if (absl::StatusOr<std::vector<engine::BatchAnswer>> batch = engine::DecodeBatch(result);
      batch.ok()) {
    return static_cast<int64_t>(batch->size());
  }
  return 0;
}

}  // namespace

void ToProto(const store::Allocation& a, v1::AuditEntry* out) {
  out->set_seq(a.seq);
  out->set_request_id(a.request_id);
  out->set_analyst(a.analyst);
  out->set_created_at(a.created_at);
  out->set_aggregate(AggregateToProto(a.aggregate));
  out->set_mechanism(MechanismToProto(a.mechanism));
  out->set_epsilon(a.epsilon());
  out->set_delta(a.delta());
  out->set_noise_scale(a.noise_scale);
  out->set_value(a.release.has_value() ? a.release->value : a.value);
  out->set_column(a.column);
  out->set_datasets(a.datasets);
  out->set_blocks(a.blocks);
  out->set_rows(ReleasedCount(a));
  // The engine stores these two words as the aggregate of a batch and of a training report.
  out->set_kind(a.aggregate == "batch" || a.aggregate == "training" ? a.aggregate : "query");
}

}  // namespace dpq::api
