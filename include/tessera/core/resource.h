// File: include/tessera/core/resource.h
//
// Process resource readings for the "wall time and peak RSS" lines that
// long-running commands print, byte formatting for humans, and the
// allocator policy of processes that build mini-batches.
#ifndef TESSERA_INCLUDE_TESSERA_CORE_RESOURCE_H_
#define TESSERA_INCLUDE_TESSERA_CORE_RESOURCE_H_

#include <cstdint>
#include <string>

namespace tessera {

// Peak resident set size of this process so far, in bytes (getrusage).
int64_t PeakRssBytes();
// "1.23 GiB", "512.0 MiB", "17 B".
std::string FormatBytes(int64_t bytes);

// Makes glibc's allocator keep freed memory mapped: large blocks come from
// the heap instead of fresh mmaps, and the heap is not trimmed. Mini-batch
// sampling allocates and frees the same few large buffers every batch; by
// default each comes back as new pages that must be faulted in again, which
// measured as a third to half of the sampling time (bench/README.md). Freed
// memory then stays in RSS up to the process's peak. Idempotent.
void RetainFreedMemory();

// Raises this process's soft limit on open descriptors to its hard limit
// (servers: connections beyond the default 1024 or less must not starve the
// job's own). Returns the limit now in force.
int64_t RaiseDescriptorLimit();

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_CORE_RESOURCE_H_
