#include "client/dpqctl/text_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/plan_report_output.h"
#include "client/dpqctl/shard_output.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace internal {
namespace {

// Terminal columns taken by UTF-8 text: one per code point (the '±' of a quantile row, a
// category or key in any script), i.e. every byte but the continuation bytes 10xxxxxx. Wide
// (CJK) characters are counted as one: close enough for a table read by a person.
size_t DisplayWidth(absl::string_view text) {
  size_t width = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

// Digits shown of a noise scale, and of a released value that has no interval (a quantile: its
// error is in ranks, not in the value's units).
constexpr int kScaleDigits = 3;
constexpr int kValueDigitsWithoutInterval = 4;

constexpr char kRoundingNote[] =
    "rounded:      values at the 2nd significant digit of their interval's half-width; --json "
    "gives full precision\n";

double HalfWidth(const dpq::v1::ConfidenceInterval& interval) {
  return (interval.upper() - interval.lower()) / 2;
}

bool HasCountNoise(dpq::v1::Aggregate aggregate) {
  return aggregate == dpq::v1::AGGREGATE_MEAN || aggregate == dpq::v1::AGGREGATE_VARIANCE ||
         aggregate == dpq::v1::AGGREGATE_STDDEV;
}

bool HasKeys(const dpq::v1::QueryResponse& response) {
  for (const dpq::v1::ResultRow& row : response.rows()) {
    if (row.key_size() > 0) return true;
  }
  return false;
}

// Scalar answers print exactly as before rows existed; so does a response without rows (a server
// older than ResultRow) unless the query was one that may legitimately release nothing.
bool IsScalar(const dpq::v1::QueryResponse& response, dpq::v1::Aggregate aggregate,
              const std::vector<std::string>& key_names) {
  if (response.rows_size() == 0) {
    return key_names.empty() && aggregate != dpq::v1::AGGREGATE_HISTOGRAM;
  }
  return response.rows_size() == 1 && response.rows(0).key_size() == 0 &&
         response.rows(0).label().empty();
}

void WriteRowsTable(std::ostream& out, const dpq::v1::QueryResponse& response,
                    const std::vector<std::string>& key_names) {
  if (response.rows_size() == 0) {
    out << "no values released (no group or category was kept by partition selection)\n";
    return;
  }
  int key_count = 0;
  bool any_label = false;
  double confidence = response.interval().confidence();
  bool confidence_from_row = false;
  for (const dpq::v1::ResultRow& row : response.rows()) {
    key_count = std::max(key_count, row.key_size());
    any_label = any_label || !row.label().empty();
    if (!confidence_from_row && row.has_interval() && row.interval().confidence() > 0) {
      confidence = row.interval().confidence();
      confidence_from_row = true;
    }
  }
  std::vector<std::string> header;
  for (int i = 0; i < key_count; ++i) {
    header.push_back(static_cast<size_t>(i) < key_names.size()
                         ? absl::AsciiStrToUpper(key_names[static_cast<size_t>(i)])
                         : (key_count == 1 ? std::string("KEY") : absl::StrCat("KEY", i + 1)));
  }
  if (any_label) header.push_back("LABEL");
  header.push_back("VALUE");
  header.push_back(confidence > 0 ? absl::StrCat(FormatNumber(confidence * 100), "% INTERVAL")
                                  : std::string("INTERVAL"));
  header.push_back("NOISE SCALE");

  std::vector<std::vector<std::string>> cells;
  for (const dpq::v1::ResultRow& row : response.rows()) {
    std::vector<std::string> line;
    for (int i = 0; i < key_count; ++i) line.push_back(i < row.key_size() ? row.key(i) : "");
    for (uint32_t i : row.null_keys()) {  // the group of rows whose column is NULL
      if (i < line.size() && static_cast<int>(i) < key_count) line[i] = "NULL";
    }
    if (any_label) line.push_back(row.label().empty() ? "-" : row.label());
    if (row.has_interval()) {
      const double half_width = HalfWidth(row.interval());
      line.push_back(FormatToPrecision(row.value(), half_width));
      line.push_back(absl::StrCat("[", FormatToPrecision(row.interval().lower(), half_width), ", ",
                                  FormatToPrecision(row.interval().upper(), half_width), "]"));
    } else if (row.rank_error() > 0) {
      line.push_back(FormatSignificant(row.value(), kValueDigitsWithoutInterval));
      line.push_back(absl::StrCat("rank \u00b1", FormatSignificant(row.rank_error(), 2)));
    } else {
      line.push_back(FormatSignificant(row.value(), kValueDigitsWithoutInterval));
      line.push_back("-");
    }
    line.push_back(FormatSignificant(row.noise_scale(), kScaleDigits));
    cells.push_back(std::move(line));
  }
  WriteTable(out, header, cells);
}

// Everything about the released values but what was charged for them.
void WriteAnswerText(std::ostream& out, const dpq::v1::QueryResponse& response,
                     dpq::v1::Aggregate aggregate, const std::vector<std::string>& key_names) {
  const bool scalar = IsScalar(response, aggregate, key_names);
  if (scalar) {
    const dpq::v1::ConfidenceInterval& interval = response.interval();
    const double half_width = HalfWidth(interval);
    out << "value:        " << FormatToPrecision(response.value(), half_width) << '\n'
        << "interval:     " << FormatNumber(interval.confidence() * 100) << "% ["
        << FormatToPrecision(interval.lower(), half_width) << ", "
        << FormatToPrecision(interval.upper(), half_width) << "]\n";
  } else {
    WriteRowsTable(out, response, key_names);
  }
  out << "mechanism:    " << MechanismWord(response.mechanism()) << " (";
  // In a table the noise scale is per row.
  if (scalar)
    out << "noise scale " << FormatSignificant(response.noise_scale(), kScaleDigits) << ", ";
  if (HasCountNoise(aggregate)) {
    out << "count noise scale " << FormatSignificant(response.count_noise_scale(), kScaleDigits)
        << ", ";
  }
  out << "sensitivity " << FormatNumber(response.sensitivity()) << ")\n";
  // A mean's or variance's every noise component (its sum, sum of squares and count).
  if (response.components_size() > 1) WritePlanReportText(out, {&response.components()}, "  ");
}

void WriteLimitsText(std::ostream& out, const dpq::v1::QueryResponse& response) {
  if (response.has_lower() || response.has_upper()) {
    out << "clamped to:   [" << (response.has_lower() ? FormatNumber(response.lower()) : "?")
        << ", " << (response.has_upper() ? FormatNumber(response.upper()) : "?") << "]\n";
  }
  out << "max contributions per unit: " << response.max_contributions() << '\n';
  if (HasKeys(response) && response.max_partitions() > 0) {
    out << "max partitions per unit: " << response.max_partitions() << '\n';
  }
}

std::string DescribeQuery(const dpq::v1::QueryRequest& query) {
  std::string text = AggregateWord(query.aggregate());
  if (!query.column().empty()) absl::StrAppend(&text, " of ", query.column());
  if (query.group_by_size() > 0)
    absl::StrAppend(&text, " by ", absl::StrJoin(query.group_by(), ", "));
  return text;
}

std::string Indent(const std::string& text, absl::string_view prefix) {
  std::string indented;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&indented, prefix, line, "\n");
  }
  return indented;
}

}  // namespace
}  // namespace internal

namespace {

// `value` rounded to a multiple of 10^place, printed without exponent ("1743", "0.0123", "0").
std::string RoundToPlace(double value, int place) {
  if (!std::isfinite(value)) return FormatNumber(value);
  if (place >= 0) {
    const double unit = std::pow(10.0, place);
    const double rounded = std::round(value / unit) * unit;
    return rounded == 0 ? "0" : absl::StrFormat("%.0f", rounded);
  }
  const int decimals = std::min(-place, 17);
  std::string text = absl::StrFormat("%.*f", decimals, value);
  // "-0.00" reads as a sign the value does not have.
  if (std::strtod(text.c_str(), nullptr) == 0) text = absl::StrFormat("%.*f", decimals, 0.0);
  return text;
}

// Position (power of ten) of the leading digit of |x| > 0.
int LeadingPlace(double x) { return static_cast<int>(std::floor(std::log10(std::fabs(x)))); }

}  // namespace

std::string FormatToPrecision(double value, double half_width) {
  if (!std::isfinite(half_width) || half_width <= 0) {
    return FormatSignificant(value, internal::kValueDigitsWithoutInterval);
  }
  return RoundToPlace(value, LeadingPlace(half_width) - 1);
}

std::string FormatSignificant(double value, int digits) {
  if (!std::isfinite(value)) return FormatNumber(value);
  if (value == 0) return "0";
  std::string text = RoundToPlace(value, LeadingPlace(value) - (digits - 1));
  // "2.00" claims digits that are only padding: "2".
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

std::string FormatNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // nlohmann's serializer already prints the shortest round-tripping form (Grisu2); reuse it
  // rather than a fixed %g precision that hides digits of small epsilons.
  return nlohmann::json(value).dump();
}

void WriteTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(header.size());
  for (size_t i = 0; i < header.size(); ++i) widths[i] = internal::DisplayWidth(header[i]);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], internal::DisplayWidth(row[i]));
    }
  }
  auto write_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      if (i > 0) line += "  ";
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - internal::DisplayWidth(row[i]), ' ');
    }
    out << line << '\n';
  };
  write_row(header);
  for (const auto& row : rows) write_row(row);
}

void WriteCreateAnalystText(std::ostream& out, const dpq::v1::CreateAnalystResponse& response) {
  out << "created " << RoleWord(response.role()) << " '" << response.name() << "'\n"
      << "token: " << response.token() << '\n'
      << "This token is shown only once: the server keeps only its hash. Store it now.\n";
}

void WriteGrantText(std::ostream& out, const dpq::v1::GrantRequest& request) {
  out << "granted '" << request.analyst() << "' access to dataset '" << request.dataset() << "'\n";
}

void WriteBudgetText(std::ostream& out, const dpq::v1::Budget& budget) {
  if (!budget.via_dataset().empty()) {
    out << "dataset '" << budget.via_dataset() << "' belongs to population '" << budget.population()
        << "': its budget is the population's\n";
  }
  out << "budget of population '" << budget.dataset() << "' (" << budget.accountant()
      << " composition";
  if (!budget.preset().empty()) out << ", preset " << budget.preset();
  if (budget.has_max_query_epsilon()) {
    out << ", at most epsilon " << FormatNumber(budget.max_query_epsilon()) << " per query";
  }
  out << ")\n";
  if (budget.per_block()) {
    // Per time block: the totals are each block's; spent is over all blocks and limits nothing.
    out << "per time block: every block has the total below unless it has its own; spent is "
           "what all queries charged, over all blocks\n";
    WriteTable(
        out, {"", "PER BLOCK", "SPENT (ALL BLOCKS)"},
        {{"epsilon", FormatNumber(budget.epsilon_total()), FormatNumber(budget.epsilon_spent())},
         {"delta", FormatNumber(budget.delta_total()), FormatNumber(budget.delta_spent())}});
  } else {
    WriteTable(out, {"", "TOTAL", "SPENT", "REMAINING"},
               {{"epsilon", FormatNumber(budget.epsilon_total()),
                 FormatNumber(budget.epsilon_spent()), FormatNumber(budget.epsilon_remaining())},
                {"delta", FormatNumber(budget.delta_total()), FormatNumber(budget.delta_spent()),
                 FormatNumber(budget.delta_remaining())}});
  }
  if (budget.blocks_size() == 0) return;
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::BlockBudget& b : budget.blocks()) {
    rows.push_back({b.start(), FormatNumber(b.epsilon_total()), FormatNumber(b.epsilon_spent()),
                    FormatNumber(b.epsilon_remaining()), FormatNumber(b.delta_total()),
                    FormatNumber(b.delta_spent()), b.own_budget() ? "own" : ""});
  }
  out << "\n";
  WriteTable(out, {"BLOCK", "EPSILON", "SPENT", "LEFT", "DELTA", "SPENT", "BUDGET"}, rows);
}

void WriteQueryText(std::ostream& out, const dpq::v1::QueryResponse& response,
                    dpq::v1::Aggregate aggregate, const std::vector<std::string>& key_names) {
  internal::WriteAnswerText(out, response, aggregate, key_names);
  if (response.cached()) {
    out << "charged:      cached (no budget charged); the original release cost epsilon "
        << FormatNumber(response.epsilon()) << ", delta " << FormatNumber(response.delta()) << '\n';
  } else {
    out << "charged:      epsilon " << FormatNumber(response.epsilon()) << ", delta "
        << FormatNumber(response.delta())
        << (response.replayed() ? " (replayed: nothing charged now)" : "") << '\n';
  }
  internal::WriteLimitsText(out, response);
  out << "remaining:    epsilon " << FormatNumber(response.budget().epsilon_remaining())
      << ", delta " << FormatNumber(response.budget().delta_remaining()) << '\n'
      << "request id:   " << response.request_id() << '\n'
      << internal::kRoundingNote;
}

void WriteQueryBatchText(std::ostream& out, const dpq::v1::QueryBatchResponse& response,
                         const dpq::v1::QueryBatchRequest& request) {
  for (int i = 0; i < response.answers_size(); ++i) {
    const dpq::v1::QueryResponse& answer = response.answers(i);
    dpq::v1::QueryRequest query;
    if (i < request.queries_size()) query = request.queries(i);
    const std::vector<std::string> key_names(query.group_by().begin(), query.group_by().end());
    std::ostringstream block;
    internal::WriteAnswerText(block, answer, query.aggregate(), key_names);
    block << "price alone:  epsilon " << FormatNumber(answer.epsilon()) << ", delta "
          << FormatNumber(answer.delta()) << (answer.cached() ? " (cached)" : "") << '\n';
    internal::WriteLimitsText(block, answer);
    if (i > 0) out << '\n';
    out << "query " << i + 1 << " (" << internal::DescribeQuery(query) << "):\n"
        << internal::Indent(block.str(), "  ");
  }
  if (response.answers_size() > 0) out << '\n';
  out << "charged epsilon=" << FormatNumber(response.epsilon())
      << " delta=" << FormatNumber(response.delta())
      << " jointly (sum of the queries: " << FormatNumber(response.epsilon_sum()) << ")"
      << (response.replayed() ? " (replayed: nothing charged now)" : "") << '\n'
      << "remaining:    epsilon " << FormatNumber(response.budget().epsilon_remaining())
      << ", delta " << FormatNumber(response.budget().delta_remaining()) << '\n'
      << "request id:   " << response.request_id() << '\n'
      << internal::kRoundingNote;
}

void WritePlanText(std::ostream& out, const dpq::v1::PlanResponse& response) {
  out << "epsilon " << FormatNumber(response.epsilon());
  if (response.delta() > 0) out << ", delta " << FormatNumber(response.delta());
  // Quantiles: the rank error of the choice (the value interval depends on the data); the scale
  // and sensitivity are the noisy histogram's.
  out << " gives " << (response.rank_error() ? "rank " : "") << "\u00b1"
      << FormatNumber(response.error()) << (response.rank_error() ? " rows" : "")
      << " at confidence " << FormatNumber(response.confidence()) << " ("
      << MechanismWord(response.mechanism()) << ", noise scale "
      << FormatNumber(response.noise_scale()) << ", sensitivity "
      << FormatNumber(response.sensitivity()) << ")\n";
  WritePlanReportText(out, ReportOf(response), "  ");
}

void WriteWarningsText(std::ostream& out,
                       const google::protobuf::RepeatedPtrField<std::string>& warnings,
                       const std::string& context) {
  for (const std::string& warning : warnings) out << "warning: " << context << warning << '\n';
}

namespace {

// The released value of a single-valued release; else how many values it released (a quantile,
// histogram or group-by release has rows, a batch answers), rather than a meaningless 0.
std::string AuditValueCell(const dpq::v1::AuditEntry& entry) {
  // 6 significant digits for a person; `audit --json` has the exact value.
  if (entry.rows() == 1) return FormatSignificant(entry.value(), 6);
  if (entry.rows() == 0) return "(not released)";
  return absl::StrCat("(", entry.rows(),
                      entry.aggregate() == dpq::v1::AGGREGATE_UNSPECIFIED ? " answers)" : " rows)");
}

}  // namespace

void WriteListAuditText(std::ostream& out, const dpq::v1::ListAuditResponse& response) {
  if (!response.via_dataset().empty() && response.via_dataset() != response.population()) {
    out << "dataset '" << response.via_dataset() << "' belongs to population '"
        << response.population() << "': its audit is the population's\n";
  }
  if (response.entries().empty()) {
    out << "no allocations\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::AuditEntry& entry : response.entries()) {
    // A batch or a training report has no one aggregate or mechanism: its kind stands there.
    const bool whole = entry.kind() == "batch" || entry.kind() == "training";
    rows.push_back({absl::StrCat(entry.seq()), entry.created_at(), entry.analyst(),
                    whole ? entry.kind() : AggregateWord(entry.aggregate()),
                    entry.column().empty() ? "-" : entry.column(),
                    whole ? "-" : MechanismWord(entry.mechanism()), FormatNumber(entry.epsilon()),
                    FormatNumber(entry.delta()), AuditValueCell(entry), entry.request_id()});
  }
  WriteTable(out,
             {"SEQ", "TIME", "ANALYST", "AGGREGATE", "COLUMN", "MECHANISM", "EPSILON", "DELTA",
              "VALUE", "REQUEST ID"},
             rows);
}

namespace {

// "full verification, read 12 rows" or "incremental from seq 7, read 6 rows".
template <typename Response>
std::string VerifyScope(const Response& r) {
  std::string scope =
      r.full() ? "full verification" : "incremental from seq " + std::to_string(r.checkpoint_seq());
  return scope + ", read " + std::to_string(r.rows_read()) +
         (r.rows_read() == 1 ? " row" : " rows");
}

}  // namespace

void WriteVerifyAuditText(std::ostream& out, const dpq::v1::VerifyAuditResponse& r) {
  if (!r.via_dataset().empty() && r.via_dataset() != r.population()) {
    out << "dataset '" << r.via_dataset() << "' belongs to population '" << r.population()
        << "': its audit is the population's\n";
  }
  if (r.ok()) {
    out << "audit chain intact: " << r.entries() << " entries; ledger matches (epsilon spent "
        << FormatNumber(r.epsilon_spent_ledger()) << ", delta spent "
        << FormatNumber(r.delta_spent_ledger()) << ")\n  " << VerifyScope(r) << "\n";
    return;
  }
  out << "AUDIT VERIFICATION FAILED";
  if (r.first_broken_seq() > 0) out << " at seq " << r.first_broken_seq();
  out << ": " << r.reason() << "\n  epsilon spent: ledger "
      << FormatNumber(r.epsilon_spent_ledger()) << ", recomputed "
      << FormatNumber(r.epsilon_spent_recomputed()) << "\n  delta spent: ledger "
      << FormatNumber(r.delta_spent_ledger()) << ", recomputed "
      << FormatNumber(r.delta_spent_recomputed()) << "\n  " << VerifyScope(r) << "\n";
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

namespace {

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string CapCell(bool has_cap, double cap, double spent) {
  if (!has_cap) return absl::StrCat(FormatNumber(spent), " (no cap)");
  return absl::StrCat(FormatNumber(spent), " of ", FormatNumber(cap));
}

std::vector<std::string> GrantCells(const dpq::v1::GrantInfo& g) {
  return {g.dataset(),
          g.analyst(),
          CapCell(g.has_epsilon_cap(), g.epsilon_cap(), g.epsilon_spent()),
          CapCell(g.has_delta_cap(), g.delta_cap(), g.delta_spent()),
          g.created_at(),
          g.revoked_at().empty() ? "in force" : absl::StrCat("revoked ", g.revoked_at())};
}

}  // namespace

void WriteListAnalystsText(std::ostream& out, const dpq::v1::ListAnalystsResponse& response) {
  if (response.analysts().empty()) {
    out << "no analysts\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::AnalystInfo& a : response.analysts()) {
    std::vector<std::string> datasets;
    for (const dpq::v1::GrantInfo& g : a.grants()) {
      datasets.push_back(g.revoked_at().empty() ? g.dataset()
                                                : absl::StrCat(g.dataset(), " (revoked)"));
    }
    rows.push_back({a.name(), RoleWord(a.role()), a.created_at(), OrDash(a.last_used_at()),
                    a.revoked_at().empty() ? "active" : absl::StrCat("revoked ", a.revoked_at()),
                    datasets.empty() ? "-" : absl::StrJoin(datasets, ", ")});
  }
  WriteTable(out, {"NAME", "ROLE", "CREATED", "LAST USED", "STATE", "GRANTS"}, rows);
}

void WriteListGrantsText(std::ostream& out, const dpq::v1::ListGrantsResponse& response) {
  if (response.grants().empty()) {
    out << "no grants\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::GrantInfo& g : response.grants()) rows.push_back(GrantCells(g));
  WriteTable(out, {"DATASET", "ANALYST", "EPSILON SPENT", "DELTA SPENT", "GRANTED", "STATE"}, rows);
}

void WriteWhoAmIText(std::ostream& out, const dpq::v1::WhoAmIResponse& response) {
  out << response.name() << " (" << RoleWord(response.role()) << ")\n"
      << "datasets: "
      << (response.datasets().empty() ? std::string("none granted")
                                      : absl::StrJoin(response.datasets(), ", "))
      << '\n';
}

void WriteServerStatusText(std::ostream& out, const dpq::v1::ServerStatusResponse& response) {
  out << "server:    dpqd " << response.server_version() << '\n';
  if (!response.database_reachable()) {
    out << "database:  unreachable (" << response.database_error() << ")\n";
    return;
  }
  out << "database:  reachable, schema version " << response.schema_version() << '\n';
  if (response.budgets().empty()) {
    out << "datasets:  none\n";
    WriteShardsSection(out, response.shards());
    return;
  }
  out << '\n';
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Budget& b : response.budgets()) {
    const double left = b.epsilon_total() > 0 ? 100 * b.epsilon_remaining() / b.epsilon_total() : 0;
    rows.push_back(
        {b.dataset(), b.accountant(),
         absl::StrCat(FormatSignificant(b.epsilon_spent(), 3), " / ",
                      FormatSignificant(b.epsilon_total(), 6)),
         b.epsilon_total() > 0 ? absl::StrCat(FormatSignificant(left, 3), "%") : "no budget",
         absl::StrCat(FormatSignificant(b.delta_spent(), 3), " / ",
                      FormatNumber(b.delta_total()))});
  }
  WriteTable(out, {"DATASET", "ACCOUNTANT", "EPSILON SPENT / TOTAL", "LEFT", "DELTA SPENT / TOTAL"},
             rows);
  WriteShardsSection(out, response.shards());
}

void WriteListAdminLogText(std::ostream& out, const dpq::v1::ListAdminLogResponse& response) {
  if (response.entries().empty()) {
    out << "no admin actions\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::AdminLogEntry& e : response.entries()) {
    rows.push_back({absl::StrCat(e.seq()), e.created_at(), e.admin(), e.action(), e.target(),
                    OrDash(e.details())});
  }
  WriteTable(out, {"SEQ", "TIME", "ADMIN", "ACTION", "TARGET", "DETAILS"}, rows);
}

void WriteVerifyAdminLogText(std::ostream& out, const dpq::v1::VerifyAdminLogResponse& response) {
  if (response.ok()) {
    out << "admin log OK: " << response.entries() << " entries, hash chain intact ("
        << VerifyScope(response) << ")\n";
  } else {
    out << "admin log BROKEN at seq " << response.first_broken_seq() << ": " << response.reason()
        << " (" << response.entries() << " entries; " << VerifyScope(response) << ")\n";
  }
}

}  // namespace dpqctl
