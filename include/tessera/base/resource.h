// File: include/tessera/base/resource.h
//
// Process resource readings for the "wall time and peak RSS" lines that
// long-running commands print, the memory still available to this process
// (checked before allocating what a file or a request claims), byte
// formatting for humans, and the allocator policy of processes that build
// mini-batches.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_RESOURCE_H_
#define TESSERA_INCLUDE_TESSERA_BASE_RESOURCE_H_

#include <cstdint>
#include <string>

namespace tessera {

// Peak resident set size of this process so far, in bytes (getrusage).
int64_t PeakRssBytes();
// Where AvailableMemoryBytes reads; tests point these at fake files.
struct MemoryFiles {
  std::string meminfo = "/proc/meminfo";
  std::string self_cgroup = "/proc/self/cgroup";  // "0::/path" is the v2 cgroup.
  std::string cgroup_root = "/sys/fs/cgroup";     // The cgroup v2 mount.
};

// Bytes of memory this process can still get: MemAvailable + SwapFree of
// /proc/meminfo, lowered to memory.max - memory.current of its cgroup v2
// (and of each ancestor) wherever memory.max is not "max" (a cgroup's limit
// also counts its tmpfs pages, so shared memory is charged to it too).
// INT64_MAX when /proc/meminfo cannot be read and no cgroup limit is found:
// the allocation itself will tell. A reading of this moment: other processes
// may take the memory before the caller does. Thread-safe.
int64_t AvailableMemoryBytes(const MemoryFiles& files = {});

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

#endif  // TESSERA_INCLUDE_TESSERA_BASE_RESOURCE_H_
