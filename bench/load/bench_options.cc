#include "bench/load/bench_options.h"

#include <cmath>
#include <functional>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dpqbench {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", what));
}

absl::Status ParseDouble(absl::string_view flag, absl::string_view value, double lo, double hi,
                         double* out) {
  double v;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < lo || v > hi) {
    return Bad(flag, absl::StrCat("expected a number in [", lo, ", ", hi, "], got '", value, "'"));
  }
  *out = v;
  return absl::OkStatus();
}

template <typename Int>
absl::Status ParseInt(absl::string_view flag, absl::string_view value, int64_t lo, int64_t hi,
                      Int* out) {
  int64_t v;
  if (!absl::SimpleAtoi(value, &v) || v < lo || v > hi) {
    return Bad(flag,
               absl::StrCat("expected an integer in [", lo, ", ", hi, "], got '", value, "'"));
  }
  *out = static_cast<Int>(v);
  return absl::OkStatus();
}

}  // namespace

bool IsLoopbackTarget(absl::string_view server) {
  if (absl::ConsumePrefix(&server, "unix:")) return !server.empty();
  absl::ConsumePrefix(&server, "ipv4:");
  absl::ConsumePrefix(&server, "ipv6:");
  absl::ConsumePrefix(&server, "dns:///");
  absl::string_view host;
  if (absl::ConsumePrefix(&server, "[")) {  // [v6]:port
    const size_t close = server.find(']');
    if (close == absl::string_view::npos) return false;
    host = server.substr(0, close);
    server.remove_prefix(close + 1);
    if (!absl::ConsumePrefix(&server, ":")) return false;
  } else {
    const size_t colon = server.rfind(':');
    if (colon == absl::string_view::npos) return false;
    host = server.substr(0, colon);
    server.remove_prefix(colon + 1);
  }
  int port;
  if (!absl::SimpleAtoi(server, &port) || port < 1 || port > 65535) return false;
  if (host == "::1" || absl::AsciiStrToLower(host) == "localhost") return true;
  // 127.0.0.0/8: four decimal octets, the first 127.
  std::vector<absl::string_view> octets = absl::StrSplit(host, '.');
  if (octets.size() != 4) return false;
  for (absl::string_view octet : octets) {
    int v;
    if (octet.empty() || octet.size() > 3 || !absl::SimpleAtoi(octet, &v) || v < 0 || v > 255) {
      return false;
    }
  }
  return octets[0] == "127";
}

absl::string_view KindName(RequestKind kind) {
  switch (kind) {
    case RequestKind::kCount: return "count";
    case RequestKind::kSum: return "sum";
    case RequestKind::kMean: return "mean";
    case RequestKind::kBatch: return "batch";
  }
  return "?";
}

absl::StatusOr<std::vector<MixEntry>> ParseMix(absl::string_view text) {
  static const auto* kKinds =
      new std::map<std::string, RequestKind, std::less<>>{{"count", RequestKind::kCount},
                                                          {"sum", RequestKind::kSum},
                                                          {"mean", RequestKind::kMean},
                                                          {"batch", RequestKind::kBatch}};
  std::vector<MixEntry> mix;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    auto kind = kKinds->find(kv.first);
    if (kind == kKinds->end()) {
      return Bad("mix",
                 absl::StrCat("unknown request '", kv.first,
                              "' (expected count, sum, mean or batch, e.g. count=8,batch=1)"));
    }
    int weight = 1;
    if (!kv.second.empty() || item.find('=') != absl::string_view::npos) {
      if (!absl::SimpleAtoi(kv.second, &weight) || weight < 1 || weight > 1000) {
        return Bad("mix",
                   absl::StrCat("weight of '", kv.first, "' must be an integer in [1, 1000]"));
      }
    }
    mix.push_back({kind->second, weight});
  }
  return mix;
}

std::string Usage() {
  return absl::StrCat(
      "dpq-bench: drives a dpqd on this machine with analyst queries and reports throughput,\n"
      "latency percentiles and errors by gRPC status code.\n\n"
      "usage: dpq-bench --server HOST:PORT --token T --dataset D[,D2...] [flags]\n\n"
      "  --server HOST:PORT     loopback only (127.x.x.x, ::1, localhost, unix:PATH); default 127.0.0.1:7777\n"
      "  --token T              analyst bearer token (or env DPQ_TOKEN)\n"
      "  --dataset D[,D2...]    each request goes to one of these, chosen uniformly at random\n"
      "  --clients N            concurrent clients, each with its own connection (1..",
      kMaxClients,
      "; default 1)\n"
      "  --duration SECONDS     stop sending after this long (at most ",
      kMaxDurationSeconds,
      "; default 10)\n"
      "  --count N              stop after N requests in all (at most ",
      kMaxCount,
      "; default: --duration only)\n"
      "  --rate R               target requests/s over all clients (default 0: as fast as answered)\n"
      "  --mix SPEC             e.g. count=8,sum=1,mean=1,batch=1 (default count)\n"
      "  --column C             column of sum and mean\n"
      "  --batch-size N         count queries per QueryBatch (1..",
      kMaxBatchSize,
      "; default 10)\n"
      "  --epsilon E            per query (default 0.001). Query number n of the run asks for\n"
      "                         E + 2e-12 n, so the result cache never answers it and every query\n"
      "                         is debited; give runs on the same dataset different E\n"
      "  --max-contributions K  rows per privacy unit (default: the server's)\n"
      "  --timeout SECONDS      deadline of each call (default 60)\n"
      "  --tls-ca FILE          PEM root certificate: TLS instead of an insecure channel\n"
      "  --json                 one JSON document on stdout instead of the table\n");
}

absl::StatusOr<BenchOptions> ParseBenchOptions(const std::vector<std::string>& args) {
  BenchOptions o;
  bool saw_dataset = false;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return o;
    }
    if (arg == "--json") {
      o.json = true;
      continue;
    }
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (flags start with --; see --help)"));
    }
    std::string name, value;
    const size_t eq = arg.find('=');
    if (eq != absl::string_view::npos) {
      name = std::string(arg.substr(0, eq));
      value = std::string(arg.substr(eq + 1));
    } else {
      name = std::string(arg);
      if (i + 1 >= args.size()) return Bad(name, "needs a value");
      value = args[++i];
    }
    absl::Status s;
    if (name == "server") {
      o.server = value;
    } else if (name == "token") {
      o.token = value;
    } else if (name == "dataset") {
      o.datasets = absl::StrSplit(value, ',', absl::SkipWhitespace());
      saw_dataset = true;
    } else if (name == "clients") {
      s = ParseInt("clients", value, 1, kMaxClients, &o.clients);
    } else if (name == "duration") {
      s = ParseDouble("duration", value, 0.1, kMaxDurationSeconds, &o.duration_seconds);
    } else if (name == "count") {
      s = ParseInt("count", value, 1, kMaxCount, &o.count);
    } else if (name == "rate") {
      s = ParseDouble("rate", value, 0, 1e7, &o.rate);
    } else if (name == "mix") {
      absl::StatusOr<std::vector<MixEntry>> mix = ParseMix(value);
      if (!mix.ok()) return mix.status();
      o.mix = *std::move(mix);
    } else if (name == "column") {
      o.column = value;
    } else if (name == "batch-size") {
      s = ParseInt("batch-size", value, 1, kMaxBatchSize, &o.batch_size);
    } else if (name == "epsilon") {
      s = ParseDouble("epsilon", value, 1e-9, 1e6, &o.epsilon);
    } else if (name == "max-contributions") {
      s = ParseInt("max-contributions", value, 1, 1'000'000, &o.max_contributions);
    } else if (name == "timeout") {
      s = ParseDouble("timeout", value, 0.001, kMaxDurationSeconds, &o.timeout_seconds);
    } else if (name == "tls-ca") {
      o.tls_ca_file = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!s.ok()) return s;
  }
  if (!IsLoopbackTarget(o.server)) {
    return Bad("server", absl::StrCat("'", o.server,
                                      "' is not a loopback address: dpq-bench only loads a dpqd on "
                                      "this machine (127.0.0.1:PORT, [::1]:PORT, localhost:PORT or "
                                      "unix:PATH)"));
  }
  if (!saw_dataset || o.datasets.empty()) return Bad("dataset", "name at least one dataset");
  for (const MixEntry& e : o.mix) {
    if ((e.kind == RequestKind::kSum || e.kind == RequestKind::kMean) && o.column.empty()) {
      return Bad("column", absl::StrCat("the mix has ", KindName(e.kind), ": name its column"));
    }
  }
  return o;
}

}  // namespace dpqbench
