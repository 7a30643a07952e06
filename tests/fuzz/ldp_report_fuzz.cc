// Fuzz target: validation and support of local-DP reports (server/dp/ldp/frequency_oracle.h), the
// code every SubmitReport and Estimate runs on client-chosen bytes.
// Input: byte 0 picks the mechanism, byte 1 the domain size (2..257; 2 for rr), byte 2 epsilon
// (0.05..12.8), byte 3 the report kind (none, index, unary bits, olh); the rest fills the report
// (4 bytes of index, the bit vector as is, or 8 bytes of seed and 4 of hashed).
// Invariants beyond "no crash, no sanitizer report":
//   - refusals are INVALID_ARGUMENT and name "report";
//   - a report passes iff it is the mechanism's kind, in range, of the exact length with zero
//     padding (recomputed here independently);
//   - an accepted report adds exactly its support: 1 for an index, the set bits for unary bits,
//     the values whose OLH hash equals `hashed` for olh, and never more than 1 per value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/dp/ldp/frequency_oracle.h"
#include "server/dp/ldp/local_hashing.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::dp::ldp::FrequencyOracle;
using dpq::dp::ldp::IndexReport;
using dpq::dp::ldp::LdpMechanism;
using dpq::dp::ldp::LdpReport;
using dpq::dp::ldp::OlhReport;
using dpq::dp::ldp::UnaryReport;

uint64_t ReadBigEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const LdpMechanism mechanism = static_cast<LdpMechanism>(data[0] % 4);
  const int64_t k = mechanism == LdpMechanism::kRr ? 2 : 2 + data[1];
  const double epsilon = 0.05 * (1 + data[2] % 256);
  auto oracle = FrequencyOracle::Create(mechanism, epsilon, k);
  DPQ_FUZZ_CHECK(oracle.ok(), "valid parameters refused: %s", oracle.status().ToString().c_str());
  const uint8_t* rest = data + 4;
  const size_t rest_size = size - 4;
  LdpReport report;
  bool expect_ok = false;
  const uint32_t g = dpq::dp::ldp::OlhHashRange(epsilon);
  switch (data[3] % 4) {
    case 1: {
      if (rest_size < 4) return 0;
      const uint32_t index = static_cast<uint32_t>(ReadBigEndian(rest, 4));
      report = IndexReport{index};
      expect_ok = (mechanism == LdpMechanism::kRr || mechanism == LdpMechanism::kKrr) && index < k;
      break;
    }
    case 2: {
      const std::string bits(reinterpret_cast<const char*>(rest), rest_size);
      report = UnaryReport{bits};
      bool padding_clear = true;
      for (size_t j = static_cast<size_t>(k); j < bits.size() * 8; ++j) {
        if ((static_cast<uint8_t>(bits[j / 8]) >> (j % 8)) & 1) padding_clear = false;
      }
      expect_ok = mechanism == LdpMechanism::kOue &&
                  bits.size() == static_cast<size_t>((k + 7) / 8) && padding_clear;
      break;
    }
    case 3: {
      if (rest_size < 12) return 0;
      const OlhReport olh{ReadBigEndian(rest, 8),
                          static_cast<uint32_t>(ReadBigEndian(rest + 8, 4))};
      report = olh;
      expect_ok = mechanism == LdpMechanism::kOlh && olh.hashed < g;
      break;
    }
    default: break;  // no report at all
  }
  const absl::Status status = oracle->Validate(report);
  DPQ_FUZZ_CHECK(status.ok() == expect_ok, "Validate said %s, expected %s",
                 status.ToString().c_str(), expect_ok ? "OK" : "a refusal");
  if (!status.ok()) {
    DPQ_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument, "refusal code: %s",
                   status.ToString().c_str());
    DPQ_FUZZ_CHECK(status.message().find("report") != absl::string_view::npos,
                   "refusal does not name the report: %s", status.ToString().c_str());
    return 0;
  }
  std::vector<int64_t> support(static_cast<size_t>(k), 0);
  oracle->AddSupport(report, support);
  int64_t total = 0;
  for (int64_t v = 0; v < k; ++v) {
    DPQ_FUZZ_CHECK(support[v] == 0 || support[v] == 1, "support[%lld] = %lld",
                   static_cast<long long>(v), static_cast<long long>(support[v]));
    total += support[v];
    if (const auto* o = absl::get_if<OlhReport>(&report)) {
      const bool supports =
          dpq::dp::ldp::OlhHash(o->seed, static_cast<uint32_t>(v), g) == o->hashed;
      DPQ_FUZZ_CHECK(support[v] == (supports ? 1 : 0), "olh support of %lld",
                     static_cast<long long>(v));
    } else if (const auto* u = absl::get_if<UnaryReport>(&report)) {
      const bool bit = (static_cast<uint8_t>(u->bits[v / 8]) >> (v % 8)) & 1;
      DPQ_FUZZ_CHECK(support[v] == (bit ? 1 : 0), "unary support of %lld",
                     static_cast<long long>(v));
    }
  }
  if (absl::holds_alternative<IndexReport>(report)) {
    DPQ_FUZZ_CHECK(total == 1, "an index supports %lld values", static_cast<long long>(total));
  }
  return 0;
}
