// dpq.v1 messages as the readable lines and tables dpqctl prints without --json. For people, not
// scripts: the layout may change; scripts use --json.
#ifndef DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_

#include <ostream>
#include <string>
#include <vector>

#include "dpq/v1/dpq.pb.h"

namespace dpqctl {

// The shortest decimal that reads back as `value` ("0.1", "1e-05", "42").
std::string FormatNumber(double value);

// Columns padded to their widest cell, two spaces apart, a header row first.
void WriteTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

void WriteDatasetText(std::ostream& out, const dpq::v1::Dataset& dataset);
void WriteListDatasetsText(std::ostream& out, const dpq::v1::ListDatasetsResponse& response);
void WriteCreateDatasetText(std::ostream& out, const dpq::v1::CreateDatasetResponse& response);
void WriteCreateAnalystText(std::ostream& out, const dpq::v1::CreateAnalystResponse& response);
void WriteGrantText(std::ostream& out, const dpq::v1::GrantRequest& request);
void WriteBudgetText(std::ostream& out, const dpq::v1::Budget& budget);
void WriteQueryText(std::ostream& out, const dpq::v1::QueryResponse& response,
                    dpq::v1::Aggregate aggregate);
void WriteListAuditText(std::ostream& out, const dpq::v1::ListAuditResponse& response);
void WriteVerifyAuditText(std::ostream& out, const dpq::v1::VerifyAuditResponse& response);

void WritePriceText(std::ostream& out, const dpq::v1::PriceResponse& response);
void WriteCalibrateText(std::ostream& out, const dpq::v1::CalibrateResponse& response);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_TEXT_OUTPUT_H_
