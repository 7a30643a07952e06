#include "client/dpqctl/text_output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "client/dpqctl/enum_names.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

std::string FormatNumber(double value) {
  // nlohmann's serializer already prints the shortest round-tripping form (Grisu2); reuse it
  // rather than a fixed %g precision that hides digits of small epsilons.
  return nlohmann::json(value).dump();
}

void WriteTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(header.size());
  for (size_t i = 0; i < header.size(); ++i) widths[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  auto write_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      if (i > 0) line += "  ";
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size(), ' ');
    }
    out << line << '\n';
  };
  write_row(header);
  for (const auto& row : rows) write_row(row);
}

void WriteDatasetText(std::ostream& out, const dpq::v1::Dataset& dataset) {
  out << "dataset:       " << dataset.name() << '\n'
      << "privacy unit:  " << dataset.privacy_unit() << '\n'
      << "version:       " << dataset.version() << '\n'
      << "created at:    " << dataset.created_at() << '\n'
      << '\n';
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Column& column : dataset.columns()) {
    rows.push_back({column.name(), ColumnTypeWord(column.type()),
                    column.has_lower() ? FormatNumber(column.lower()) : "-",
                    column.has_upper() ? FormatNumber(column.upper()) : "-"});
  }
  WriteTable(out, {"COLUMN", "TYPE", "LOWER", "UPPER"}, rows);
}

void WriteListDatasetsText(std::ostream& out, const dpq::v1::ListDatasetsResponse& response) {
  if (response.datasets().empty()) {
    out << "no datasets\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Dataset& dataset : response.datasets()) {
    rows.push_back({dataset.name(), dataset.privacy_unit(),
                    absl::StrCat(dataset.columns_size()), absl::StrCat(dataset.version()),
                    dataset.created_at()});
  }
  WriteTable(out, {"NAME", "PRIVACY UNIT", "COLUMNS", "VERSION", "CREATED AT"}, rows);
}

void WriteCreateDatasetText(std::ostream& out, const dpq::v1::CreateDatasetResponse& response) {
  out << "loaded " << response.rows_loaded() << " rows\n";
  WriteDatasetText(out, response.dataset());
}

void WriteCreateAnalystText(std::ostream& out, const dpq::v1::CreateAnalystResponse& response) {
  out << "created " << RoleWord(response.role()) << " '" << response.name() << "'\n"
      << "token: " << response.token() << '\n'
      << "This token is shown only once: the server keeps only its hash. Store it now.\n";
}

void WriteGrantText(std::ostream& out, const dpq::v1::GrantRequest& request) {
  out << "granted '" << request.analyst() << "' access to dataset '" << request.dataset()
      << "'\n";
}

void WriteBudgetText(std::ostream& out, const dpq::v1::Budget& budget) {
  out << "budget of dataset '" << budget.dataset() << "' (" << budget.accountant()
      << " composition)\n";
  WriteTable(out, {"", "TOTAL", "SPENT", "REMAINING"},
             {{"epsilon", FormatNumber(budget.epsilon_total()),
               FormatNumber(budget.epsilon_spent()), FormatNumber(budget.epsilon_remaining())},
              {"delta", FormatNumber(budget.delta_total()), FormatNumber(budget.delta_spent()),
               FormatNumber(budget.delta_remaining())}});
}

void WriteQueryText(std::ostream& out, const dpq::v1::QueryResponse& response,
                    dpq::v1::Aggregate aggregate) {
  const dpq::v1::ConfidenceInterval& interval = response.interval();
  out << "value:        " << FormatNumber(response.value()) << '\n'
      << "interval:     " << FormatNumber(interval.confidence() * 100) << "% ["
      << FormatNumber(interval.lower()) << ", " << FormatNumber(interval.upper()) << "]\n"
      << "mechanism:    " << MechanismWord(response.mechanism())
      << " (noise scale " << FormatNumber(response.noise_scale());
  if (aggregate == dpq::v1::AGGREGATE_MEAN) {
    out << ", count noise scale " << FormatNumber(response.count_noise_scale());
  }
  out << ", sensitivity " << FormatNumber(response.sensitivity()) << ")\n"
      << "charged:      epsilon " << FormatNumber(response.epsilon()) << ", delta "
      << FormatNumber(response.delta()) << (response.replayed() ? " (replayed: nothing charged now)" : "")
      << '\n';
  if (response.has_lower() || response.has_upper()) {
    out << "clamped to:   ["
        << (response.has_lower() ? FormatNumber(response.lower()) : "?") << ", "
        << (response.has_upper() ? FormatNumber(response.upper()) : "?") << "]\n";
  }
  out << "max contributions per unit: " << response.max_contributions() << '\n'
      << "remaining:    epsilon " << FormatNumber(response.budget().epsilon_remaining())
      << ", delta " << FormatNumber(response.budget().delta_remaining()) << '\n'
      << "request id:   " << response.request_id() << '\n';
}

void WriteListAuditText(std::ostream& out, const dpq::v1::ListAuditResponse& response) {
  if (response.entries().empty()) {
    out << "no allocations\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::AuditEntry& entry : response.entries()) {
    rows.push_back({absl::StrCat(entry.seq()), entry.created_at(), entry.analyst(),
                    AggregateWord(entry.aggregate()), entry.column().empty() ? "-" : entry.column(),
                    MechanismWord(entry.mechanism()), FormatNumber(entry.epsilon()),
                    FormatNumber(entry.delta()), FormatNumber(entry.value()), entry.request_id()});
  }
  WriteTable(out,
             {"SEQ", "TIME", "ANALYST", "AGGREGATE", "COLUMN", "MECHANISM", "EPSILON", "DELTA",
              "VALUE", "REQUEST ID"},
             rows);
}

void WriteVerifyAuditText(std::ostream& out, const dpq::v1::VerifyAuditResponse& r) {
  if (r.ok()) {
    out << "audit chain intact: " << r.entries() << " entries; ledger matches (epsilon spent "
        << FormatNumber(r.epsilon_spent_ledger()) << ", delta spent "
        << FormatNumber(r.delta_spent_ledger()) << ")\n";
    return;
  }
  out << "AUDIT VERIFICATION FAILED";
  if (r.first_broken_seq() > 0) out << " at seq " << r.first_broken_seq();
  out << ": " << r.reason() << "\n  epsilon spent: ledger " << FormatNumber(r.epsilon_spent_ledger())
      << ", recomputed " << FormatNumber(r.epsilon_spent_recomputed()) << "\n  delta spent: ledger "
      << FormatNumber(r.delta_spent_ledger()) << ", recomputed "
      << FormatNumber(r.delta_spent_recomputed()) << "\n";
}

void WritePriceText(std::ostream& out, const dpq::v1::PriceResponse& response) {
  out << "price (" << response.accountant() << " accountant): epsilon "
      << (std::isfinite(response.epsilon()) ? FormatNumber(response.epsilon())
                                            : std::string("inf (no finite bound at this delta)"))
      << " at delta " << FormatNumber(response.delta()) << '\n';
}

void WriteCalibrateText(std::ostream& out, const dpq::v1::CalibrateResponse& response) {
  out << "noise multiplier: " << FormatNumber(response.noise_multiplier()) << '\n'
      << "epsilon:          " << FormatNumber(response.epsilon()) << '\n';
}

}  // namespace dpqctl
