// gmock matchers and assertion macros for absl::Status and absl::StatusOr<T>.
//   EXPECT_THAT(f(), StatusIs(absl::StatusCode::kNotFound));
//   EXPECT_THAT(f(), StatusIs(absl::StatusCode::kInternal, HasSubstr("0002_add_x.sql")));
//   EXPECT_THAT(g(), IsOkAndHolds(Field(&Report::applied, 2)));
//   ASSERT_OK_AND_ASSIGN(auto pg, TestPostgres::Start());
#ifndef DPQ_TESTS_SUPPORT_STATUS_MATCHERS_H_
#define DPQ_TESTS_SUPPORT_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

// Matches an absl::Status or absl::StatusOr<T> whose code equals `code`.
MATCHER_P(StatusIs, code,
          absl::StrCat(negation ? "isn't" : "is", " a status with code ",
                       absl::StatusCodeToString(code))) {
  const absl::Status& status = ::dpq::testing::internal::GetStatus(arg);
  *result_listener << "which is " << status;
  return status.code() == code;
}

// Matches an absl::Status or absl::StatusOr<T> whose code equals `code` and whose message matches
// `message_matcher` (a std::string matcher such as HasSubstr("...")).
MATCHER_P2(StatusIs, code, message_matcher,
           absl::StrCat(negation ? "isn't" : "is", " a status with code ",
                        absl::StatusCodeToString(code), " and a message that ",
                        ::testing::DescribeMatcher<std::string>(message_matcher, negation))) {
  const absl::Status& status = ::dpq::testing::internal::GetStatus(arg);
  *result_listener << "which is " << status;
  return status.code() == code && ::testing::Matches(::testing::SafeMatcherCast<const std::string&>(
                                      message_matcher))(std::string(status.message()));
}

// Matches an OK absl::Status or absl::StatusOr<T>.
MATCHER(IsOk, negation ? "isn't OK" : "is OK") {
  const absl::Status& status = ::dpq::testing::internal::GetStatus(arg);
  if (!status.ok()) *result_listener << "which is " << status;
  return status.ok();
}

// Matches an OK absl::StatusOr<T> whose value matches `value_matcher`.
MATCHER_P(IsOkAndHolds, value_matcher,
          absl::StrCat(negation ? "isn't" : "is", " OK and holds a value that ",
                       ::testing::DescribeMatcher<typename std::decay_t<arg_type>::value_type>(
                           value_matcher, negation))) {
  if (!arg.ok()) {
    *result_listener << "which is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace dpq::testing

#define DPQ_TESTING_CONCAT_INNER(a, b) a##b
#define DPQ_TESTING_CONCAT(a, b) DPQ_TESTING_CONCAT_INNER(a, b)

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::dpq::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::dpq::testing::IsOk())

// ASSERT_OK_AND_ASSIGN(lhs, expr): asserts that the absl::StatusOr `expr` is OK and moves its value
// into `lhs` (which may be a declaration). Only in functions returning void (gtest ASSERT rules).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  DPQ_TESTING_ASSERT_OK_AND_ASSIGN(DPQ_TESTING_CONCAT(dpq_statusor_, __LINE__), lhs, expr)
#define DPQ_TESTING_ASSERT_OK_AND_ASSIGN(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // DPQ_TESTS_SUPPORT_STATUS_MATCHERS_H_
