// dpq.v1 messages as the readable lines and tables dpqctl prints without --json. For people, not
// scripts: the layout may change; scripts use --json.
#ifndef DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_

#include <ostream>
#include <string>
#include <vector>

#include "dpq/v1/dpq.pb.h"

namespace dpqctl {

// The shortest decimal that reads back as `value` ("0.1", "1e-05", "42.0"); "inf", "-inf" or
// "nan" for a non-finite value.
std::string FormatNumber(double value);
// For people: `value` rounded at the second significant digit of `half_width`, the half-width of
// its confidence interval (digits below the noise mean nothing): FormatToPrecision(1742.866, 34.7)
// is "1743", (0.51234, 0.0123) "0.512". Without a usable half-width, 4 significant digits.
std::string FormatToPrecision(double value, double half_width);
// `value` to `digits` significant digits, without exponent or trailing zeros: (200.00012, 3) is
// "200", (2.0, 3) is "2", (0.012345, 3) is "0.0123".
std::string FormatSignificant(double value, int digits);

// Columns padded to their widest cell (counted in UTF-8 code points), two spaces apart, a header
// row first.
void WriteTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// The schema table; a CATEGORIES column ("a|b|c") appears when some column declares categories.
void WriteDatasetText(std::ostream& out, const dpq::v1::Dataset& dataset);
void WriteListDatasetsText(std::ostream& out, const dpq::v1::ListDatasetsResponse& response);
void WriteCreateDatasetText(std::ostream& out, const dpq::v1::CreateDatasetResponse& response);
void WriteCreateAnalystText(std::ostream& out, const dpq::v1::CreateAnalystResponse& response);
void WriteGrantText(std::ostream& out, const dpq::v1::GrantRequest& request);
// Totals, spent and remaining; the preset, when set, in the heading. Warnings are not written
// here: see WriteWarningsText.
void WriteBudgetText(std::ostream& out, const dpq::v1::Budget& budget);
// A single released value without key or label (or no rows at all: an older server) prints as
// the "value: / interval:" lines; anything else as a table with one line per row: the key
// columns (headed by `key_names`, the request's group_by, when given), LABEL, VALUE, the
// interval ("[lower, upper]", or "rank ±R" for a quantile) and NOISE SCALE. Then the mechanism,
// the charge ("cached (no budget charged)" for a result-cache hit), the clamp bounds, the
// contribution limits, the remaining budget and the request id. Warnings are not written here.
void WriteQueryText(std::ostream& out, const dpq::v1::QueryResponse& response,
                    dpq::v1::Aggregate aggregate, const std::vector<std::string>& key_names = {});
// One indented block per answer ("query i (AGGREGATE of COLUMN by KEYS)", its values and its own
// price), then "charged epsilon=E delta=D jointly (sum of the queries: S)", the remaining budget
// and the batch's request id. `request` supplies each answer's aggregate and group-by columns.
void WriteQueryBatchText(std::ostream& out, const dpq::v1::QueryBatchResponse& response,
                         const dpq::v1::QueryBatchRequest& request);
// "epsilon E gives ±error at confidence C (mechanism, noise scale B, sensitivity S)".
void WritePlanText(std::ostream& out, const dpq::v1::PlanResponse& response);
// One "warning: <context><warning>" line per warning (dpqctl writes them on stderr).
void WriteWarningsText(std::ostream& out,
                       const google::protobuf::RepeatedPtrField<std::string>& warnings,
                       const std::string& context = "");
void WriteListAuditText(std::ostream& out, const dpq::v1::ListAuditResponse& response);
void WriteVerifyAuditText(std::ostream& out, const dpq::v1::VerifyAuditResponse& response);

// Admin lifecycle. Tables with one line per analyst or grant; "-" for unset times and caps.
void WriteListAnalystsText(std::ostream& out, const dpq::v1::ListAnalystsResponse& response);
void WriteListGrantsText(std::ostream& out, const dpq::v1::ListGrantsResponse& response);
void WriteWhoAmIText(std::ostream& out, const dpq::v1::WhoAmIResponse& response);
// Versions, the database, then one line per dataset: accountant, epsilon spent / total and the
// share left, delta likewise.
void WriteServerStatusText(std::ostream& out, const dpq::v1::ServerStatusResponse& response);

void WriteListAdminLogText(std::ostream& out, const dpq::v1::ListAdminLogResponse& response);
void WriteVerifyAdminLogText(std::ostream& out, const dpq::v1::VerifyAdminLogResponse& response);

void WritePriceText(std::ostream& out, const dpq::v1::PriceResponse& response);
void WriteCalibrateText(std::ostream& out, const dpq::v1::CalibrateResponse& response);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_
