#include "tessera/base/status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "tessera/base/strings.h"

namespace tessera {

Status Annotate(const Status& status, std::string_view context) {
  if (status.ok()) return status;
  return Status(status.code(), StrCat(context, ": ", status.message()));
}

Status ErrnoError(std::string_view what, int errno_value) {
  std::string message = StrCat(what, ": ", std::strerror(errno_value));
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case ENOSPC:
    case ENOMEM:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace tessera
