#include "bench/load/run_report.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace dpqbench {
namespace {

std::string MixText(const BenchOptions& o) {
  return absl::StrJoin(o.mix, ",", [](std::string* out, const MixEntry& e) {
    absl::StrAppend(out, KindName(e.kind), "=", e.weight);
  });
}

// 3 significant digits, no exponent for the magnitudes a benchmark sees.
std::string Sig3(double v) {
  if (v == 0 || !std::isfinite(v)) return absl::StrFormat("%g", v);
  const int digits = static_cast<int>(std::floor(std::log10(std::fabs(v)))) + 1;
  const int decimals = std::max(0, 3 - digits);
  return absl::StrFormat("%.*f", decimals, v);
}

// Three significant digits as a number, for JSON.
double Round3(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

}  // namespace

std::string FormatTable(const BenchOptions& o, const RunFigures& f) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"clients", absl::StrCat(f.clients)},
      {"mix", MixText(o)},
      {"seconds", Sig3(f.seconds)},
      {"requests", absl::StrCat(f.requests, " (", f.ok, " ok, ", f.queries, " queries)")},
      {"throughput", absl::StrCat(Sig3(f.throughput()), " requests/s")},
      {"latency p50", absl::StrCat(Sig3(f.latency_ms.p50), " ms")},
      {"latency p90", absl::StrCat(Sig3(f.latency_ms.p90), " ms")},
      {"latency p99", absl::StrCat(Sig3(f.latency_ms.p99), " ms")},
      {"latency max", absl::StrCat(Sig3(f.latency_ms.max), " ms")},
  };
  if (f.cached > 0) {
    rows.push_back({"cached answers", absl::StrCat(f.cached, " (charged nothing)")});
  }
  if (f.errors.empty()) rows.push_back({"errors", "none"});
  for (const auto& [code, n] : f.errors)
    rows.push_back({absl::StrCat("errors ", code), absl::StrCat(n)});
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  for (const auto& [label, value] : rows) {
    absl::StrAppend(&out, label, std::string(width + 2 - label.size(), ' '), value, "\n");
  }
  return out;
}

std::string FormatJson(const BenchOptions& o, const RunFigures& f) {
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [code, n] : f.errors) errors[code] = n;
  nlohmann::json doc = {
      {"throughput", Round3(f.throughput())},
      {"p50", Round3(f.latency_ms.p50)},
      {"p90", Round3(f.latency_ms.p90)},
      {"p99", Round3(f.latency_ms.p99)},
      {"max", Round3(f.latency_ms.max)},
      {"mean", Round3(f.latency_ms.mean)},
      {"latency_unit", "ms"},
      {"errors", errors},
      {"requests", f.requests},
      {"ok", f.ok},
      {"queries", f.queries},
      {"cached", f.cached},
      {"clients", f.clients},
      {"seconds", Round3(f.seconds)},
      {"mix", MixText(o)},
      {"datasets", o.datasets.size()},
  };
  return doc.dump() + "\n";
}

}  // namespace dpqbench
