// The accountants a ledger or a price can name, as a closed set: code decides by kind, and the
// names ("basic", "advanced", "rdp", "zcdp", "pld") appear only where text crosses an edge (the
// ledgers.accountant column, the proto fields, metric labels, messages).
#ifndef DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_KIND_H_
#define DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_KIND_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::dp::accounting {

enum class AccountantKind { kBasic, kAdvanced, kRdp, kZcdp, kPld };

// The accountant's name as stored and shown: "basic", "advanced", "rdp", "zcdp" or "pld".
absl::string_view AccountantName(AccountantKind kind);

// The kind named `name` (exactly as AccountantName spells it). INVALID_ARGUMENT "accountant must
// be basic, advanced, rdp, zcdp or pld, got "<name>"" otherwise (the name quoted by
// QuoteForMessage).
absl::StatusOr<AccountantKind> ParseAccountantKind(absl::string_view name);

}  // namespace dpq::dp::accounting

#endif  // DPQ_SERVER_DP_ACCOUNTING_ACCOUNTANT_KIND_H_
