// File: include/tessera/base/status.h
//
// tessera's error model: expected failures (bad input files, dead peers, full
// disks) are values of type absl::Status / absl::StatusOr<T>; CHECK-style
// aborts are reserved for broken internal invariants. This header adds the two
// propagation macros and a helper that prefixes context to an error message.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_STATUS_H_
#define TESSERA_INCLUDE_TESSERA_BASE_STATUS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera {

using absl::Status;
using absl::StatusOr;

// Returns `status` with "<context>: " put in front of its message; OK stays OK.
Status Annotate(const Status& status, std::string_view context);

// Returns an error for a failed system call: "<what>: <strerror(errno_value)>".
// The code follows errno (NotFound for ENOENT, PermissionDenied for EACCES...).
Status ErrnoError(std::string_view what, int errno_value);

}  // namespace tessera

#define TESSERA_STATUS_CONCAT_INNER_(a, b) a##b
#define TESSERA_STATUS_CONCAT_(a, b) TESSERA_STATUS_CONCAT_INNER_(a, b)

// RETURN_IF_ERROR(expr): evaluates `expr` (a Status) and returns it if not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status tessera_status_ = (expr);           \
    if (!tessera_status_.ok()) return tessera_status_; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr<T>); on error
// returns its status, else moves the value into `lhs` (which may declare a
// variable, e.g. `auto x`).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL_(TESSERA_STATUS_CONCAT_(tessera_statusor_, __LINE__), lhs, rexpr)

#define TESSERA_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

#endif  // TESSERA_INCLUDE_TESSERA_BASE_STATUS_H_
