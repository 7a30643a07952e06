// dpq.v1 messages as the JSON documents `dpqctl --json` prints: one function per message, keys
// are the proto field names (snake_case), enums are the words of enum_names.h, and an unset
// `optional` field (a column's or a query's bounds) is left out rather than printed as 0.
#ifndef DPQ_CLIENT_DPQCTL_JSON_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_JSON_OUTPUT_H_

#include <ostream>

#include "absl/strings/string_view.h"
#include "dpq/v1/dpq.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

// "categories" only when the column declares some.
nlohmann::json ColumnToJson(const dpq::v1::Column& column);
nlohmann::json DatasetToJson(const dpq::v1::Dataset& dataset);
// The same object wherever a budget appears (budget set/show, query, query-batch): every field
// of the message, "preset" ("" when none) and "warnings" ([] except from SetBudget) included.
nlohmann::json BudgetToJson(const dpq::v1::Budget& budget);
nlohmann::json ConfidenceIntervalToJson(const dpq::v1::ConfidenceInterval& interval);
// {"key": [...], "label", "value", "interval": {...} or null (quantiles), "noise_scale",
//  "rank_error"}.
nlohmann::json ResultRowToJson(const dpq::v1::ResultRow& row);
// `aggregate` is the one requested: the response does not carry it, and `count_noise_scale`
// is printed for AGGREGATE_MEAN, _VARIANCE and _STDDEV only. Besides the scalar fields: "rows",
// "cached", "warnings" and "max_partitions".
nlohmann::json QueryResponseToJson(const dpq::v1::QueryResponse& response,
                                   dpq::v1::Aggregate aggregate);
// {"request_id", "epsilon", "delta", "epsilon_sum", "replayed", "budget", "answers"}; answer i is
// QueryResponseToJson of it with the aggregate of request.queries(i).
nlohmann::json QueryBatchResponseToJson(const dpq::v1::QueryBatchResponse& response,
                                        const dpq::v1::QueryBatchRequest& request);
// {"epsilon", "delta", "mechanism", "sensitivity", "noise_scale", "error", "confidence",
//  "warnings"}; a non-finite number prints as null.
nlohmann::json PlanResponseToJson(const dpq::v1::PlanResponse& response);
nlohmann::json ListDatasetsResponseToJson(const dpq::v1::ListDatasetsResponse& response);
nlohmann::json CreateDatasetResponseToJson(const dpq::v1::CreateDatasetResponse& response);
nlohmann::json CreateAnalystResponseToJson(const dpq::v1::CreateAnalystResponse& response);
// GrantResponse is empty; the document restates the request.
nlohmann::json GrantToJson(const dpq::v1::GrantRequest& request);
nlohmann::json AuditEntryToJson(const dpq::v1::AuditEntry& entry);
nlohmann::json ListAuditResponseToJson(const dpq::v1::ListAuditResponse& response);
nlohmann::json VerifyAuditResponseToJson(const dpq::v1::VerifyAuditResponse& response);
// {"epsilon", "delta", "accountant"}; an epsilon of +inf (no finite guarantee at that delta)
// prints as null.
nlohmann::json PriceResponseToJson(const dpq::v1::PriceResponse& response);
// {"noise_multiplier", "epsilon"}.
nlohmann::json CalibrateResponseToJson(const dpq::v1::CalibrateResponse& response);
// {"error": {"code": code_name, "message": message}}; code_name is a gRPC code name such as
// "RESOURCE_EXHAUSTED".
// Admin lifecycle: grants, analysts, whoami, status. Unset times and caps are null.
nlohmann::json GrantInfoToJson(const dpq::v1::GrantInfo& grant);
nlohmann::json ListAnalystsResponseToJson(const dpq::v1::ListAnalystsResponse& response);
nlohmann::json ListGrantsResponseToJson(const dpq::v1::ListGrantsResponse& response);
nlohmann::json WhoAmIResponseToJson(const dpq::v1::WhoAmIResponse& response);
// {"server_version", "schema_version", "database": "reachable"|"unreachable", "database_error",
//  "datasets": [budget, ...]}
nlohmann::json ServerStatusResponseToJson(const dpq::v1::ServerStatusResponse& response);
nlohmann::json ListAdminLogResponseToJson(const dpq::v1::ListAdminLogResponse& response);
nlohmann::json VerifyAdminLogResponseToJson(const dpq::v1::VerifyAdminLogResponse& response);
nlohmann::json ErrorToJson(absl::string_view code_name, absl::string_view message);

// Writes `document` indented, followed by a newline. Invalid UTF-8 (a server message, a
// column name) is replaced by U+FFFD instead of throwing.
void WriteJson(std::ostream& out, const nlohmann::json& document);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_JSON_OUTPUT_H_
