// File: src/base/memory_budget.cc
#include "src/base/memory_budget.h"

#include <atomic>
#include <chrono>

#include "fmt/format.h"
#include "tessera/base/resource.h"

namespace tessera {

int64_t RecentAvailableMemoryBytes() {
  static std::atomic<int64_t> bytes{-1}, read_at_ms{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (bytes.load() < 0 || now - read_at_ms.load() >= 100) {
    bytes.store(AvailableMemoryBytes());
    read_at_ms.store(now);
  }
  return bytes.load();
}

Status CheckFitsInMemory(std::string_view what, uint64_t count, uint64_t item_bytes) {
  uint64_t total = 0;
  const bool overflow = __builtin_mul_overflow(count, item_bytes, &total);
  const uint64_t budget = static_cast<uint64_t>(RecentAvailableMemoryBytes()) / 4;
  if (!overflow && total <= budget) return absl::OkStatus();
  return absl::ResourceExhaustedError(fmt::format(
      "{}: {} x {} bytes = {} is more than a quarter of the memory this process can still get "
      "({})",
      what, count, item_bytes,
      overflow ? std::string("more than 2^64 bytes") : FormatBytes(static_cast<int64_t>(total)),
      FormatBytes(RecentAvailableMemoryBytes())));
}

}  // namespace tessera
