// What the one-trip debit may decide alone, what its write must find, and what it remembers after.
#include "server/store/known_ledgers.h"

#include <vector>

#include "gtest/gtest.h"

namespace dpq::store {
namespace {

Allocation Debit(int64_t principal, bool fresh = true) {
  Allocation a;
  a.principal_id = principal;
  a.request_id = "r";
  a.request_id_is_fresh = fresh;
  return a;
}

KnownLedger Known() {
  KnownLedger k;
  k.image = "(ledger v1)";
  k.ledger.head_seq = 7;
  k.grants[1] = KnownGrant{GrantCap{}, "(1,,,10,0)"};
  k.grants[2] = absl::nullopt;  // an admin: no grant row
  k.grants[3] = KnownGrant{GrantCap{}, "(3,100,,5,0)"};
  return k;
}

TEST(KnownLedgerTest, DecidesOnlyFreshIdsOfKnownAnalystsWithoutBlocks) {
  const KnownLedger k = Known();
  EXPECT_TRUE(k.Decides(Debit(1)));
  EXPECT_TRUE(k.Decides(Debit(2))) << "a known absence of a grant row is known";
  EXPECT_FALSE(k.Decides(Debit(4))) << "an analyst never seen";
  EXPECT_FALSE(k.Decides(Debit(1, /*fresh=*/false))) << "a caller's id may name a committed row";
  Allocation blocks = Debit(1);
  blocks.block_starts = {20000};
  EXPECT_FALSE(k.Decides(blocks));
  KnownLedger per_block = Known();
  per_block.ledger.budget.per_block = true;
  EXPECT_FALSE(per_block.Decides(Debit(1)));
}

TEST(KnownLedgerTest, TheWriteExpectsTheLedgerAndExactlyTheGroupsGrantRows) {
  const KnownLedger k = Known();
  const Allocation a = Debit(3), b = Debit(1), c = Debit(3), admin = Debit(2);
  const std::vector<const Allocation*> group = {&a, &b, &c, &admin};
  const ExpectedRows expected = k.ExpectFor(group);
  EXPECT_EQ(expected.ledger_image, "(ledger v1)");
  EXPECT_EQ(expected.principals, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(expected.grant_images, (std::vector<std::string>{"(1,,,10,0)", "(3,100,,5,0)"}));
  const std::map<int64_t, GrantCap> caps = k.CapsFor(group);
  EXPECT_EQ(caps.size(), 2u);
  EXPECT_EQ(caps.count(2), 0u);
}

TEST(KnownLedgerTest, AfterAWriteTheChargedRowsTakeTheirNewImagesAndTheOthersKeepTheirs) {
  const KnownLedger k = Known();
  DebitAdmission admission;
  admission.ledger.head_seq = 9;
  GrantCap charged;
  charged.epsilon_spent_units = 12;
  charged.charged = true;
  admission.grants[1] = charged;
  admission.grants[3] = k.grants.at(3)->cap;
  WrittenImages written;
  written.ledger_image = "(ledger v2)";
  written.grant_images[1] = "(1,,,12,0)";
  const KnownLedger next = k.After(admission, written);
  EXPECT_EQ(next.image, "(ledger v2)");
  EXPECT_EQ(next.ledger.head_seq, 9);
  ASSERT_TRUE(next.grants.at(1).has_value());
  EXPECT_EQ(next.grants.at(1)->image, "(1,,,12,0)");
  EXPECT_EQ(next.grants.at(1)->cap.epsilon_spent_units, 12);
  EXPECT_FALSE(next.grants.at(1)->cap.charged);
  EXPECT_EQ(next.grants.at(3)->image, "(3,100,,5,0)");
  EXPECT_FALSE(next.grants.at(2).has_value());
}

TEST(KnownLedgersTest, ALeaderTakesTheEntrySoAFailedOneLeavesNothingBehind) {
  KnownLedgers known;
  int owner = 0, other_owner = 0;
  known.Put(&owner, 5, Known());
  EXPECT_FALSE(known.Take(&other_owner, 5).has_value());
  EXPECT_FALSE(known.Take(&owner, 6).has_value());
  ASSERT_TRUE(known.Take(&owner, 5).has_value());
  EXPECT_FALSE(known.Take(&owner, 5).has_value()) << "taken: gone until put back";
}

}  // namespace
}  // namespace dpq::store
