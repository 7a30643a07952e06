// Early-return helpers for absl::Status / absl::StatusOr (Abseil 20220623 ships none).
#ifndef DPQ_SERVER_BASE_STATUS_MACROS_H_
#define DPQ_SERVER_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DPQ_INTERNAL_CONCAT_INNER(a, b) a##b
#define DPQ_INTERNAL_CONCAT(a, b) DPQ_INTERNAL_CONCAT_INNER(a, b)

// RETURN_IF_ERROR(expr): evaluates expr (an absl::Status) and returns it from the enclosing
// function unless it is OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status dpq_status_ = (expr);       \
    if (!dpq_status_.ok()) return dpq_status_; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates expr (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into lhs (which may be a declaration, e.g. `auto x`).
#define ASSIGN_OR_RETURN(lhs, expr) \
  DPQ_INTERNAL_ASSIGN_OR_RETURN(DPQ_INTERNAL_CONCAT(dpq_statusor_, __LINE__), lhs, expr)

#define DPQ_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#endif  // DPQ_SERVER_BASE_STATUS_MACROS_H_
