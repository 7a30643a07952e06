#include "server/api/query_call.h"

#include "gtest/gtest.h"
#include "server/base/limit_error.h"

namespace dpq::api {
namespace {

TEST(QueryOutcomeLabelTest, ASuccessSaysHowItWasAnswered) {
  EXPECT_EQ(QueryOutcomeLabel(absl::OkStatus(), /*replayed=*/false, /*cached=*/false), "ok");
  EXPECT_EQ(QueryOutcomeLabel(absl::OkStatus(), /*replayed=*/false, /*cached=*/true), "cached");
  EXPECT_EQ(QueryOutcomeLabel(absl::OkStatus(), /*replayed=*/true, /*cached=*/true), "replayed");
}

TEST(QueryOutcomeLabelTest, AFailureIsLabelledByItsStatusWhateverTheFlags) {
  EXPECT_EQ(QueryOutcomeLabel(absl::InvalidArgumentError("x"), true, true), "invalid_argument");
  EXPECT_EQ(QueryOutcomeLabel(LimitError("too many"), false, false), "limited");
}

TEST(QueryDatasetLabelTest, NamesTheDatasetOnlyForOutcomesThatResolvedIt) {
  EXPECT_EQ(QueryDatasetLabel(absl::OkStatus(), /*admitted=*/true, "d"), "d");
  EXPECT_EQ(QueryDatasetLabel(absl::ResourceExhaustedError("budget"), true, "d"), "d");
  EXPECT_EQ(QueryDatasetLabel(absl::AlreadyExistsError("id"), true, "d"), "d");
  EXPECT_EQ(QueryDatasetLabel(absl::NotFoundError("no such dataset"), true, "d"), "")
      << "a name that may not exist would grow the label set without bound";
  EXPECT_EQ(QueryDatasetLabel(absl::PermissionDeniedError("not granted"), true, "d"), "");
}

TEST(QueryDatasetLabelTest, ARequestRefusedBeforeAdmissionHasNoDataset) {
  EXPECT_EQ(QueryDatasetLabel(absl::ResourceExhaustedError("rate"), /*admitted=*/false, "d"), "");
  EXPECT_EQ(QueryDatasetLabel(absl::OkStatus(), /*admitted=*/false, "d"), "");
}

}  // namespace
}  // namespace dpq::api
