#include "tessera/base/status.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using ::testing::HasSubstr;

namespace tessera {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(auto quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacros, PropagateValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).message(), "odd");
}

TEST(StatusAnnotate, PrefixesContextAndKeepsCode) {
  Status st = Annotate(absl::NotFoundError("no such file"), "reading a.npy");
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "reading a.npy: no such file");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "x").ok());
}

TEST(ErrnoError, MapsCodes) {
  EXPECT_EQ(ErrnoError("open x", ENOENT).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError("open x", EACCES).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError("write x", ENOSPC).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(ErrnoError("open x", ENOENT).message(), HasSubstr("No such file"));
}

}  // namespace
}  // namespace tessera
