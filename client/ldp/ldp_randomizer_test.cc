#include "client/ldp/ldp_randomizer.h"

#include "gtest/gtest.h"
#include "server/dp/ldp/local_hashing.h"
#include "server/dp/testing/seeded_random.h"

namespace dpq::ldp_client {
namespace {

v1::Collection Collection(v1::LdpMechanism m, double epsilon, std::vector<std::string> domain) {
  v1::Collection c;
  c.set_name("survey");
  c.set_mechanism(m);
  c.set_epsilon(epsilon);
  for (const auto& v : domain) c.add_domain(v);
  return c;
}

TEST(LdpRandomizerTest, FillsTheWireFieldOfEachMechanism) {
  dp::SeededRandom rng(5);
  auto krr = RandomizeReport(Collection(v1::LDP_MECHANISM_KRR, 1, {"a", "b", "c"}), "b", rng);
  ASSERT_TRUE(krr.ok());
  EXPECT_EQ(krr->report_case(), v1::LdpReport::kIndex);
  EXPECT_LT(krr->index(), 3u);
  std::vector<std::string> ten;
  for (int i = 0; i < 10; ++i) ten.push_back("v" + std::to_string(i));
  auto oue = RandomizeReport(Collection(v1::LDP_MECHANISM_OUE, 1, ten), "v9", rng);
  ASSERT_TRUE(oue.ok());
  EXPECT_EQ(oue->report_case(), v1::LdpReport::kUnaryBits);
  EXPECT_EQ(oue->unary_bits().size(), 2u);  // ceil(10 / 8)
  auto olh = RandomizeReport(Collection(v1::LDP_MECHANISM_OLH, 2, {"x", "y", "z"}), "z", rng);
  ASSERT_TRUE(olh.ok());
  EXPECT_EQ(olh->report_case(), v1::LdpReport::kOlh);
  EXPECT_LT(olh->olh().hashed(), dp::ldp::OlhHashRange(2));
  auto rr = RandomizeReport(Collection(v1::LDP_MECHANISM_RR, 1, {"no", "yes"}), "yes", rng);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->report_case(), v1::LdpReport::kIndex);
}

TEST(LdpRandomizerTest, HugeEpsilonKeepsTheValue) {
  dp::SeededRandom rng(6);
  auto krr = RandomizeReport(Collection(v1::LDP_MECHANISM_KRR, 20, {"a", "b", "c"}), "c", rng);
  ASSERT_TRUE(krr.ok());
  EXPECT_EQ(krr->index(), 2u);
}

TEST(LdpRandomizerTest, RefusesAValueOutsideTheDomain) {
  dp::SeededRandom rng(7);
  auto r = RandomizeReport(Collection(v1::LDP_MECHANISM_KRR, 1, {"a", "b"}), "zz", rng);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not in the domain"), std::string::npos);
  auto none = RandomizeReport(Collection(v1::LDP_MECHANISM_UNSPECIFIED, 1, {"a", "b"}), "a", rng);
  EXPECT_FALSE(none.ok());
}

}  // namespace
}  // namespace dpq::ldp_client
