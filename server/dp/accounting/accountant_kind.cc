#include "server/dp/accounting/accountant_kind.h"

#include "absl/strings/str_cat.h"
#include "server/base/validation.h"

namespace dpq::dp::accounting {
namespace {

constexpr AccountantKind kAllKinds[] = {AccountantKind::kBasic, AccountantKind::kAdvanced,
                                        AccountantKind::kRdp, AccountantKind::kZcdp,
                                        AccountantKind::kPld};

}  // namespace

absl::string_view AccountantName(AccountantKind kind) {
  switch (kind) {
    case AccountantKind::kBasic: return "basic";
    case AccountantKind::kAdvanced: return "advanced";
    case AccountantKind::kRdp: return "rdp";
    case AccountantKind::kZcdp: return "zcdp";
    case AccountantKind::kPld: return "pld";
  }
  return "basic";  // unreachable: the switch covers every kind
}

absl::StatusOr<AccountantKind> ParseAccountantKind(absl::string_view name) {
  for (AccountantKind kind : kAllKinds) {
    if (AccountantName(kind) == name) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "accountant must be basic, advanced, rdp, zcdp or pld, got ", QuoteForMessage(name)));
}

}  // namespace dpq::dp::accounting
