#include "server/dp/ldp/frequency_oracle.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/dp/ldp/frequency_estimate.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::dp::ldp {
namespace {

FrequencyOracle Oracle(LdpMechanism m, double eps, int64_t k) {
  auto o = FrequencyOracle::Create(m, eps, k);
  EXPECT_TRUE(o.ok()) << o.status();
  return *o;
}

absl::StatusCode Code(const FrequencyOracle& o, const LdpReport& r) { return o.Validate(r).code(); }

TEST(FrequencyOracleTest, ParsesOnlyTheFourMechanisms) {
  for (const char* name : {"rr", "krr", "oue", "olh"}) {
    auto m = ParseLdpMechanism(name);
    ASSERT_TRUE(m.ok());
    EXPECT_STREQ(LdpMechanismName(*m), name);
  }
  EXPECT_NE(ParseLdpMechanism("RR").status().message().find("mechanism"), absl::string_view::npos);
  EXPECT_FALSE(ParseLdpMechanism("").ok());
}

TEST(FrequencyOracleTest, RejectsBadParametersNamingThem) {
  EXPECT_NE(FrequencyOracle::Create(LdpMechanism::kRr, 1, 3).status().message().find("domain"),
            absl::string_view::npos);
  EXPECT_NE(FrequencyOracle::Create(LdpMechanism::kKrr, 1, 1).status().message().find("domain"),
            absl::string_view::npos);
  EXPECT_FALSE(FrequencyOracle::Create(LdpMechanism::kOue, 1, kMaxLdpDomainSize + 1).ok());
  EXPECT_NE(FrequencyOracle::Create(LdpMechanism::kOlh, std::nan(""), 3)
                .status()
                .message()
                .find("epsilon"),
            absl::string_view::npos);
  EXPECT_FALSE(FrequencyOracle::Create(LdpMechanism::kKrr, 20.5, 3).ok());
  EXPECT_TRUE(FrequencyOracle::Create(LdpMechanism::kKrr, 20, 3).ok());
}

TEST(FrequencyOracleTest, RefusesTheWrongKindOfReport) {
  const FrequencyOracle krr = Oracle(LdpMechanism::kKrr, 1, 5);
  const FrequencyOracle oue = Oracle(LdpMechanism::kOue, 1, 5);
  const FrequencyOracle olh = Oracle(LdpMechanism::kOlh, 1, 5);
  EXPECT_EQ(Code(krr, LdpReport()), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(krr, UnaryReport{"\x01"}), absl::StatusCode::kInvalidArgument);
  // A bare index (the raw value) is refused where a randomized encoding is expected.
  EXPECT_EQ(Code(oue, IndexReport{2}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(olh, IndexReport{2}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(olh, UnaryReport{"\x01"}), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(oue.Validate(IndexReport{2}).message().find("report.unary_bits"), std::string::npos);
}

TEST(FrequencyOracleTest, RefusesOutOfRangeAndMisshapenReports) {
  const FrequencyOracle krr = Oracle(LdpMechanism::kKrr, 1, 5);
  EXPECT_TRUE(krr.Validate(IndexReport{4}).ok());
  EXPECT_EQ(Code(krr, IndexReport{5}), absl::StatusCode::kInvalidArgument);
  const FrequencyOracle oue = Oracle(LdpMechanism::kOue, 1, 10);  // 2 bytes, 6 padding bits
  EXPECT_TRUE(oue.Validate(UnaryReport{std::string("\xff\x03", 2)}).ok());
  EXPECT_EQ(Code(oue, UnaryReport{std::string("\xff\x07", 2)}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(oue, UnaryReport{std::string("\xff", 1)}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Code(oue, UnaryReport{std::string(3, '\0')}), absl::StatusCode::kInvalidArgument);
  const FrequencyOracle olh = Oracle(LdpMechanism::kOlh, 1, 10);  // g = 4
  EXPECT_TRUE(olh.Validate(OlhReport{123, 3}).ok());
  EXPECT_EQ(Code(olh, OlhReport{123, 4}), absl::StatusCode::kInvalidArgument);
}

TEST(FrequencyOracleTest, SupportFollowsTheWireEncoding) {
  const FrequencyOracle oue = Oracle(LdpMechanism::kOue, 1, 10);
  std::vector<int64_t> support(10, 0);
  // Bits 0, 3 (byte 0: 0b00001001) and 9 (byte 1, bit 1): LSB first.
  oue.AddSupport(UnaryReport{std::string("\x09\x02", 2)}, support);
  EXPECT_EQ(support, (std::vector<int64_t>{1, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  const FrequencyOracle krr = Oracle(LdpMechanism::kKrr, 1, 3);
  std::vector<int64_t> s3(3, 0);
  krr.AddSupport(IndexReport{2}, s3);
  EXPECT_EQ(s3, (std::vector<int64_t>{0, 0, 1}));
  const FrequencyOracle olh = Oracle(LdpMechanism::kOlh, 1, 6);  // g = 4
  std::vector<int64_t> s6(6, 0);
  const OlhReport r{42, OlhHash(42, 5, 4)};
  olh.AddSupport(r, s6);
  for (uint32_t v = 0; v < 6; ++v) EXPECT_EQ(s6[v], OlhHash(42, v, 4) == r.hashed ? 1 : 0);
}

TEST(FrequencyOracleTest, RandomizedReportsAreWellFormed) {
  SeededRandom rng(7);
  for (LdpMechanism m : {LdpMechanism::kKrr, LdpMechanism::kOue, LdpMechanism::kOlh}) {
    const FrequencyOracle o = Oracle(m, 1.5, 13);
    for (int i = 0; i < 100; ++i) {
      auto r = o.Randomize(i % 13, rng);
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(o.Validate(*r).ok()) << LdpMechanismName(m);
    }
    EXPECT_EQ(o.Randomize(13, rng).status().code(), absl::StatusCode::kInvalidArgument);
  }
  const FrequencyOracle rr = Oracle(LdpMechanism::kRr, 1, 2);
  auto r = rr.Randomize(1, rng);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(rr.Validate(*r).ok());
}

TEST(FrequencyEstimateTest, InvertsTheExpectedSupportWithAnIntervalAroundIt) {
  const PureProtocol pp{0.7, 0.1};
  // E[I] = c p + (n - c) q with n = 1000, c = 250: 175 + 75 = 250.
  auto est = EstimateFrequencies(pp, {250}, 1000, 0.95);
  ASSERT_TRUE(est.ok());
  ASSERT_EQ(est->size(), 1u);
  const double se = std::sqrt(pp.EstimatorVariance(1000, 250));
  EXPECT_NEAR((*est)[0].count, 250, 1e-9);
  EXPECT_NEAR((*est)[0].standard_error, se, 1e-9);
  EXPECT_NEAR((*est)[0].upper - 250, 1.959963984540054 * se, 1e-6);
  EXPECT_NEAR(250 - (*est)[0].lower, 1.959963984540054 * se, 1e-6);
}

TEST(FrequencyEstimateTest, RejectsBadInputs) {
  const PureProtocol pp{0.7, 0.1};
  EXPECT_NE(EstimateFrequencies(pp, {1}, 10, 1).status().message().find("confidence"),
            std::string::npos);
  EXPECT_FALSE(EstimateFrequencies(pp, {11}, 10, 0.9).ok());
  auto empty = EstimateFrequencies(pp, {0, 0}, 0, 0.9);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].count, 0);
}

}  // namespace
}  // namespace dpq::dp::ldp
