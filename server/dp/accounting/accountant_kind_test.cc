#include "server/dp/accounting/accountant_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/dp/accounting/accountant.h"

namespace dpq::dp::accounting {
namespace {

using ::testing::HasSubstr;

TEST(AccountantKindTest, EveryNameParsesBackToItsKind) {
  for (AccountantKind kind : {AccountantKind::kBasic, AccountantKind::kAdvanced,
                              AccountantKind::kRdp, AccountantKind::kZcdp, AccountantKind::kPld}) {
    absl::StatusOr<AccountantKind> parsed = ParseAccountantKind(AccountantName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
    // The accountant built for a kind says that kind's name (its serialized state carries it).
    EXPECT_EQ(CreateAccountant(kind)->name(), AccountantName(kind));
  }
}

TEST(AccountantKindTest, UnknownNameIsRefusedWithTheListOfNames) {
  absl::StatusOr<AccountantKind> parsed = ParseAccountantKind("Basic");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "accountant must be basic, advanced, rdp, zcdp or pld, got \"Basic\"");
  EXPECT_THAT(std::string(ParseAccountantKind("").status().message()),
              HasSubstr("accountant must be"));
}

}  // namespace
}  // namespace dpq::dp::accounting
