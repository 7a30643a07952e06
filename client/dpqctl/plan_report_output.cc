#include "client/dpqctl/plan_report_output.h"

#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/text_output.h"

namespace dpqctl {
namespace {

constexpr int kScaleDigits = 4;
constexpr int kBoundDigits = 10;   // declared bounds are short decimals; derived ones need not be
constexpr size_t kKeysShown = 20;  // longer declared lists print their first keys and a count

void WriteIndented(std::ostream& out, const std::string& text, const std::string& indent) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out << indent << line << '\n';
}

std::string KeyText(const dpq::v1::GroupKey& key) {
  if (key.values_size() == 1) return key.values(0);
  return absl::StrCat("(", absl::StrJoin(key.values(), ", "), ")");
}

void WriteKeysText(std::ostream& out, const dpq::v1::ReleasedKeys& keys,
                   const std::string& indent) {
  if (keys.source() == "selected") {
    out << indent << "keys: selected from the data (partition selection at epsilon "
        << FormatSignificant(keys.selection_epsilon(), 6) << ", delta "
        << FormatNumber(keys.selection_delta()) << "; at most " << keys.max_partitions()
        << (keys.max_partitions() == 1 ? " group" : " groups") << " per unit)\n";
    return;
  }
  if (keys.source() != "declared") return;
  std::vector<std::string> shown;
  for (int i = 0; i < keys.keys_size() && shown.size() < kKeysShown; ++i) {
    shown.push_back(KeyText(keys.keys(i)));
  }
  out << indent << "keys: declared, all " << keys.keys_size()
      << " released: " << absl::StrJoin(shown, ", ");
  if (static_cast<size_t>(keys.keys_size()) > shown.size()) out << ", ...";
  out << '\n';
}

}  // namespace

nlohmann::json NoiseComponentsToJson(const NoiseComponents& components) {
  nlohmann::json out = nlohmann::json::array();
  for (const dpq::v1::NoiseComponent& c : components) {
    out.push_back({{"statistic", c.statistic()},
                   {"mechanism", MechanismWord(c.mechanism())},
                   {"epsilon", c.epsilon()},
                   {"delta", c.delta()},
                   {"sensitivity", c.sensitivity()},
                   {"noise_scale", c.noise_scale()}});
  }
  return out;
}

PlanReportView ReportOf(const dpq::v1::PlanResponse& r) {
  return {&r.components(), r.has_quantile() ? &r.quantile() : nullptr,
          r.has_keys() ? &r.keys() : nullptr,
          r.has_value_expression() ? &r.value_expression() : nullptr};
}

PlanReportView ReportOf(const dpq::v1::SqlPlanPart& p) {
  return {&p.components(), p.has_quantile() ? &p.quantile() : nullptr,
          p.has_keys() ? &p.keys() : nullptr,
          p.has_value_expression() ? &p.value_expression() : nullptr};
}

void AddPlanReportJson(const PlanReportView& report, nlohmann::json& out) {
  if (report.components != nullptr) out["components"] = NoiseComponentsToJson(*report.components);
  if (report.quantile != nullptr) {
    out["quantile"] = {{"method", report.quantile->method()},
                       {"epsilon", report.quantile->epsilon()}};
  }
  if (report.keys != nullptr && !report.keys->source().empty()) {
    const dpq::v1::ReleasedKeys& k = *report.keys;
    nlohmann::json keys = {{"source", k.source()}};
    if (k.source() == "declared") {
      nlohmann::json list = nlohmann::json::array();
      for (const dpq::v1::GroupKey& key : k.keys()) {
        list.push_back(std::vector<std::string>(key.values().begin(), key.values().end()));
      }
      keys["keys"] = std::move(list);
    }
    if (k.source() == "selected") {
      keys["selection_epsilon"] = k.selection_epsilon();
      keys["selection_delta"] = k.selection_delta();
      keys["max_partitions"] = k.max_partitions();
    }
    out["keys"] = std::move(keys);
  }
  if (report.value_expression != nullptr) {
    const dpq::v1::ValueExpression& e = *report.value_expression;
    if (e.counted_only()) {  // a count's expression: no clamp to state
      out["value_expression"] = {{"canonical", e.canonical()}, {"counted_only", true}};
      return;
    }
    out["value_expression"] = {
        {"canonical", e.canonical()},
        {"lower", e.lower()},
        {"upper", e.upper()},
        {"derived", e.derived()},
        {"derivation", std::vector<std::string>(e.derivation().begin(), e.derivation().end())}};
  }
}

void WritePlanReportText(std::ostream& out, const PlanReportView& report,
                         const std::string& indent) {
  if (report.components != nullptr && !report.components->empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const dpq::v1::NoiseComponent& c : *report.components) {
      rows.push_back({c.statistic(), MechanismWord(c.mechanism()),
                      FormatSignificant(c.epsilon(), 6), FormatNumber(c.delta()),
                      FormatSignificant(c.sensitivity(), kScaleDigits),
                      FormatSignificant(c.noise_scale(), kScaleDigits)});
    }
    std::ostringstream table;
    WriteTable(table, {"NOISE", "MECHANISM", "EPSILON", "DELTA", "SENSITIVITY", "NOISE SCALE"},
               rows);
    WriteIndented(out, table.str(), indent);
  }
  if (report.quantile != nullptr) {
    if (report.quantile->method() == "exponential") {
      out << indent << "quantiles: chosen by the exponential mechanism at epsilon "
          << FormatSignificant(report.quantile->epsilon(), 6)
          << " per group; intervals from the noisy histogram\n";
    } else {
      out << indent << "quantiles: values and intervals read off the noisy histogram's CDF\n";
    }
  }
  if (report.keys != nullptr) WriteKeysText(out, *report.keys, indent);
  if (report.value_expression != nullptr) {
    const dpq::v1::ValueExpression& e = *report.value_expression;
    if (e.counted_only()) {
      out << indent << "counts rows where " << e.canonical() << " is not NULL\n";
      return;
    }
    out << indent << "value: " << e.canonical() << " clamped to ["
        << FormatSignificant(e.lower(), kBoundDigits) << ", "
        << FormatSignificant(e.upper(), kBoundDigits) << "], "
        << (e.derived() ? "derived from declared bounds:" : "bounds given in the query") << '\n';
    for (const std::string& line : e.derivation()) out << indent << "  " << line << '\n';
  }
}

nlohmann::json JoinPlanToJson(const dpq::v1::JoinPlan& join) {
  nlohmann::json tables = nlohmann::json::array();
  for (const dpq::v1::JoinPlan::Table& t : join.tables()) {
    tables.push_back({{"dataset", t.dataset()}, {"alias", t.alias()}, {"public", t.is_public()}});
  }
  return {
      {"tables", tables},
      {"conditions", std::vector<std::string>(join.conditions().begin(), join.conditions().end())},
      {"privacy_unit", join.privacy_unit()},
      {"bounding", join.bounding()}};
}

void WriteJoinPlanText(std::ostream& out, const dpq::v1::JoinPlan& join,
                       const std::string& indent) {
  out << indent << "join:";
  for (int i = 0; i < join.tables_size(); ++i) {
    const dpq::v1::JoinPlan::Table& t = join.tables(i);
    if (i > 0) out << " JOIN";
    out << ' ' << t.dataset();
    if (t.alias() != t.dataset()) out << ' ' << t.alias();
    if (t.is_public()) out << " (public)";
    if (i > 0 && i - 1 < join.conditions_size()) out << " ON " << join.conditions(i - 1);
  }
  out << '\n';
  out << indent << "  privacy unit: " << join.privacy_unit() << '\n';
  if (!join.bounding().empty()) out << indent << "  bounding: " << join.bounding() << '\n';
}

}  // namespace dpqctl
