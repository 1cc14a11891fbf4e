// File: src/shm/segment.cc
#include "src/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <random>
#include <vector>

#include "fmt/format.h"
#include "tessera/base/resource.h"

namespace tessera::shm {
namespace {

constexpr std::string_view kPrefix = "tessera.";
constexpr const char* kShmDir = "/dev/shm";

// RAM and swap this process can still get, cgroup v2 limit included
// (tmpfs pages are charged to the cgroup of whoever allocates them).
uint64_t MemoryAvailable() { return static_cast<uint64_t>(AvailableMemoryBytes()); }

// The error for a reservation that does not fit.
Status NoSpace(const std::string& name, uint64_t need, uint64_t shm_free) {
  return CheckSharedMemorySpace(name, need, shm_free, MemoryAvailable());
}

StatusOr<void*> MapFd(int fd, size_t size, bool writable, const std::string& name) {
  if (size == 0) return nullptr;
  int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoError(fmt::format("mmap shared memory {}", name), errno);
  return p;
}

}  // namespace

StatusOr<SharedSegment> SharedSegment::Create(const std::string& name, size_t size) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ErrnoError(fmt::format("create shared memory {}", name), errno);
  SharedSegment segment;
  segment.name_ = name;
  segment.owner_ = true;  // From here on the destructor unlinks the name.
  if (size > static_cast<size_t>(std::numeric_limits<off_t>::max())) {
    close(fd);
    return NoSpace(name, size, 0);
  }
  // Refuse up front what cannot fit: on tmpfs, posix_fallocate would take
  // pages until it runs out and only then give them back.
  if (Status s = CheckSharedMemoryRoom(name, size); !s.ok()) {
    close(fd);
    return s;
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError(fmt::format("size shared memory {} to {} bytes", name, size), e);
  }
  // Reserve the pages now: a sparse segment would kill with SIGBUS whoever
  // first touches a page that /dev/shm has no room for.
  if (size > 0) {
    int e;
    do {
      e = posix_fallocate(fd, 0, static_cast<off_t>(size));
    } while (e == EINTR);
    if (e != 0) {
      close(fd);
      if (e == ENOSPC) return NoSpace(name, size, SharedMemoryFree().value_or(0));
      return ErrnoError(fmt::format("reserve {} of shared memory for {}",
                                    FormatBytes(static_cast<int64_t>(size)), name),
                        e);
    }
  }
  StatusOr<void*> p = MapFd(fd, size, /*writable=*/true, name);
  close(fd);
  if (!p.ok()) return p.status();
  segment.data_ = *p;
  segment.size_ = size;
  return segment;
}

StatusOr<SharedSegment> SharedSegment::Open(const std::string& name, bool writable) {
  int fd = shm_open(name.c_str(), writable ? O_RDWR : O_RDONLY, 0);
  if (fd < 0) return ErrnoError(fmt::format("open shared memory {}", name), errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError(fmt::format("stat shared memory {}", name), e);
  }
  StatusOr<void*> p = MapFd(fd, static_cast<size_t>(st.st_size), writable, name);
  close(fd);
  if (!p.ok()) return p.status();
  SharedSegment segment;
  segment.name_ = name;
  segment.data_ = *p;
  segment.size_ = static_cast<size_t>(st.st_size);
  return segment;
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : name_(std::move(other.name_)), data_(other.data_), size_(other.size_), owner_(other.owner_) {
  other.name_.clear();
  other.data_ = nullptr;
  other.size_ = 0;
  other.owner_ = false;
}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    Reset();
    name_ = std::move(other.name_);
    data_ = other.data_;
    size_ = other.size_;
    owner_ = other.owner_;
    other.name_.clear();
    other.data_ = nullptr;
    other.size_ = 0;
    other.owner_ = false;
  }
  return *this;
}

SharedSegment::~SharedSegment() { Reset(); }

void SharedSegment::Unlink() {
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  owner_ = false;
}

void SharedSegment::Reset() {
  Unlink();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  name_.clear();
}

StatusOr<uint64_t> SharedMemoryFree() {
  struct statvfs st {};
  if (statvfs(kShmDir, &st) != 0) return ErrnoError(fmt::format("statvfs {}", kShmDir), errno);
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

Status CheckSharedMemoryRoom(std::string_view what, uint64_t need) {
  StatusOr<uint64_t> shm_free = SharedMemoryFree();
  if (!shm_free.ok()) return absl::OkStatus();  // Let the reservation decide.
  return CheckSharedMemorySpace(what, need, *shm_free, MemoryAvailable());
}

Status CheckSharedMemorySpace(std::string_view what, uint64_t need, uint64_t shm_free,
                              uint64_t memory_available) {
  uint64_t have = std::min(shm_free, memory_available);
  if (need <= have) return absl::OkStatus();
  auto bytes = [](uint64_t n) {
    return n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? fmt::format("{} B", n)
               : FormatBytes(static_cast<int64_t>(n));
  };
  std::string limit = have == shm_free ? fmt::format("free in {}", kShmDir)
                                       : fmt::format("of memory available ({} free in {})",
                                                     bytes(shm_free), kShmDir);
  return absl::ResourceExhaustedError(
      fmt::format("not enough shared memory for {}: need {}, have {} {}", what, bytes(need),
                  bytes(have), limit));
}

std::string SegmentName(std::string_view job, std::string_view what) {
  return fmt::format("/{}{}.{}", kPrefix, job, what);
}

Status ValidateJobId(std::string_view job) {
  if (job.empty() || job.size() > 40) {
    return absl::InvalidArgumentError(fmt::format("job id '{}' must have 1 to 40 characters", job));
  }
  for (char c : job) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          fmt::format("job id '{}' may only contain letters, digits, '_' and '-'", job));
    }
  }
  return absl::OkStatus();
}

std::string RandomJobId() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  return fmt::format("j{:016x}", v);
}

std::vector<std::string> ListJobSegments(std::string_view job) {
  std::vector<std::string> names;
  std::string prefix = fmt::format("{}{}.", kPrefix, job);
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return names;
  while (struct dirent* entry = readdir(dir)) {
    std::string_view n(entry->d_name);
    if (n.substr(0, prefix.size()) == prefix) names.emplace_back(n);
  }
  closedir(dir);
  return names;
}

StatusOr<int> RemoveJobSegments(std::string_view job) {
  RETURN_IF_ERROR(ValidateJobId(job));
  int removed = 0;
  for (const std::string& n : ListJobSegments(job)) {
    if (shm_unlink(("/" + n).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace tessera::shm
