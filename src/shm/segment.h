// File: src/shm/segment.h
//
// SharedSegment: the move-only owner of one mapping of a POSIX shared-memory
// segment (shm_open + mmap). A segment made with Create() is the creator's:
// its name is unlinked when the owner is destroyed (or on Unlink()), so the
// name never outlives the process on a normal, error or SIGTERM exit path.
// Mappings made with Open() only unmap. Unlinking does not invalidate other
// processes' mappings; the memory is freed when the last one goes.
//
// Names are job-scoped (SegmentName), so two jobs serving the same graph on
// one machine never collide, and RemoveJobSegments() lets a supervisor clean
// up after a process that was killed with SIGKILL.
//
// Not thread-safe for concurrent Create/Unlink on one object; the mapped
// memory itself may be shared by any number of threads and processes.
#ifndef TESSERA_SRC_SHM_SEGMENT_H_
#define TESSERA_SRC_SHM_SEGMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::shm {

class SharedSegment {
 public:
  SharedSegment() = default;
  // Creates and maps a new zero-filled segment of `size` bytes (size 0 is
  // allowed: nothing is mapped). AlreadyExists if the name is taken;
  // ResourceExhausted ("not enough shared memory ... need X, have Y") if
  // /dev/shm (or the machine's memory) has no room for it. The pages are
  // reserved here, so touching them later never fails with SIGBUS. On error
  // nothing is left behind.
  static StatusOr<SharedSegment> Create(const std::string& name, size_t size);
  // Maps an existing segment, all of it. NotFound if there is none.
  static StatusOr<SharedSegment> Open(const std::string& name, bool writable);

  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }
  bool valid() const { return !name_.empty(); }

  // Removes the name now (owners only; a no-op otherwise or if done before).
  void Unlink();

 private:
  void Reset();
  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;
};

// Free bytes of /dev/shm (statvfs) now.
StatusOr<uint64_t> SharedMemoryFree();

// OK if `need` bytes fit in the smaller of `shm_free` (free space of
// /dev/shm) and `memory_available` (RAM and swap the kernel can give; tmpfs
// may be larger than RAM); else ResourceExhausted "not enough shared memory
// for <what>: need X, have Y ...".
Status CheckSharedMemorySpace(std::string_view what, uint64_t need, uint64_t shm_free,
                              uint64_t memory_available);

// CheckSharedMemorySpace with the figures of this moment: statvfs of
// /dev/shm and AvailableMemoryBytes (RAM, swap and this process's cgroup v2
// limit, which tmpfs pages are charged to). OK when /dev/shm cannot be
// inspected: the reservation itself will tell.
Status CheckSharedMemoryRoom(std::string_view what, uint64_t need);

// "/tessera.<job>.<what>". `job` must be a valid job id (ValidateJobId);
// `what` is made of [A-Za-z0-9_.-] by the callers.
std::string SegmentName(std::string_view job, std::string_view what);

// A job id is 1-40 characters of [A-Za-z0-9_-].
Status ValidateJobId(std::string_view job);

// A fresh random job id ("j" + 16 hex digits).
std::string RandomJobId();

// Unlinks every segment of `job` still present (/dev/shm/tessera.<job>.*).
// Returns how many were removed.
StatusOr<int> RemoveJobSegments(std::string_view job);

// Names (without the leading '/') of the segments of `job` that exist now.
std::vector<std::string> ListJobSegments(std::string_view job);

}  // namespace tessera::shm

#endif  // TESSERA_SRC_SHM_SEGMENT_H_
