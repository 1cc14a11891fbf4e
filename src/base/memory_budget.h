// File: src/base/memory_budget.h
//
// Refusing, with a clear error, work whose buffers could not fit in the
// memory the process can still get, before allocating them: a request for
// 10^9 sampled edges or 10^8 negatives per edge must be an error that says
// so, not a std::bad_alloc (or the OOM killer) several gigabytes later.
#ifndef TESSERA_SRC_BASE_MEMORY_BUDGET_H_
#define TESSERA_SRC_BASE_MEMORY_BUDGET_H_

#include <cstdint>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera {

// AvailableMemoryBytes(), read at most every 100 ms (it reads /proc and the
// cgroup files; callers ask once per batch or request). Thread-safe.
int64_t RecentAvailableMemoryBytes();

// OK when `count` items of `item_bytes` each fit in a quarter of the
// memory available now (the rest is for the copies the work makes of
// them and for everything else); else ResourceExhausted naming `what`, the
// bytes and the memory available.
Status CheckFitsInMemory(std::string_view what, uint64_t count, uint64_t item_bytes);

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_MEMORY_BUDGET_H_
