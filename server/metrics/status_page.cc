#include "server/metrics/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/metrics/metrics.h"

namespace dpq::metrics {
namespace {

using Labels = std::map<std::string, std::string>;

struct Sample {
  Labels labels;
  double value = 0;
};

// name -> samples, from the families of one collection (counters and gauges only).
class Scrape {
 public:
  explicit Scrape(const std::vector<prometheus::MetricFamily>& families) {
    for (const auto& f : families) {
      if (f.type != prometheus::MetricType::Counter && f.type != prometheus::MetricType::Gauge)
        continue;
      auto& out = samples_[f.name];
      for (const auto& m : f.metric) {
        Sample s;
        for (const auto& l : m.label) s.labels[l.name] = l.value;
        s.value = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
        out.push_back(std::move(s));
      }
    }
  }

  const std::vector<Sample>& Of(const std::string& name) const {
    static const std::vector<Sample> kNone;
    auto it = samples_.find(name);
    return it == samples_.end() ? kNone : it->second;
  }

  // The value of the first sample of `name` whose labels include `want`; `fallback` when none.
  double Value(const std::string& name, const Labels& want, double fallback = NAN) const {
    for (const auto& s : Of(name)) {
      bool match = true;
      for (const auto& [k, v] : want) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) match = false;
      }
      if (match) return s.value;
    }
    return fallback;
  }

  bool Has(const std::string& name) const { return samples_.count(name) > 0; }

 private:
  std::map<std::string, std::vector<Sample>> samples_;
};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// For people: 6 significant digits (the precision dpqctl shows).
std::string Human(double v) {
  if (std::isnan(v)) return "–";
  return absl::StrFormat("%.6g", v);
}
std::string Exact(double v) { return absl::StrFormat("%.17g", v); }

// <td data-field=... data-value=...>rounded</td>
std::string Cell(const std::string& field, double v) {
  return absl::StrCat("<td class=\"num\" data-field=\"", field, "\" data-value=\"", Exact(v), "\">",
                      Human(v), "</td>");
}

// A horizontal bar: the spent share filled, the rest empty.
std::string BudgetBar(double spent, double total) {
  constexpr double kWidth = 240, kHeight = 14;
  const double share = total > 0 ? std::clamp(spent / total, 0.0, 1.0) : 0;
  const char* fill = share >= 0.9 ? "#c0392b" : share >= 0.75 ? "#d68910" : "#2e86c1";
  return absl::StrFormat(
      "<svg class=\"bar\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\" "
      "aria-label=\"%s%% spent\"><rect width=\"%g\" height=\"%g\" fill=\"#e5e8e8\"/>"
      "<rect width=\"%.2f\" height=\"%g\" fill=\"%s\"/></svg>",
      kWidth, kHeight, kWidth, kHeight, total > 0 ? Human(100 * share) : "no budget set: 0", kWidth,
      kHeight, kWidth * share, kHeight, fill);
}

// Cumulative nominal epsilon at now - window for each window (longest first), then now.
std::string SpentOverTime(const Scrape& scrape, const std::string& population, double nominal_now) {
  struct Point {
    std::string label;
    double value;
  };
  std::vector<Point> points;
  for (int i = kRecentWindowCount - 1; i >= 0; --i) {
    const double recent =
        scrape.Value("dpq_epsilon_spent_recent",
                     {{"population", population}, {"window", kRecentWindows[i].label}});
    if (std::isnan(recent)) return "<p class=\"muted\">no history exported</p>";
    points.push_back(
        {absl::StrCat("−", kRecentWindows[i].label), std::max(0.0, nominal_now - recent)});
  }
  points.push_back({"now", nominal_now});
  constexpr double kW = 420, kH = 120, kLeft = 48, kBottom = 20, kTop = 8, kRight = 12;
  const double top = std::max(1e-300, points.back().value);
  const double step = (kW - kLeft - kRight) / (points.size() - 1);
  auto x = [&](size_t i) { return kLeft + step * i; };
  auto y = [&](double v) { return kTop + (kH - kTop - kBottom) * (1 - (top > 0 ? v / top : 0)); };
  std::string path;
  for (size_t i = 0; i < points.size(); ++i) {
    // A step: the value holds until the next point's time.
    if (i > 0) absl::StrAppendFormat(&path, " L%.1f,%.1f", x(i), y(points[i - 1].value));
    absl::StrAppendFormat(&path, "%s%.1f,%.1f", i == 0 ? "M" : " L", x(i), y(points[i].value));
  }
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\" "
      "aria-label=\"nominal epsilon spent over time\">"
      "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#999\"/>"
      "<text x=\"4\" y=\"%g\" class=\"axis\">%s</text><text x=\"4\" y=\"%g\" class=\"axis\">0</text>"
      "<path d=\"%s\" fill=\"none\" stroke=\"#2e86c1\" stroke-width=\"2\"/>",
      kW, kH, kW, kH, kLeft, kH - kBottom, kW - kRight, kH - kBottom, kTop + 8,
      Human(points.back().value), kH - kBottom, path);
  for (size_t i = 0; i < points.size(); ++i) {
    absl::StrAppendFormat(
        &svg,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#2e86c1\"/>"
        "<text x=\"%.1f\" y=\"%g\" class=\"axis\" text-anchor=\"middle\">%s</text>",
        x(i), y(points[i].value), x(i), kH - 5, points[i].label);
  }
  svg += "</svg>";
  std::string table = "<table class=\"history\"><tr><th>at</th>";
  for (const auto& p : points) absl::StrAppend(&table, "<th>", p.label, "</th>");
  table += "</tr><tr><th>ε spent</th>";
  for (const auto& p : points) {
    absl::StrAppend(&table, "<td class=\"num\" data-field=\"epsilon-spent-at\" data-at=\"", p.label,
                    "\" data-value=\"", Exact(p.value), "\">", Human(p.value), "</td>");
  }
  table += "</tr></table>";
  return svg + table;
}

std::string TimeText(double unix_seconds) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::UnixEpoch() + absl::Seconds(unix_seconds),
                          absl::UTCTimeZone());
}

constexpr char kStyle[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:60em}"
    "h1{margin-bottom:0}h2{margin-top:1.6em;border-bottom:1px solid #ccc}"
    ".meta,.muted{color:#666}.accountant{font-size:60%;color:#666;font-weight:normal}"
    "table{border-collapse:collapse;margin:.4em 0}td,th{padding:.15em .6em;text-align:left}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".bad{color:#c0392b;font-weight:bold}.good{color:#1e8449}"
    ".axis{font-size:10px;fill:#666}";

// The page's head: title, build and time of generation.
std::string RenderHeader(const Scrape& scrape, absl::Time now) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dpq status</title>"
      "<style>",
      kStyle, "</style></head><body>\n<h1>dpq status</h1>\n");
  std::string version = "unknown", sha = "unknown";
  for (const auto& s : scrape.Of("dpq_build_info")) {
    version = s.labels.count("version") ? s.labels.at("version") : version;
    sha = s.labels.count("git_sha") ? s.labels.at("git_sha") : sha;
  }
  absl::StrAppend(&html, "<p class=\"meta\">dpqd <span id=\"version\">", Escape(version),
                  "</span> (commit <span id=\"git-sha\">", Escape(sha), "</span>), generated ",
                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", now, absl::UTCTimeZone()),
                  ". Every figure here is in <a href=\"/metrics\">/metrics</a>.</p>\n");
  return html;
}

// Database health.
std::string RenderDatabase(const Scrape& scrape, double ledger_ok) {
  std::string html;
  absl::StrAppend(&html, "<section id=\"database\" data-ledger-ok=\"", ledger_ok == 1 ? "1" : "0",
                  "\"><h2>Database</h2><table>"
                  "<tr><th>ledger</th><td data-field=\"ledger\" class=\"",
                  ledger_ok == 1 ? "good\">readable" : "bad\">UNREADABLE (see dpqd's log)",
                  "</td></tr>");
  if (scrape.Has("dpq_db_connections")) {
    absl::StrAppend(
        &html, "<tr><th>sessions in use</th>",
        Cell("db-in-use", scrape.Value("dpq_db_connections", {{"state", "in_use"}}, 0)),
        "</tr><tr><th>sessions idle</th>",
        Cell("db-idle", scrape.Value("dpq_db_connections", {{"state", "idle"}}, 0)),
        "</tr><tr><th>sessions opened</th>",
        Cell("db-opened", scrape.Value("dpq_db_connections_opened_total", {}, 0)),
        "</tr><tr><th>closed after an error</th>",
        Cell("db-closed-error",
             scrape.Value("dpq_db_connections_closed_total", {{"reason", "error"}}, 0)),
        "</tr><tr><th>closed by the server</th>",
        Cell("db-closed-server",
             scrape.Value("dpq_db_connections_closed_total", {{"reason", "server"}}, 0)),
        "</tr><tr><th>failed connection attempts</th>",
        Cell("db-connect-failures", scrape.Value("dpq_db_connect_failures_total", {}, 0)), "</tr>");
  }
  html += "</table></section>\n";
  return html;
}

// The shard servers and their state at dpqd's last probe (dpq_shard_up, dpq_shard_probe_seconds).
std::string RenderShards(const Scrape& scrape) {
  std::string html = "<section id=\"shards\"><h2>Shard servers</h2>";
  std::vector<const Sample*> shards;
  for (const auto& s : scrape.Of("dpq_shard_up")) {
    if (s.labels.count("shard")) shards.push_back(&s);
  }
  if (shards.empty()) {
    return html + "<p class=\"muted\">No shard servers registered.</p></section>\n";
  }
  std::sort(shards.begin(), shards.end(), [](const Sample* a, const Sample* b) {
    return a->labels.at("shard") < b->labels.at("shard");
  });
  html += "<table><tr><th>shard</th><th>state</th><th>probe seconds</th></tr>";
  for (const Sample* s : shards) {
    const std::string& name = s->labels.at("shard");
    absl::StrAppend(
        &html, "<tr class=\"shard\" data-shard=\"", Escape(name), "\"><td>", Escape(name),
        "</td><td data-field=\"shard-state\" data-value=\"",
        s->value == 1 ? "up\" class=\"good\">up" : "down\" class=\"bad\">DOWN", "</td>",
        Cell("shard-probe-seconds", scrape.Value("dpq_shard_probe_seconds", {{"shard", name}})),
        "</tr>");
  }
  return html + "</table></section>\n";
}

// The accountant the population's ledger composes with ("basic" unless exported otherwise).
std::string AccountantOf(const Scrape& scrape, const std::string& d) {
  std::string accountant = "basic";
  for (const auto& s : scrape.Of("dpq_budget_accountant_info")) {
    if (s.labels.count("population") && s.labels.at("population") == d &&
        s.labels.count("accountant")) {
      accountant = s.labels.at("accountant");
    }
  }
  return accountant;
}

// The population's heading and its epsilon and delta budget: spent, remaining, total.
std::string RenderBudget(const Scrape& scrape, const std::string& d,
                         const std::string& accountant) {
  std::string html;
  absl::StrAppend(&html, "<section class=\"population\" data-population=\"", Escape(d),
                  "\" data-accountant=\"", Escape(accountant), "\"><h2>", Escape(d),
                  " <span class=\"accountant\">", Escape(accountant),
                  " accountant</span></h2>\n<table class=\"budget\"><tr><th></th><th>spent</th>"
                  "<th>remaining</th><th>total</th><th></th></tr>");
  for (const char* param : {"epsilon", "delta"}) {
    const double total = scrape.Value("dpq_budget_limit", {{"population", d}, {"param", param}}, 0);
    const double remaining =
        scrape.Value("dpq_budget_remaining", {{"population", d}, {"param", param}}, 0);
    const double spent = std::max(0.0, total - remaining);
    const std::string p(param);
    absl::StrAppend(&html, "<tr data-param=\"", p, "\"><th>", p == "epsilon" ? "ε" : "δ", "</th>",
                    Cell(p + "-spent", spent), Cell(p + "-remaining", remaining),
                    Cell(p + "-total", total), "<td>", BudgetBar(spent, total), "</td></tr>");
  }
  html += "</table>\n";
  return html;
}

// A population whose budget is per time block: instead of the budget table (it has no
// dpq_budget_* series, whose one total and spent over all blocks would mean nothing together), a
// bar per exported block, its current one (holding today, UTC) and the one before.
std::string RenderBlocks(const Scrape& scrape, const std::string& d) {
  std::string html;
  absl::StrAppend(&html, "<section class=\"population\" data-population=\"", Escape(d),
                  "\" data-accountant=\"basic\" data-budget=\"per-block\"><h2>", Escape(d),
                  " <span class=\"accountant\">budget per time block</span></h2>\n"
                  "<p class=\"muted\">Every block has a budget of its own and a query pays each "
                  "block it reads; one total for the population would mean nothing. Older blocks: "
                  "<code>dpqctl budget show ",
                  Escape(d),
                  " --blocks</code>.</p>\n<table class=\"blocks\"><tr><th>block</th><th>from</th>"
                  "<th></th><th>spent</th><th>remaining</th><th>limit</th><th></th></tr>");
  for (const char* block : {"current", "previous"}) {
    const Labels which = {{"population", d}, {"block", block}};
    const double start = scrape.Value("dpq_block_start_timestamp_seconds", which);
    if (std::isnan(start)) continue;  // the current block is the first one
    const std::string day =
        absl::FormatTime("%Y-%m-%d", absl::UnixEpoch() + absl::Seconds(start), absl::UTCTimeZone());
    for (const char* param : {"epsilon", "delta"}) {
      Labels labels = which;
      labels["param"] = param;
      const double limit = scrape.Value("dpq_block_budget_limit", labels, 0);
      const double spent = scrape.Value("dpq_block_budget_spent", labels, 0);
      const double remaining = scrape.Value("dpq_block_budget_remaining", labels, 0);
      const std::string p(param);
      absl::StrAppend(&html, "<tr data-block=\"", block, "\" data-param=\"", p,
                      "\" data-block-start=\"", day, "\"><th>", p == "epsilon" ? block : "",
                      "</th><td>", p == "epsilon" ? day : "", "</td><th>",
                      p == "epsilon" ? "ε" : "δ", "</th>", Cell(p + "-spent", spent),
                      Cell(p + "-remaining", remaining), Cell(p + "-total", limit), "<td>",
                      BudgetBar(spent, limit), "</td></tr>");
    }
  }
  html += "</table>\n";
  return html;
}

// The audit row count and this dpqd's last verification of the population's audit chain (none
// while its timestamp is 0: Metrics exports every population before verifying it).
std::string RenderAudit(const Scrape& scrape, const std::string& d) {
  std::string html;
  const double rows = scrape.Value("dpq_audit_rows_total", {{"population", d}});
  const double verified = scrape.Value("dpq_audit_verify_ok", {{"population", d}});
  const double verified_at =
      scrape.Value("dpq_audit_verify_timestamp_seconds", {{"population", d}});
  absl::StrAppend(&html, "<p>Audit rows: <span data-field=\"audit-rows\" data-value=\"",
                  Exact(rows), "\">", Human(rows), "</span>. Last verification by this dpqd: ");
  if (std::isnan(verified) || !(verified_at > 0)) {
    html += "<span data-field=\"audit-verify\" data-value=\"none\">none yet</span>.</p>\n";
  } else {
    absl::StrAppend(&html, "<span data-field=\"audit-verify\" data-value=\"",
                    verified == 1 ? "ok" : "broken", "\" class=\"",
                    verified == 1 ? "good\">passed" : "bad\">BROKEN", "</span> at ",
                    TimeText(verified_at), ".</p>\n");
  }
  return html;
}

// One row per analyst who spent on the population (`analysts`, the population's
// dpq_epsilon_spent_total samples), then one per capped analyst who has spent nothing yet.
std::string RenderAnalysts(const Scrape& scrape, const std::string& d,
                           std::vector<const Sample*> analysts) {
  std::string html;
  absl::StrAppend(&html, "<h3>Analysts</h3>");
  std::sort(analysts.begin(), analysts.end(), [](const Sample* a, const Sample* b) {
    return a->labels.at("analyst") < b->labels.at("analyst");
  });
  std::set<std::string> listed;
  std::string rows_html;
  auto analyst_row = [&](const std::string& a, double spent) {
    const double cap = scrape.Value("dpq_analyst_epsilon_cap", {{"population", d}, {"analyst", a}});
    const double left =
        scrape.Value("dpq_analyst_epsilon_cap_remaining", {{"population", d}, {"analyst", a}});
    absl::StrAppend(&rows_html, "<tr class=\"analyst\" data-analyst=\"", Escape(a), "\"><td>",
                    Escape(a), "</td>", Cell("analyst-epsilon-spent", spent));
    if (std::isnan(cap)) {
      rows_html +=
          "<td class=\"muted\" data-field=\"analyst-epsilon-cap\" data-value=\"none\">no cap</td><td></td><td></td>";
    } else {
      absl::StrAppend(&rows_html, Cell("analyst-epsilon-cap", cap),
                      Cell("analyst-epsilon-cap-remaining", left), "<td>",
                      BudgetBar(cap - left, cap), "</td>");
    }
    rows_html += "</tr>";
  };
  for (const Sample* s : analysts) {
    listed.insert(s->labels.at("analyst"));
    analyst_row(s->labels.at("analyst"), s->value);
  }
  for (const auto& s : scrape.Of("dpq_analyst_epsilon_cap")) {  // capped, nothing spent yet
    if (s.labels.count("population") && s.labels.at("population") == d &&
        !listed.count(s.labels.at("analyst"))) {
      listed.insert(s.labels.at("analyst"));
      analyst_row(s.labels.at("analyst"), 0);
    }
  }
  if (listed.empty()) {
    html +=
        "<p class=\"muted\">No analyst has spent on this population and no grant has a cap.</p>";
  } else {
    absl::StrAppend(&html,
                    "<table class=\"analysts\"><tr><th>analyst</th><th>ε spent</th><th>ε cap</th>"
                    "<th>cap remaining</th><th></th></tr>",
                    rows_html, "</table>");
  }
  return html;
}

// One population's section: budget, nominal spend over time, audit, analysts.
std::string RenderPopulation(const Scrape& scrape, const std::string& d) {
  const std::string accountant = AccountantOf(scrape, d);
  const bool per_block = !std::isnan(scrape.Value("dpq_block_budget_limit", {{"population", d}}));
  std::string html = per_block ? RenderBlocks(scrape, d) : RenderBudget(scrape, d, accountant);

  // Nominal spend: the sum of the queries' own epsilon (the ledger's spent is lower under a
  // non-basic accountant, which composes the charges more tightly).
  double nominal = 0;
  std::vector<const Sample*> analysts;
  for (const auto& s : scrape.Of("dpq_epsilon_spent_total")) {
    if (s.labels.count("population") && s.labels.at("population") == d) {
      nominal += s.value;
      analysts.push_back(&s);
    }
  }
  absl::StrAppend(&html,
                  "<h3>ε spent over time</h3><p class=\"muted\">Nominal ε charged (the sum of "
                  "the queries' ε; basic composition)",
                  accountant == "basic" ? ""
                                        : ", which can exceed the ledger's "
                                          "spent figure under the " +
                                              Escape(accountant) + " accountant",
                  ".</p>\n", SpentOverTime(scrape, d, nominal), "\n");

  html += RenderAudit(scrape, d);
  html += RenderAnalysts(scrape, d, std::move(analysts));
  html += "</section>\n";
  return html;
}

}  // namespace

std::string RenderStatusPage(const std::vector<prometheus::MetricFamily>& families,
                             absl::Time now) {
  const Scrape scrape(families);
  std::string html = RenderHeader(scrape, now);
  const double ledger_ok = scrape.Value("dpq_ledger_scrape_ok", {}, 0);
  html += RenderDatabase(scrape, ledger_ok);
  html += RenderShards(scrape);

  std::set<std::string> populations;
  for (const char* name : {"dpq_budget_limit", "dpq_block_budget_limit"}) {
    for (const auto& s : scrape.Of(name))
      populations.insert(s.labels.count("population") ? s.labels.at("population") : "");
  }
  if (ledger_ok != 1) {
    html += "<p class=\"bad\">The ledger could not be read: no budget figures.</p>\n";
  } else if (populations.empty()) {
    html += "<p class=\"muted\">No populations yet.</p>\n";
  }
  for (const std::string& p : populations) html += RenderPopulation(scrape, p);
  html += "</body></html>\n";
  return html;
}

}  // namespace dpq::metrics
