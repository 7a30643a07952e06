#include "server/store/debit_admission.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/query/calendar.h"
#include "server/store/audit_chain.h"

namespace dpq::store {
namespace {

using dp::accounting::AccountantKind;
using dp::accounting::PrivacyEvent;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kPopulationId = 7;
constexpr int64_t kHeadSeq = 41;
constexpr int64_t kEpsilonUnit = 1000000000000;  // epsilon 1 (privacy_units.h)

// A basic ledger with `epsilon` to spend in total and a chain of kHeadSeq rows.
LedgerState BasicLedger(int64_t epsilon_total_units) {
  LedgerState ledger;
  ledger.budget.population_id = kPopulationId;
  ledger.budget.population = "salaries";
  ledger.budget.epsilon_total_units = epsilon_total_units;
  ledger.head_seq = kHeadSeq;
  ledger.head_hash = std::string(32, '\x5a');
  return ledger;
}

Allocation Debit(const std::string& request_id, int64_t epsilon_units, int64_t principal_id = 2,
                 const std::string& fingerprint = "fp") {
  Allocation a;
  a.request_id = request_id;
  a.principal_id = principal_id;
  a.analyst = principal_id == 2 ? "alice" : "bob";
  a.fingerprint = fingerprint;
  a.epsilon_units = epsilon_units;
  a.events = PrivacyEvent::PureDp(static_cast<double>(epsilon_units) / kEpsilonUnit).ToSpec();
  return a;
}

DebitAdmission Admit(const LedgerState& ledger, const std::vector<Allocation>& group,
                     const std::map<std::string, Allocation>& prior = {},
                     std::map<int64_t, GrantCap> grants = {}) {
  std::vector<const Allocation*> members;
  for (const Allocation& a : group) members.push_back(&a);
  return AdmitDebits(ledger, prior, std::move(grants), members);
}

TEST(DebitAdmissionTest, CommittedRequestIdIsReplayedAndChargesNothing) {
  Allocation committed = Debit("r1", kEpsilonUnit);
  committed.seq = 12;
  committed.hash = std::string(32, '\x01');
  // Replayed even though the charge would no longer fit.
  const DebitAdmission out =
      Admit(BasicLedger(0), {Debit("r1", kEpsilonUnit)}, {{"r1", committed}});
  ASSERT_TRUE(out.decided[0].ok()) << out.decided[0].status();
  EXPECT_TRUE(out.decided[0]->replayed);
  EXPECT_EQ(out.decided[0]->allocation.seq, 12);
  EXPECT_EQ(out.decided[0]->allocation.hash, committed.hash);
  EXPECT_THAT(out.replay_of, ElementsAre(-1));
  EXPECT_TRUE(out.admitted.empty());
  EXPECT_EQ(out.ledger.head_seq, kHeadSeq);
  EXPECT_EQ(out.ledger.budget.epsilon_spent_units, 0);
}

TEST(DebitAdmissionTest, CommittedRequestIdWithAnotherFingerprintIsTaken) {
  const DebitAdmission out =
      Admit(BasicLedger(10 * kEpsilonUnit), {Debit("r1", kEpsilonUnit, 2, "other query")},
            {{"r1", Debit("r1", kEpsilonUnit)}});
  EXPECT_EQ(out.decided[0].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(out.decided[0].status().message()),
              HasSubstr("request_id r1 is already taken by a different query or analyst"));
  EXPECT_TRUE(out.admitted.empty());
}

TEST(DebitAdmissionTest, SameRequestIdTwiceInOneGroupIsChargedOnce) {
  const DebitAdmission out =
      Admit(BasicLedger(10 * kEpsilonUnit), {Debit("r1", kEpsilonUnit), Debit("r1", kEpsilonUnit),
                                             Debit("r1", kEpsilonUnit, 2, "other query")});
  EXPECT_THAT(out.admitted, ElementsAre(0));
  EXPECT_THAT(out.replay_of, ElementsAre(-1, 0, -1));
  ASSERT_TRUE(out.decided[1].ok());
  EXPECT_TRUE(out.decided[1]->replayed);
  EXPECT_EQ(out.decided[2].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(out.ledger.budget.epsilon_spent_units, kEpsilonUnit);
  EXPECT_EQ(out.ledger.head_seq, kHeadSeq + 1);
}

TEST(DebitAdmissionTest, BasicExhaustionRefusesOnlyThatMember) {
  const DebitAdmission out = Admit(
      BasicLedger(10 * kEpsilonUnit),
      {Debit("a", 6 * kEpsilonUnit), Debit("b", 6 * kEpsilonUnit), Debit("c", 4 * kEpsilonUnit)});
  EXPECT_THAT(out.admitted, ElementsAre(0, 2));
  EXPECT_EQ(out.decided[1].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(out.decided[1].status().message()),
              HasSubstr("privacy budget of population salaries exhausted"));
  EXPECT_EQ(out.decided[0]->allocation.seq, kHeadSeq + 1);
  EXPECT_EQ(out.decided[2]->allocation.seq, kHeadSeq + 2);
  // Each result carries the budget right after that debit.
  EXPECT_EQ(out.decided[0]->budget.epsilon_spent_units, 6 * kEpsilonUnit);
  EXPECT_EQ(out.decided[2]->budget.epsilon_spent_units, 10 * kEpsilonUnit);
  EXPECT_EQ(out.ledger.budget.epsilon_spent_units, 10 * kEpsilonUnit);
}

TEST(DebitAdmissionTest, ChargeMustBePositive) {
  const DebitAdmission out = Admit(BasicLedger(10 * kEpsilonUnit), {Debit("a", 0)});
  EXPECT_EQ(out.decided[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(out.admitted.empty());
}

TEST(DebitAdmissionTest, CapsRefuseTheAnalystOverItOnly) {
  std::map<int64_t, GrantCap> grants;
  grants[2].epsilon_cap_units = 5 * kEpsilonUnit;
  grants[2].epsilon_spent_units = 1 * kEpsilonUnit;
  const DebitAdmission out =
      Admit(BasicLedger(100 * kEpsilonUnit),
            {Debit("a", 3 * kEpsilonUnit, 2), Debit("b", 3 * kEpsilonUnit, 2),
             Debit("c", 30 * kEpsilonUnit, 3)},
            {}, grants);
  EXPECT_THAT(out.admitted, ElementsAre(0, 2));  // bob (3) has no grant row: no cap
  EXPECT_EQ(out.decided[1].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(out.decided[1].status().message()),
              HasSubstr("analyst alice's cap on population salaries exhausted"));
  EXPECT_TRUE(out.grants.at(2).charged);
  EXPECT_EQ(out.grants.at(2).epsilon_spent_units, 4 * kEpsilonUnit);
  EXPECT_EQ(out.grants.count(3), 0u);
  // A debit refused by its cap charged the budget nothing.
  EXPECT_EQ(out.ledger.budget.epsilon_spent_units, 33 * kEpsilonUnit);
}

TEST(DebitAdmissionTest, AdmittedRowsLinkOntoTheHeadInOrder) {
  const LedgerState ledger = BasicLedger(10 * kEpsilonUnit);
  const DebitAdmission out =
      Admit(ledger, {Debit("a", kEpsilonUnit), Debit("b", kEpsilonUnit), Debit("c", kEpsilonUnit)});
  ASSERT_THAT(out.admitted, ElementsAre(0, 1, 2));
  std::string prev = ledger.head_hash;
  for (size_t i = 0; i < 3; ++i) {
    const Allocation& a = out.decided[i]->allocation;
    EXPECT_EQ(a.seq, kHeadSeq + 1 + static_cast<int64_t>(i));
    EXPECT_EQ(a.prev_hash, prev);
    EXPECT_EQ(a.hash, ChainHash(prev, kPopulationId, a));
    prev = a.hash;
  }
  EXPECT_EQ(out.ledger.head_seq, kHeadSeq + 3);
  EXPECT_EQ(out.ledger.head_hash, prev);
}

TEST(DebitAdmissionTest, RefusedMemberChangesNothing) {
  const LedgerState ledger = BasicLedger(10 * kEpsilonUnit);
  const DebitAdmission with_refusals =
      Admit(ledger, {Debit("a", kEpsilonUnit), Debit("x", 20 * kEpsilonUnit), Debit("y", 0),
                     Debit("b", 2 * kEpsilonUnit)});
  const DebitAdmission without =
      Admit(ledger, {Debit("a", kEpsilonUnit), Debit("b", 2 * kEpsilonUnit)});
  EXPECT_EQ(with_refusals.ledger.head_seq, without.ledger.head_seq);
  EXPECT_EQ(with_refusals.ledger.head_hash, without.ledger.head_hash);
  EXPECT_EQ(with_refusals.ledger.budget.epsilon_spent_units,
            without.ledger.budget.epsilon_spent_units);
  EXPECT_EQ(with_refusals.decided[3]->allocation.hash, without.decided[1]->allocation.hash);
}

TEST(DebitAdmissionTest, ComposedAccountantAdvancesItsStateOnlyForAdmittedDebits) {
  LedgerState ledger = BasicLedger(3 * kEpsilonUnit);
  ledger.budget.accountant = AccountantKind::kRdp;
  ledger.budget.delta_total_units = 1000000000000;  // delta 1e-6
  const DebitAdmission out =
      Admit(ledger, {Debit("a", kEpsilonUnit), Debit("b", 5 * kEpsilonUnit)});
  EXPECT_THAT(out.admitted, ElementsAre(0));
  EXPECT_EQ(out.decided[1].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(out.decided[1].status().message()),
              HasSubstr("the rdp accountant proves"));
  EXPECT_THAT(out.ledger.accountant_state, HasSubstr("dpq-accountant/1 rdp"));
  EXPECT_EQ(out.decided[0]->budget.epsilon_spent_units, out.ledger.budget.epsilon_spent_units);
  EXPECT_EQ(out.ledger.budget.delta_spent_units, ledger.budget.delta_total_units);
  // Composed from scratch, the admitted debit alone gives the same state.
  const DebitAdmission alone = Admit(ledger, {Debit("a", kEpsilonUnit)});
  EXPECT_EQ(alone.ledger.accountant_state, out.ledger.accountant_state);
}

// A per-block ledger: the analyst's cap limits each block, whatever the analyst spent in others;
// the refusal names the block and charges neither the blocks nor the cap.
TEST(DebitAdmissionTest, PerBlockCapsLimitEachBlockAndNameTheFullOne) {
  LedgerState ledger = BasicLedger(10 * kEpsilonUnit);
  ledger.budget.per_block = true;
  std::map<int64_t, BlockCell> cells;
  cells[100] = BlockCell();
  cells[101] = BlockCell();
  std::map<int64_t, GrantCap> grants;
  grants[2].epsilon_cap_units = 2 * kEpsilonUnit;
  grants[2].epsilon_spent_units = 9 * kEpsilonUnit;  // all blocks together: limits nothing here
  grants[2].blocks[100].epsilon_spent_units = kEpsilonUnit + kEpsilonUnit / 2;
  grants[2].blocks[101].epsilon_spent_units = 0;
  auto paying = [](Allocation a, std::vector<int64_t> starts) {
    a.blocks = "day:" + query::FormatDate(starts.front()) + ":" + query::FormatDate(starts.back());
    a.block_starts = std::move(starts);
    return a;
  };
  const std::vector<Allocation> group = {paying(Debit("both", kEpsilonUnit), {100, 101}),
                                         paying(Debit("later", kEpsilonUnit), {101}),
                                         paying(Debit("again", kEpsilonUnit), {101})};
  std::vector<const Allocation*> members;
  for (const Allocation& a : group) members.push_back(&a);
  const DebitAdmission out = AdmitDebits(ledger, {}, grants, members, cells);
  EXPECT_THAT(out.admitted, ElementsAre(1, 2));
  EXPECT_EQ(out.decided[0].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(out.decided[0].status().message()),
              HasSubstr("analyst alice's cap on time block 1970-04-11 of population salaries "
                        "exhausted"));
  EXPECT_EQ(out.grants.at(2).blocks.at(100).epsilon_spent_units, kEpsilonUnit + kEpsilonUnit / 2);
  EXPECT_FALSE(out.grants.at(2).blocks.at(100).charged);
  EXPECT_EQ(out.grants.at(2).blocks.at(101).epsilon_spent_units, 2 * kEpsilonUnit);
  EXPECT_TRUE(out.grants.at(2).blocks.at(101).charged);
  EXPECT_EQ(out.grants.at(2).epsilon_spent_units, 11 * kEpsilonUnit);
  EXPECT_EQ(out.blocks.at(100).epsilon_spent_units, 0);
  EXPECT_EQ(out.blocks.at(101).epsilon_spent_units, 2 * kEpsilonUnit);
  // A third debit on block 101 would pass its budget (10) but not the analyst's cap there (2).
  std::vector<const Allocation*> third = {&group[2]};
  const DebitAdmission over = AdmitDebits(ledger, {}, out.grants, third, out.blocks);
  EXPECT_EQ(over.decided[0].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.decided[0].status().message()),
              HasSubstr("cap on time block 1970-04-12"));
}

}  // namespace
}  // namespace dpq::store
