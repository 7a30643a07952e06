#include "client/dpqctl/json_output.h"

#include <cmath>
#include <string>

#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/plan_report_output.h"
#include "client/dpqctl/shard_output.h"

namespace dpqctl {
namespace internal {
namespace {

nlohmann::json Strings(const google::protobuf::RepeatedPtrField<std::string>& strings) {
  nlohmann::json array = nlohmann::json::array();
  for (const std::string& text : strings) array.push_back(text);
  return array;
}

// nlohmann keeps a non-finite double as a number (is_null() false) and only dump() writes null;
// make the document say null itself.
nlohmann::json NumberOrNull(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

}  // namespace
}  // namespace internal

using internal::NumberOrNull;
using internal::Strings;

nlohmann::json ColumnToJson(const dpq::v1::Column& column) {
  nlohmann::json json = {
      {"name", column.name()},
      {"type", ColumnTypeWord(column.type())},
  };
  if (column.has_lower()) json["lower"] = column.lower();
  if (column.has_upper()) json["upper"] = column.upper();
  // A date or timestamp column's bounds: strings in its form ("2026-01-01").
  if (column.has_lower_text()) json["lower"] = column.lower_text();
  if (column.has_upper_text()) json["upper"] = column.upper_text();
  if (column.categories_size() > 0) json["categories"] = Strings(column.categories());
  return json;
}

nlohmann::json DatasetToJson(const dpq::v1::Dataset& dataset) {
  nlohmann::json columns = nlohmann::json::array();
  for (const dpq::v1::Column& column : dataset.columns()) columns.push_back(ColumnToJson(column));
  return {
      {"name", dataset.name()},
      {"privacy_unit", dataset.privacy_unit()},
      {"population", dataset.population()},  // empty for a public table
      {"is_public", dataset.is_public()},
      {"block_by", dataset.block_by()},
      {"block_width", dataset.block_width()},
      {"shards", std::vector<std::string>(dataset.shards().begin(), dataset.shards().end())},
      {"per_block_budget", dataset.per_block_budget()},
      {"promise", dataset.promise()},
      {"columns", std::move(columns)},
      {"version", dataset.version()},
      {"created_at", dataset.created_at()},
  };
}

nlohmann::json BlocksToJson(const dpq::v1::Budget& budget) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const dpq::v1::BlockBudget& b : budget.blocks()) {
    blocks.push_back({{"start", b.start()},
                      {"epsilon_total", b.epsilon_total()},
                      {"delta_total", b.delta_total()},
                      {"epsilon_spent", b.epsilon_spent()},
                      {"delta_spent", b.delta_spent()},
                      {"epsilon_remaining", b.epsilon_remaining()},
                      {"delta_remaining", b.delta_remaining()},
                      {"own_budget", b.own_budget()}});
  }
  return blocks;
}

nlohmann::json BudgetToJson(const dpq::v1::Budget& budget) {
  return {
      {"dataset", budget.dataset()},
      {"population", budget.population()},
      {"via_dataset", budget.via_dataset()},
      {"epsilon_total", budget.epsilon_total()},
      {"delta_total", budget.delta_total()},
      {"epsilon_spent", budget.epsilon_spent()},
      {"delta_spent", budget.delta_spent()},
      {"epsilon_remaining", budget.epsilon_remaining()},
      {"delta_remaining", budget.delta_remaining()},
      {"accountant", budget.accountant()},
      {"preset", budget.preset()},
      {"max_query_epsilon", budget.has_max_query_epsilon()
                                ? nlohmann::json(budget.max_query_epsilon())
                                : nlohmann::json(nullptr)},
      {"warnings", Strings(budget.warnings())},
      {"per_block", budget.per_block()},
      {"blocks", BlocksToJson(budget)},
  };
}

nlohmann::json ConfidenceIntervalToJson(const dpq::v1::ConfidenceInterval& interval) {
  return {
      {"confidence", interval.confidence()},
      {"lower", interval.lower()},
      {"upper", interval.upper()},
  };
}

nlohmann::json QueryResponseToJson(const dpq::v1::QueryResponse& response,
                                   dpq::v1::Aggregate aggregate) {
  nlohmann::json json = {
      {"value", response.value()},
      {"mechanism", MechanismWord(response.mechanism())},
      {"epsilon", response.epsilon()},
      {"delta", response.delta()},
      {"noise_scale", response.noise_scale()},
      {"sensitivity", response.sensitivity()},
      {"interval", ConfidenceIntervalToJson(response.interval())},
      {"budget", BudgetToJson(response.budget())},
      {"request_id", response.request_id()},
      {"replayed", response.replayed()},
      {"max_contributions", response.max_contributions()},
  };
  if (aggregate == dpq::v1::AGGREGATE_MEAN || aggregate == dpq::v1::AGGREGATE_VARIANCE ||
      aggregate == dpq::v1::AGGREGATE_STDDEV) {
    json["count_noise_scale"] = response.count_noise_scale();
  }
  if (response.has_lower()) json["lower"] = response.lower();
  if (response.has_upper()) json["upper"] = response.upper();
  nlohmann::json rows = nlohmann::json::array();
  for (const dpq::v1::ResultRow& row : response.rows()) rows.push_back(ResultRowToJson(row));
  json["rows"] = std::move(rows);
  json["cached"] = response.cached();
  json["warnings"] = Strings(response.warnings());
  json["max_partitions"] = response.max_partitions();
  json["components"] = NoiseComponentsToJson(response.components());
  return json;
}

// The group values, null where the group column is NULL (ResultRow.null_keys).
nlohmann::json KeyToJson(const dpq::v1::ResultRow& row) {
  nlohmann::json key = Strings(row.key());
  for (uint32_t i : row.null_keys()) {
    if (i < key.size()) key[i] = nullptr;
  }
  return key;
}

nlohmann::json ResultRowToJson(const dpq::v1::ResultRow& row) {
  return {
      {"key", KeyToJson(row)},
      {"label", row.label()},
      {"value", row.value()},
      {"interval",
       row.has_interval() ? ConfidenceIntervalToJson(row.interval()) : nlohmann::json(nullptr)},
      {"noise_scale", row.noise_scale()},
      {"rank_error", row.rank_error()},
  };
}

nlohmann::json QueryBatchResponseToJson(const dpq::v1::QueryBatchResponse& response,
                                        const dpq::v1::QueryBatchRequest& request) {
  nlohmann::json answers = nlohmann::json::array();
  for (int i = 0; i < response.answers_size(); ++i) {
    // A server answering more queries than were sent is wrong, but its answer still prints.
    const dpq::v1::Aggregate aggregate = i < request.queries_size()
                                             ? request.queries(i).aggregate()
                                             : dpq::v1::AGGREGATE_UNSPECIFIED;
    answers.push_back(QueryResponseToJson(response.answers(i), aggregate));
  }
  return {
      {"request_id", response.request_id()}, {"epsilon", response.epsilon()},
      {"delta", response.delta()},           {"epsilon_sum", response.epsilon_sum()},
      {"replayed", response.replayed()},     {"budget", BudgetToJson(response.budget())},
      {"answers", std::move(answers)},
  };
}

nlohmann::json PlanResponseToJson(const dpq::v1::PlanResponse& response) {
  // An unreachable target error may come back as an infinite epsilon or error: null.
  nlohmann::json json = {
      {"epsilon", NumberOrNull(response.epsilon())},
      {"delta", NumberOrNull(response.delta())},
      {"mechanism", MechanismWord(response.mechanism())},
      {"sensitivity", NumberOrNull(response.sensitivity())},
      {"noise_scale", NumberOrNull(response.noise_scale())},
      {"error", NumberOrNull(response.error())},
      {"confidence", NumberOrNull(response.confidence())},
      {"rank_error", response.rank_error()},
      {"warnings", Strings(response.warnings())},
  };
  AddPlanReportJson(ReportOf(response), json);
  return json;
}

nlohmann::json ListDatasetsResponseToJson(const dpq::v1::ListDatasetsResponse& response) {
  nlohmann::json datasets = nlohmann::json::array();
  for (const dpq::v1::Dataset& dataset : response.datasets()) {
    datasets.push_back(DatasetToJson(dataset));
  }
  return {{"datasets", std::move(datasets)}};
}

nlohmann::json CreateDatasetResponseToJson(const dpq::v1::CreateDatasetResponse& response) {
  return {
      {"dataset", DatasetToJson(response.dataset())},
      {"rows_loaded", response.rows_loaded()},
  };
}

nlohmann::json CreateAnalystResponseToJson(const dpq::v1::CreateAnalystResponse& response) {
  return {
      {"name", response.name()},
      {"role", RoleWord(response.role())},
      {"token", response.token()},
  };
}

nlohmann::json GrantToJson(const dpq::v1::GrantRequest& request) {
  nlohmann::json out = {
      {"analyst", request.analyst()},
      {"dataset", request.dataset()},
      {"granted", true},
  };
  if (request.has_epsilon_cap()) out["epsilon_cap"] = request.epsilon_cap();
  if (request.has_delta_cap()) out["delta_cap"] = request.delta_cap();
  return out;
}

nlohmann::json AuditEntryToJson(const dpq::v1::AuditEntry& entry) {
  return {
      {"seq", entry.seq()},
      {"request_id", entry.request_id()},
      {"analyst", entry.analyst()},
      {"created_at", entry.created_at()},
      {"kind", entry.kind()},
      {"datasets", entry.datasets()},
      {"blocks", entry.blocks()},
      {"aggregate", AggregateWord(entry.aggregate())},
      {"mechanism", MechanismWord(entry.mechanism())},
      {"column", entry.column()},
      {"epsilon", entry.epsilon()},
      {"delta", entry.delta()},
      {"noise_scale", entry.noise_scale()},
      {"value", entry.value()},
      {"rows", entry.rows()},
  };
}

nlohmann::json ListAuditResponseToJson(const dpq::v1::ListAuditResponse& response) {
  nlohmann::json entries = nlohmann::json::array();
  for (const dpq::v1::AuditEntry& entry : response.entries()) {
    entries.push_back(AuditEntryToJson(entry));
  }
  return {{"entries", std::move(entries)},
          {"population", response.population()},
          {"via_dataset", response.via_dataset()}};
}

nlohmann::json VerifyAuditResponseToJson(const dpq::v1::VerifyAuditResponse& r) {
  return {{"ok", r.ok()},
          {"entries", r.entries()},
          {"population", r.population()},
          {"via_dataset", r.via_dataset()},
          {"first_broken_seq", r.first_broken_seq()},
          {"reason", r.reason()},
          {"epsilon_spent_recomputed", r.epsilon_spent_recomputed()},
          {"delta_spent_recomputed", r.delta_spent_recomputed()},
          {"epsilon_spent_ledger", r.epsilon_spent_ledger()},
          {"delta_spent_ledger", r.delta_spent_ledger()},
          {"full", r.full()},
          {"rows_read", r.rows_read()},
          {"checkpoint_seq", r.checkpoint_seq()}};
}

nlohmann::json PriceResponseToJson(const dpq::v1::PriceResponse& response) {
  // nlohmann writes a non-finite double as null already; say so explicitly for the reader.
  nlohmann::json epsilon = std::isfinite(response.epsilon()) ? nlohmann::json(response.epsilon())
                                                             : nlohmann::json(nullptr);
  return {
      {"epsilon", std::move(epsilon)},
      {"delta", response.delta()},
      {"accountant", response.accountant()},
  };
}

nlohmann::json CalibrateResponseToJson(const dpq::v1::CalibrateResponse& response) {
  return {
      {"noise_multiplier", response.noise_multiplier()},
      {"epsilon", response.epsilon()},
  };
}

nlohmann::json ErrorToJson(absl::string_view code_name, absl::string_view message) {
  return {{"error", {{"code", std::string(code_name)}, {"message", std::string(message)}}}};
}

void WriteJson(std::ostream& out, const nlohmann::json& document) {
  out << document.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace)
      << '\n';
}

namespace {

// An RFC 3339 time, or null when unset.
nlohmann::json TimeOrNull(const std::string& time) {
  return time.empty() ? nlohmann::json(nullptr) : nlohmann::json(time);
}

}  // namespace

nlohmann::json GrantInfoToJson(const dpq::v1::GrantInfo& grant) {
  nlohmann::json out = {
      {"analyst", grant.analyst()},
      {"dataset", grant.dataset()},
      {"epsilon_cap", nullptr},
      {"delta_cap", nullptr},
      {"epsilon_spent", grant.epsilon_spent()},
      {"delta_spent", grant.delta_spent()},
      {"created_at", grant.created_at()},
      {"revoked_at", TimeOrNull(grant.revoked_at())},
  };
  if (grant.has_epsilon_cap()) out["epsilon_cap"] = grant.epsilon_cap();
  if (grant.has_delta_cap()) out["delta_cap"] = grant.delta_cap();
  return out;
}

nlohmann::json ListAnalystsResponseToJson(const dpq::v1::ListAnalystsResponse& response) {
  nlohmann::json analysts = nlohmann::json::array();
  for (const dpq::v1::AnalystInfo& a : response.analysts()) {
    nlohmann::json grants = nlohmann::json::array();
    for (const dpq::v1::GrantInfo& g : a.grants()) grants.push_back(GrantInfoToJson(g));
    analysts.push_back(nlohmann::json{
        {"name", a.name()},
        {"role", RoleWord(a.role())},
        {"created_at", a.created_at()},
        {"last_used_at", TimeOrNull(a.last_used_at())},
        {"revoked_at", TimeOrNull(a.revoked_at())},
        {"grants", std::move(grants)},
    });
  }
  return {{"analysts", std::move(analysts)}};
}

nlohmann::json ListGrantsResponseToJson(const dpq::v1::ListGrantsResponse& response) {
  nlohmann::json grants = nlohmann::json::array();
  for (const dpq::v1::GrantInfo& g : response.grants()) grants.push_back(GrantInfoToJson(g));
  return {{"grants", std::move(grants)}};
}

nlohmann::json WhoAmIResponseToJson(const dpq::v1::WhoAmIResponse& response) {
  return {{"name", response.name()},
          {"role", RoleWord(response.role())},
          {"datasets", Strings(response.datasets())}};
}

nlohmann::json ServerStatusResponseToJson(const dpq::v1::ServerStatusResponse& response) {
  nlohmann::json datasets = nlohmann::json::array();
  for (const dpq::v1::Budget& b : response.budgets()) datasets.push_back(BudgetToJson(b));
  nlohmann::json shards = nlohmann::json::array();
  for (const dpq::v1::Shard& s : response.shards()) shards.push_back(ShardToJson(s));
  return {
      {"server_version", response.server_version()},
      {"schema_version", response.schema_version()},
      {"database", response.database_reachable() ? "reachable" : "unreachable"},
      {"database_error", response.database_error()},
      {"datasets", std::move(datasets)},
      {"shards", std::move(shards)},
  };
}

nlohmann::json ListAdminLogResponseToJson(const dpq::v1::ListAdminLogResponse& response) {
  nlohmann::json entries = nlohmann::json::array();
  for (const dpq::v1::AdminLogEntry& e : response.entries()) {
    entries.push_back(nlohmann::json{{"seq", e.seq()},
                                     {"created_at", e.created_at()},
                                     {"admin", e.admin()},
                                     {"action", e.action()},
                                     {"target", e.target()},
                                     {"details", e.details()}});
  }
  return {{"entries", std::move(entries)}};
}

nlohmann::json VerifyAdminLogResponseToJson(const dpq::v1::VerifyAdminLogResponse& response) {
  return {{"ok", response.ok()},
          {"entries", response.entries()},
          {"first_broken_seq", response.first_broken_seq()},
          {"reason", response.reason()},
          {"full", response.full()},
          {"rows_read", response.rows_read()},
          {"checkpoint_seq", response.checkpoint_seq()}};
}

}  // namespace dpqctl
