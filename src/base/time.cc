#include "tessera/base/time.h"

#include <algorithm>
#include <cstdint>

namespace tessera {

int Deadline::RemainingMillis() const {
  if (IsInfinite()) return INT32_MAX;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Remaining()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT32_MAX));
}

}  // namespace tessera
