#include "server/dp/ldp/frequency_oracle.h"

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::dp::ldp {
namespace {

// What the client sent, for error messages.
const char* ReportKind(const LdpReport& report) {
  switch (report.index()) {
    case 1: return "an index";
    case 2: return "unary bits";
    case 3: return "an olh report";
    default: return "no report";
  }
}

// The report kind each mechanism expects, as the wire field names it.
const char* ExpectedKind(LdpMechanism m) {
  switch (m) {
    case LdpMechanism::kRr:
    case LdpMechanism::kKrr: return "report.index";
    case LdpMechanism::kOue: return "report.unary_bits";
    case LdpMechanism::kOlh: return "report.olh";
  }
  return "";
}

bool BitAt(const std::string& bits, int64_t j) {
  return (static_cast<unsigned char>(bits[j / 8]) >> (j % 8)) & 1;
}

}  // namespace

const char* LdpMechanismName(LdpMechanism mechanism) {
  switch (mechanism) {
    case LdpMechanism::kRr: return "rr";
    case LdpMechanism::kKrr: return "krr";
    case LdpMechanism::kOue: return "oue";
    case LdpMechanism::kOlh: return "olh";
  }
  return "";
}

absl::StatusOr<LdpMechanism> ParseLdpMechanism(absl::string_view name) {
  for (LdpMechanism m :
       {LdpMechanism::kRr, LdpMechanism::kKrr, LdpMechanism::kOue, LdpMechanism::kOlh}) {
    if (name == LdpMechanismName(m)) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("mechanism must be rr, krr, oue or olh, got ", QuoteForMessage(name)));
}

int64_t UnaryReportBytes(int64_t domain_size) { return (domain_size + 7) / 8; }

absl::StatusOr<FrequencyOracle> FrequencyOracle::Create(LdpMechanism mechanism, double epsilon,
                                                        int64_t domain_size) {
  RETURN_IF_ERROR(ValidateIsPositive(epsilon, "epsilon"));
  if (epsilon > kMaxLdpEpsilon) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon must be at most ", kMaxLdpEpsilon, " per report, got ", epsilon));
  }
  if (mechanism == LdpMechanism::kRr && domain_size != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("domain must have exactly 2 values for rr (binary randomized response), got ",
                     domain_size, "; use krr, oue or olh for more"));
  }
  if (domain_size < 2 || domain_size > kMaxLdpDomainSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("domain must have 2 to ", kMaxLdpDomainSize, " values, got ", domain_size));
  }
  ASSIGN_OR_RETURN(KaryRandomizedResponse krr,
                   KaryRandomizedResponse::Create(epsilon, domain_size));
  ASSIGN_OR_RETURN(OptimizedUnaryEncoding oue,
                   OptimizedUnaryEncoding::Create(epsilon, domain_size));
  ASSIGN_OR_RETURN(OptimizedLocalHashing olh, OptimizedLocalHashing::Create(epsilon, domain_size));
  return FrequencyOracle(mechanism, epsilon, domain_size, krr, oue, olh);
}

absl::Status FrequencyOracle::Validate(const LdpReport& report) const {
  const bool kind_ok =
      (absl::holds_alternative<IndexReport>(report) &&
       (mechanism_ == LdpMechanism::kRr || mechanism_ == LdpMechanism::kKrr)) ||
      (absl::holds_alternative<UnaryReport>(report) && mechanism_ == LdpMechanism::kOue) ||
      (absl::holds_alternative<OlhReport>(report) && mechanism_ == LdpMechanism::kOlh);
  if (!kind_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report: this collection uses ", LdpMechanismName(mechanism_), " and takes ",
        ExpectedKind(mechanism_), ", got ", ReportKind(report),
        " (randomize on the client: `dpqctl collection submit` or the dpq client libraries)"));
  }
  if (const auto* r = absl::get_if<IndexReport>(&report)) {
    if (r->index >= k_) {
      return absl::InvalidArgumentError(
          absl::StrCat("report.index must be in [0, ", k_, "), got ", r->index));
    }
  } else if (const auto* u = absl::get_if<UnaryReport>(&report)) {
    const int64_t bytes = UnaryReportBytes(k_);
    if (static_cast<int64_t>(u->bits.size()) != bytes) {
      return absl::InvalidArgumentError(absl::StrCat("report.unary_bits must be exactly ", bytes,
                                                     " bytes for ", k_, " values, got ",
                                                     u->bits.size()));
    }
    for (int64_t j = k_; j < bytes * 8; ++j) {
      if (BitAt(u->bits, j)) {
        return absl::InvalidArgumentError(absl::StrCat("report.unary_bits: padding bit ", j,
                                                       " is set (bits past ", k_, " must be 0)"));
      }
    }
  } else if (const auto* o = absl::get_if<OlhReport>(&report)) {
    if (o->hashed >= olh_.hash_range()) {
      return absl::InvalidArgumentError(absl::StrCat("report.olh.hashed must be in [0, ",
                                                     olh_.hash_range(), "), got ", o->hashed));
    }
  }
  return absl::OkStatus();
}

void FrequencyOracle::AddSupport(const LdpReport& report, std::vector<int64_t>& support) const {
  if (const auto* r = absl::get_if<IndexReport>(&report)) {
    ++support[r->index];
  } else if (const auto* u = absl::get_if<UnaryReport>(&report)) {
    for (int64_t j = 0; j < k_; ++j) support[j] += BitAt(u->bits, j) ? 1 : 0;
  } else if (const auto* o = absl::get_if<OlhReport>(&report)) {
    for (int64_t v = 0; v < k_; ++v)
      support[v] += olh_.Supports(*o, static_cast<uint32_t>(v)) ? 1 : 0;
  }
}

absl::StatusOr<LdpReport> FrequencyOracle::Randomize(int64_t value, RandomSource& rng) const {
  switch (mechanism_) {
    case LdpMechanism::kRr:
    case LdpMechanism::kKrr: {
      ASSIGN_OR_RETURN(const int64_t index, krr_.Randomize(value, rng));
      return LdpReport(IndexReport{static_cast<uint32_t>(index)});
    }
    case LdpMechanism::kOue: {
      ASSIGN_OR_RETURN(const std::vector<bool> bits, oue_.Randomize(value, rng));
      std::string packed(static_cast<size_t>(UnaryReportBytes(k_)), '\0');
      for (int64_t j = 0; j < k_; ++j) {
        if (bits[j]) packed[j / 8] = static_cast<char>(packed[j / 8] | (1 << (j % 8)));
      }
      return LdpReport(UnaryReport{std::move(packed)});
    }
    case LdpMechanism::kOlh: {
      ASSIGN_OR_RETURN(const OlhReport report, olh_.Randomize(value, rng));
      return LdpReport(report);
    }
  }
  return absl::InternalError("unknown mechanism");
}

PureProtocol FrequencyOracle::protocol() const {
  switch (mechanism_) {
    case LdpMechanism::kRr:
    case LdpMechanism::kKrr: return krr_.protocol();
    case LdpMechanism::kOue: return oue_.protocol();
    case LdpMechanism::kOlh: return olh_.protocol();
  }
  return krr_.protocol();
}

}  // namespace dpq::dp::ldp
