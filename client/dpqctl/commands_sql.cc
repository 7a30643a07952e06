// dpqctl sql: AnalystService.ExecuteSql / ExplainSql (proto/dpq/v1/dpq.proto, server/sql).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/enum_names.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/plan_report_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace dpqctl {
namespace {

// A script of many aggregates is planned, charged and scanned in one call, like query-batch.
constexpr double kSqlTimeoutSeconds = 120;

absl::StatusOr<std::string> ReadStatement(const SqlArgs& args, std::istream& in) {
  const bool from_arg = !args.statement.empty() && args.statement != "-";
  if (from_arg && !args.file.empty()) {
    return absl::InvalidArgumentError("give the statement or --file, not both");
  }
  if (from_arg) return args.statement;
  std::string text;
  if (!args.file.empty()) {
    std::ifstream file(args.file, std::ios::binary);
    if (!file)
      return absl::InvalidArgumentError(absl::StrCat("--file: cannot open '", args.file, "'"));
    text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  } else {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return absl::InvalidArgumentError(
        "no statement: give it as an argument, with --file, or on standard input");
  }
  return text;
}

nlohmann::json CellToJson(const dpq::v1::SqlCell& c) {
  if (c.null()) return nullptr;
  if (c.array_size() > 0)
    return nlohmann::json(std::vector<double>(c.array().begin(), c.array().end()));
  if (!c.text().empty()) return c.text();
  return c.number();
}

nlohmann::json ResultSetToJson(const dpq::v1::SqlResultSet& r) {
  nlohmann::json columns = nlohmann::json::array();
  for (const dpq::v1::SqlColumn& c : r.columns()) {
    columns.push_back({{"name", c.name()}, {"type", c.type()}});
  }
  nlohmann::json rows = nlohmann::json::array();
  // Per released value its noise scale and interval; null for keys and computed values.
  nlohmann::json noise = nlohmann::json::array();
  for (const dpq::v1::SqlRow& row : r.rows()) {
    nlohmann::json values = nlohmann::json::array();
    nlohmann::json scales = nlohmann::json::array();
    for (int i = 0; i < row.cells_size(); ++i) {
      const dpq::v1::SqlCell& c = row.cells(i);
      // A string cell must stay a string even when empty ("" is a key like any other).
      nlohmann::json v = CellToJson(c);
      if (!c.null() && c.array_size() == 0 && r.columns(i).type() == "string") v = c.text();
      values.push_back(v);
      if (c.released()) {
        scales.push_back({{"noise_scale", c.noise_scale()},
                          {"components", NoiseComponentsToJson(c.components())},
                          {"interval",
                           {{"confidence", c.interval().confidence()},
                            {"lower", c.interval().lower()},
                            {"upper", c.interval().upper()}}}});
      } else {
        scales.push_back(nullptr);
      }
    }
    rows.push_back(std::move(values));
    noise.push_back(std::move(scales));
  }
  return {{"columns", columns}, {"rows", rows}, {"noise", noise}};
}

nlohmann::json SqlResponseToJson(const dpq::v1::SqlResponse& r) {
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json results = nlohmann::json::array();
  for (const dpq::v1::SqlResultSet& s : r.results()) results.push_back(ResultSetToJson(s));
  if (!results.empty()) {
    out["columns"] = results[0]["columns"];
    out["rows"] = results[0]["rows"];
    out["noise"] = results[0]["noise"];
  }
  out["results"] = results;
  out["dataset"] = r.dataset();
  out["epsilon"] = r.epsilon();
  out["delta"] = r.delta();
  out["epsilon_sum"] = r.epsilon_sum();
  out["delta_sum"] = r.delta_sum();
  out["budget"] = BudgetToJson(r.budget());
  out["request_id"] = r.request_id();
  out["cached"] = r.cached();
  out["replayed"] = r.replayed();
  return out;
}

std::string CellText(const dpq::v1::SqlCell& c, const std::string& type) {
  if (c.null()) return "NULL";
  if (type == "array<float64>") {
    std::vector<std::string> parts;
    for (double v : c.array()) parts.push_back(FormatSignificant(v, 4));
    return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
  }
  if (type == "string") return c.text();
  if (type == "int64") return FormatSignificant(c.number(), 15);
  if (c.released()) {
    return FormatToPrecision(c.number(), (c.interval().upper() - c.interval().lower()) / 2);
  }
  return FormatSignificant(c.number(), 6);
}

void WriteSqlText(std::ostream& out, const dpq::v1::SqlResponse& r) {
  for (int s = 0; s < r.results_size(); ++s) {
    const dpq::v1::SqlResultSet& set = r.results(s);
    if (s > 0) out << "\n";
    std::vector<std::string> header;
    for (const dpq::v1::SqlColumn& c : set.columns()) header.push_back(c.name());
    std::vector<std::vector<std::string>> rows;
    for (const dpq::v1::SqlRow& row : set.rows()) {
      std::vector<std::string> cells;
      for (int i = 0; i < row.cells_size(); ++i)
        cells.push_back(CellText(row.cells(i), set.columns(i).type()));
      rows.push_back(std::move(cells));
    }
    WriteTable(out, header, rows);
    out << "(" << set.rows_size() << (set.rows_size() == 1 ? " row" : " rows") << ")\n";
  }
  out << "charged: epsilon " << FormatNumber(r.epsilon()) << ", delta " << FormatNumber(r.delta());
  if (r.epsilon_sum() != r.epsilon()) {
    out << " jointly (the parts one by one: epsilon " << FormatNumber(r.epsilon_sum()) << ", delta "
        << FormatNumber(r.delta_sum()) << ")";
  }
  if (r.cached()) out << " (cached answer)";
  if (r.replayed()) out << " (replayed answer)";
  out << "\nbudget of " << r.budget().dataset() << " left: epsilon "
      << FormatNumber(r.budget().epsilon_remaining()) << ", delta "
      << FormatNumber(r.budget().delta_remaining()) << "\nrequest id: " << r.request_id() << "\n";
}

// What the server says a part's error measures (SqlPlanPart.error_basis): AVG's is its noisy
// sum's, the mean's being about that / N for a group of N (not known before the query; `dpqctl
// plan --expected-count` plans the value itself); VAR_POP / STDDEV_POP state none.
bool ErrorIsPerCount(const dpq::v1::SqlPlanPart& p) { return p.error_basis() == "per_count"; }
bool ErrorNotStated(const dpq::v1::SqlPlanPart& p) { return p.error_basis() == "not_stated"; }

std::string ErrorCell(const dpq::v1::SqlPlanPart& p) {
  if (ErrorNotStated(p)) return "n/a (needs N)";
  const std::string e = absl::StrCat("+-", FormatSignificant(p.error(), 3));
  if (p.rank_error()) return absl::StrCat(e, " (rank)");
  if (ErrorIsPerCount(p)) return absl::StrCat(e, " / N");
  return e;
}

nlohmann::json ExplainToJson(const dpq::v1::ExplainSqlResponse& r) {
  nlohmann::json parts = nlohmann::json::array();
  for (const dpq::v1::SqlPlanPart& p : r.parts()) {
    const dpq::v1::QueryRequest& q = p.query();
    nlohmann::json part = {
        {"statement", p.statement()},
        {"function", p.function()},
        {"aggregate", AggregateWord(q.aggregate())},
        {"column", q.column()},
        {"max_contributions", q.max_contributions()},
        {"max_partitions", q.max_partitions()},
        {"pre_aggregate", p.pre_aggregate()},
        {"mechanism", MechanismWord(p.mechanism())},
        {"epsilon", q.epsilon()},
        {"delta", q.delta()},
        {"sensitivity", p.sensitivity()},
        {"noise_scale", p.noise_scale()},
        {"error", ErrorNotStated(p) ? nlohmann::json(nullptr) : nlohmann::json(p.error())},
        {"error_basis", p.error_basis()},
        {"rank_error", p.rank_error()},
        {"error_of_sum", ErrorIsPerCount(p)},
        {"where", q.where()},
        {"group_by", std::vector<std::string>(q.group_by().begin(), q.group_by().end())}};
    if (q.has_lower()) part["lower"] = q.lower();
    if (q.has_upper()) part["upper"] = q.upper();
    if (q.quantiles_size() > 0) {
      part["quantiles"] = std::vector<double>(q.quantiles().begin(), q.quantiles().end());
    }
    if (q.bins_size() > 0) part["bins"] = std::vector<double>(q.bins().begin(), q.bins().end());
    AddPlanReportJson(ReportOf(p), part);
    parts.push_back(std::move(part));
  }
  nlohmann::json out = {{"dataset", r.dataset()},         {"population", r.population()},
                        {"epsilon", r.epsilon()},         {"delta", r.delta()},
                        {"epsilon_sum", r.epsilon_sum()}, {"delta_sum", r.delta_sum()},
                        {"confidence", r.confidence()},   {"parts", parts}};
  if (r.has_join()) out["join"] = JoinPlanToJson(r.join());
  return out;
}

// What a part reads: its column, its per-row expression (cut to a table cell's width; the part's
// own lines below give it whole), or "*" for rows.
std::string ValueCell(const dpq::v1::SqlPlanPart& p) {
  constexpr size_t kMaxCell = 32;
  if (p.has_value_expression()) {
    const std::string& text = p.value_expression().canonical();
    return text.size() <= kMaxCell ? text : absl::StrCat(text.substr(0, kMaxCell - 3), "...");
  }
  return p.query().column().empty() ? "*" : p.query().column();
}

void WriteExplainText(std::ostream& out, const dpq::v1::ExplainSqlResponse& r) {
  // Who pays, and what the rows are, before the table of what is released.
  if (!r.population().empty()) {
    out << "population: " << r.population() << " (its one budget pays for every dataset in it)\n";
  }
  if (r.has_join()) WriteJoinPlanText(out, r.join(), "");
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::SqlPlanPart& p : r.parts()) {
    const dpq::v1::QueryRequest& q = p.query();
    std::string bounds = q.has_lower() ? absl::StrCat("[", FormatNumber(q.lower()), ", ",
                                                      FormatNumber(q.upper()), "]")
                                       : "-";
    if (p.has_value_expression() && !p.value_expression().counted_only()) {
      // Given or derived: the clamp the plan uses.
      bounds = absl::StrCat("[", FormatNumber(p.value_expression().lower()), ", ",
                            FormatNumber(p.value_expression().upper()), "]");
    }
    if (p.function() == "KEYS") {
      // A key-only part releases keys, no statistic: partition selection spends its budget.
      rows.push_back({p.function(), "-", "-", "-", absl::StrCat(q.max_partitions()), "selection",
                      FormatSignificant(q.epsilon(), 6), FormatNumber(q.delta()), "-", "-"});
      continue;
    }
    rows.push_back({p.function(), ValueCell(p), bounds,
                    p.pre_aggregate() ? "per unit" : absl::StrCat(q.max_contributions(), " rows"),
                    absl::StrCat(q.max_partitions()), MechanismWord(p.mechanism()),
                    FormatSignificant(q.epsilon(), 6), FormatNumber(q.delta()),
                    FormatSignificant(p.sensitivity(), 4), ErrorCell(p)});
  }
  WriteTable(
      out,
      {"AGGREGATE", "COLUMN", "BOUNDS", "K", "M", "MECHANISM", "EPSILON", "DELTA", "SENSITIVITY",
       absl::StrCat("ERROR (", FormatSignificant(r.confidence() * 100, 3), " %)")},
      rows);
  bool per_count = false, not_stated = false;
  for (const dpq::v1::SqlPlanPart& p : r.parts()) {
    per_count = per_count || ErrorIsPerCount(p);
    not_stated = not_stated || ErrorNotStated(p);
  }
  if (per_count) {
    out << "/ N: a mean's error is its noisy sum's divided by the group's count N (units, or kept "
           "rows), unknown before the query, plus the noisy count's share\n";
  }
  if (not_stated) out << "n/a: a variance's error depends on N and the data's moments\n";
  // Per part, what the run will use: every noise component, a quantile's method, the released
  // keys and the value's expression.
  for (int i = 0; i < r.parts_size(); ++i) {
    const dpq::v1::SqlPlanPart& p = r.parts(i);
    out << "part " << i + 1 << ": " << p.function() << " (statement " << p.statement() + 1 << ")\n";
    WritePlanReportText(out, ReportOf(p), "  ");
  }
  out << "total charge: epsilon " << FormatNumber(r.epsilon()) << ", delta "
      << FormatNumber(r.delta());
  if (r.epsilon_sum() != r.epsilon()) {
    out << " jointly (the parts one by one: epsilon " << FormatNumber(r.epsilon_sum()) << ", delta "
        << FormatNumber(r.delta_sum()) << ")";
  }
  out << " (nothing charged by explain)\n";
}

}  // namespace

int RunSql(const GlobalOptions& options, const Output& output, const SqlArgs& args,
           std::istream& in) {
  absl::StatusOr<std::string> statement = ReadStatement(args, in);
  if (!statement.ok()) return ReportUsageError(output, statement.status());
  dpq::v1::SqlRequest request;
  request.set_statement(*statement);
  request.set_request_id(args.request_id);
  request.set_confidence(args.confidence);
  request.set_joint_delta(args.joint_delta);
  if (args.explain) {
    return RunRpc<dpq::v1::ExplainSqlResponse>(
        options, output, kDefaultTimeoutSeconds,
        [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
            dpq::v1::ExplainSqlResponse* response) {
          return dpq::v1::AnalystService::NewStub(channel)->ExplainSql(context, request, response);
        },
        ExplainToJson, WriteExplainText);
  }
  return RunRpc<dpq::v1::SqlResponse>(
      options, output, kSqlTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::SqlResponse* response) {
        return dpq::v1::AnalystService::NewStub(channel)->ExecuteSql(context, request, response);
      },
      SqlResponseToJson, WriteSqlText);
}

void RegisterSqlCommand(CLI::App& app, CommandLine& command_line) {
  SqlArgs& sql_args = command_line.Keep<SqlArgs>();
  CLI::App* sql = app.add_subcommand(
      "sql",
      "ask in SQL: SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = ...) ... (BigQuery's "
      "DP clause), compiled onto the same planner, ledger and audit as query");
  sql->add_option("statement", sql_args.statement,
                  "the statement (several separated by ';' are charged jointly); omit it or give - "
                  "to read standard input");
  sql->add_option("--file", sql_args.file, "read the statement from this file");
  sql->add_flag(
      "--explain", sql_args.explain,
      "print the plan (aggregates, bounds, K, mechanism, epsilon/delta per part, the total "
      "charge, the expected error) and charge nothing");
  sql->add_option("--request-id", sql_args.request_id, "idempotency key");
  sql->add_option("--confidence", sql_args.confidence,
                  "confidence level of the intervals (default 0.95)")
      ->check(kFinite);
  sql->add_option(
         "--joint-delta", sql_args.joint_delta,
         "delta of the joint (RDP/PLD) price of a script of several aggregates, in [0, 1), "
         "as query-batch --delta; 0 (default): the parts' charges add up")
      ->check(kFinite);
  command_line.RunWhenParsed(sql, [&sql_args](const GlobalOptions& options, const Output& output) {
    return RunSql(options, output, sql_args, std::cin);
  });
}

}  // namespace dpqctl
