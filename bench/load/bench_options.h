// dpq-bench's command line: what to send, to which loopback dpqd, for how long.
//
// The tool is a load generator, so it is fenced in: the target must be a loopback address (a
// benchmark pointed at someone else's server by a typo would be a denial of service), and every
// run is bounded in time (--duration <= kMaxDurationSeconds) and in requests (--count <=
// kMaxCount). Parsing never touches the network.
#ifndef DPQ_BENCH_LOAD_BENCH_OPTIONS_H_
#define DPQ_BENCH_LOAD_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpqbench {

inline constexpr double kMaxDurationSeconds = 3600;
inline constexpr int64_t kMaxCount = 100'000'000;
inline constexpr int kMaxClients = 1024;
inline constexpr int kMaxBatchSize = 1000;  // QueryBatchRequest's own limit

// One kind of request in the mix. kBatch sends --batch-size count queries as one QueryBatch.
enum class RequestKind { kCount, kSum, kMean, kBatch };

struct MixEntry {
  RequestKind kind;
  int weight;  // relative frequency, >= 1
};

struct BenchOptions {
  std::string server = "127.0.0.1:7777";
  std::string token;
  std::vector<std::string> datasets;  // --dataset: each request picks one uniformly at random
  int clients = 1;
  double duration_seconds = 10;  // stop sending after this long
  int64_t count = 0;             // stop after this many requests in all; 0: only --duration
  double rate = 0;               // target requests/s over all clients; 0: as fast as answered
  std::vector<MixEntry> mix = {{RequestKind::kCount, 1}};
  std::string column;  // for sum and mean
  int batch_size = 10;
  double epsilon = 0.001;       // per query (each one a little more, so no answer is cached)
  int max_contributions = 0;    // 0: the server's default
  double timeout_seconds = 60;  // deadline of each call
  std::string tls_ca_file;      // empty: insecure channel
  bool json = false;
  bool help = false;
};

// "host:port" whose host is 127.0.0.0/8, [::1], ::1 or localhost; or "unix:PATH". Anything else
// is not loopback.
bool IsLoopbackTarget(absl::string_view server);

// --mix "count=8,sum=1,batch=1" (names count, sum, mean, batch; weights >= 1; a name alone means
// weight 1). INVALID_ARGUMENT naming the bad entry.
absl::StatusOr<std::vector<MixEntry>> ParseMix(absl::string_view text);

absl::string_view KindName(RequestKind kind);

// Parses argv (flags as --name=value or --name value). INVALID_ARGUMENT with a message that names
// the flag and what to do; every bound above is checked here, and so is the loopback rule.
absl::StatusOr<BenchOptions> ParseBenchOptions(const std::vector<std::string>& args);

// The --help text, ending in a newline.
std::string Usage();

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_BENCH_OPTIONS_H_
