// File: src/shm/catalog.cc
#include "src/shm/catalog.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace tessera::shm {
namespace {

constexpr uint64_t kMagic = 0x474f4c5441435354ULL;  // "TSCATLOG"
constexpr uint32_t kLayoutVersion = 1;

void InitRobustMutex(pthread_mutex_t* mutex) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(mutex, &attr);
  pthread_mutexattr_destroy(&attr);
}

// Locks a robust mutex; returns true if its previous owner died holding it
// (the mutex is then made consistent and is held).
bool LockRobust(pthread_mutex_t* mutex) {
  int rc = pthread_mutex_lock(mutex);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(mutex);
    return true;
  }
  return false;
}

template <typename T>
void AddTyped(void* dst, const void* src, size_t count) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(d[i] + s[i]);
}

}  // namespace

struct Catalog::Header {
  std::atomic<uint64_t> magic;
  uint32_t layout_version;
  int32_t machine;
  pthread_mutex_t table_mutex;
  std::atomic<uint64_t> generation;
  uint64_t next_id;
};

struct Catalog::Entry {
  uint8_t in_use;
  uint8_t dtype;
  uint8_t policy;
  uint8_t ndim;
  uint8_t persistent;
  uint8_t written;  // Accessed with __atomic builtins.
  char name[kMaxNameLength + 1];
  int64_t shape[kMaxDims];
  uint64_t id;
};

struct alignas(64) Catalog::Stripe {
  pthread_mutex_t mutex;
  std::atomic<uint64_t> seq;
};

namespace {
constexpr size_t HeaderBytes() { return 4096; }
}  // namespace

std::string_view PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kNode:
      return "node";
    case Policy::kEdge:
      return "edge";
    case Policy::kLocal:
      return "local";
  }
  return "?";
}

size_t ArrayInfo::row_bytes() const {
  size_t n = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(n, static_cast<size_t>(shape[i]), &n)) {
      return std::numeric_limits<size_t>::max();
    }
  }
  return n;
}

size_t ArrayInfo::nbytes() const {
  size_t n = 0;
  if (rows() < 0 || __builtin_mul_overflow(row_bytes(), static_cast<size_t>(rows()), &n)) {
    return std::numeric_limits<size_t>::max();
  }
  return n;
}

Catalog::Header* Catalog::header() const { return static_cast<Header*>(segment_.data()); }

Catalog::Entry* Catalog::entries() const {
  return reinterpret_cast<Entry*>(static_cast<char*>(segment_.data()) + HeaderBytes());
}

Catalog::Stripe* Catalog::stripes() const {
  size_t offset = HeaderBytes() + sizeof(Entry) * kMaxArrays;
  offset = (offset + 63) / 64 * 64;
  return reinterpret_cast<Stripe*>(static_cast<char*>(segment_.data()) + offset);
}

static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free);

StatusOr<Catalog> Catalog::Create(std::string_view job, int machine) {
  RETURN_IF_ERROR(ValidateJobId(job));
  size_t size =
      (HeaderBytes() + sizeof(Entry) * kMaxArrays + 63) / 64 * 64 + sizeof(Stripe) * kNumStripes;
  ASSIGN_OR_RETURN(
      SharedSegment segment,
      SharedSegment::Create(SegmentName(job, fmt::format("m{}.catalog", machine)), size));
  Catalog catalog(std::move(segment));
  catalog.job_ = std::string(job);
  catalog.machine_ = machine;
  Header* h = catalog.header();
  h->layout_version = kLayoutVersion;
  h->machine = machine;
  InitRobustMutex(&h->table_mutex);
  h->generation.store(1);
  h->next_id = 1;
  for (int i = 0; i < kNumStripes; ++i) {
    InitRobustMutex(&catalog.stripes()[i].mutex);
    catalog.stripes()[i].seq.store(0);
  }
  h->magic.store(kMagic, std::memory_order_release);  // Published last.
  return catalog;
}

StatusOr<Catalog> Catalog::Open(std::string_view job, int machine) {
  RETURN_IF_ERROR(ValidateJobId(job));
  std::string name = SegmentName(job, fmt::format("m{}.catalog", machine));
  ASSIGN_OR_RETURN(SharedSegment segment, SharedSegment::Open(name, /*writable=*/true));
  size_t min_size =
      (HeaderBytes() + sizeof(Entry) * kMaxArrays + 63) / 64 * 64 + sizeof(Stripe) * kNumStripes;
  if (segment.size() < min_size) {
    return absl::FailedPreconditionError(
        fmt::format("shared memory {} is {} bytes, expected {}: not a tessera catalog of this "
                    "version, or still being created",
                    name, segment.size(), min_size));
  }
  Catalog catalog(std::move(segment));
  catalog.job_ = std::string(job);
  catalog.machine_ = machine;
  if (catalog.header()->magic.load(std::memory_order_acquire) != kMagic) {
    return absl::UnavailableError(fmt::format("shared memory {} is still being initialised", name));
  }
  if (catalog.header()->layout_version != kLayoutVersion) {
    return absl::FailedPreconditionError(
        fmt::format("shared memory {} has layout version {}, this program reads {}", name,
                    catalog.header()->layout_version, kLayoutVersion));
  }
  return catalog;
}

void Catalog::LockTable() const {
  if (LockRobust(&header()->table_mutex)) {
    spdlog::warn("catalog {}: a process died while changing it; continuing", segment_.name());
  }
}

void Catalog::UnlockTable() const { pthread_mutex_unlock(&header()->table_mutex); }

uint64_t Catalog::ReserveId(std::string* segment) {
  LockTable();
  uint64_t id = header()->next_id++;
  UnlockTable();
  *segment = SegmentName(job_, fmt::format("m{}.a{}", machine_, id));
  return id;
}

Status Catalog::Add(ArrayInfo* info) {
  if (info->name.empty() || info->name.size() > kMaxNameLength ||
      info->name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "array name {:?} must have 1 to {} characters, no NUL", info->name, kMaxNameLength));
  }
  if (info->shape.empty() || info->shape.size() > kMaxDims) {
    return absl::InvalidArgumentError(
        fmt::format("array '{}' must have 1 to {} dimensions", info->name, kMaxDims));
  }
  if (info->nbytes() == std::numeric_limits<size_t>::max()) {
    return absl::InvalidArgumentError(
        fmt::format("array '{}': shape [{}] has a negative dimension or too many bytes", info->name,
                    fmt::join(info->shape, ", ")));
  }
  LockTable();
  Entry* free_entry = nullptr;
  for (int i = 0; i < kMaxArrays; ++i) {
    Entry& e = entries()[i];
    if (e.in_use && info->name == e.name) {
      UnlockTable();
      return absl::AlreadyExistsError(fmt::format("array '{}' already exists", info->name));
    }
    if (!e.in_use && free_entry == nullptr) free_entry = &e;
  }
  if (free_entry == nullptr) {
    UnlockTable();
    return absl::ResourceExhaustedError(fmt::format(
        "cannot add '{}': the catalog holds {} arrays already", info->name, kMaxArrays));
  }
  if (info->id == 0) info->id = header()->next_id++;
  info->segment = SegmentName(job_, fmt::format("m{}.a{}", machine_, info->id));
  Entry& e = *free_entry;
  std::memset(&e, 0, sizeof(e));
  std::memcpy(e.name, info->name.data(), info->name.size());
  e.dtype = static_cast<uint8_t>(info->dtype);
  e.policy = static_cast<uint8_t>(info->policy);
  e.ndim = static_cast<uint8_t>(info->shape.size());
  e.persistent = info->persistent ? 1 : 0;
  for (size_t d = 0; d < info->shape.size(); ++d) e.shape[d] = info->shape[d];
  e.id = info->id;
  e.in_use = 1;
  info->slot = static_cast<int>(free_entry - entries());
  header()->generation.fetch_add(1, std::memory_order_release);
  UnlockTable();
  return absl::OkStatus();
}

Status Catalog::Remove(const std::string& name) {
  LockTable();
  for (int i = 0; i < kMaxArrays; ++i) {
    Entry& e = entries()[i];
    if (e.in_use && name == e.name) {
      e.in_use = 0;
      header()->generation.fetch_add(1, std::memory_order_release);
      UnlockTable();
      return absl::OkStatus();
    }
  }
  UnlockTable();
  return absl::NotFoundError(fmt::format("no array named '{}'", name));
}

StatusOr<ArrayInfo> Catalog::Find(const std::string& name) const {
  for (ArrayInfo& info : List()) {
    if (info.name == name) return std::move(info);
  }
  return absl::NotFoundError(fmt::format("no array named '{}'", name));
}

std::vector<ArrayInfo> Catalog::List() const {
  std::vector<ArrayInfo> out;
  LockTable();
  for (int i = 0; i < kMaxArrays; ++i) {
    const Entry& e = entries()[i];
    if (!e.in_use) continue;
    ArrayInfo info;
    info.name = e.name;
    info.dtype = static_cast<DType>(e.dtype);
    info.policy = static_cast<Policy>(e.policy);
    info.persistent = e.persistent != 0;
    info.shape.assign(e.shape, e.shape + e.ndim);
    info.id = e.id;
    info.segment = SegmentName(job_, fmt::format("m{}.a{}", machine_, e.id));
    info.slot = i;
    out.push_back(std::move(info));
  }
  UnlockTable();
  return out;
}

uint64_t Catalog::generation() const {
  return header()->generation.load(std::memory_order_acquire);
}

Catalog::Stripe& Catalog::StripeFor(uint64_t array_id, int64_t row) const {
  uint64_t h =
      static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ULL ^ (array_id * 0xC2B2AE3D27D4EB4FULL);
  h ^= h >> 29;
  return stripes()[h & (kNumStripes - 1)];
}

void Catalog::LockStripe(Stripe& stripe) const {
  if (LockRobust(&stripe.mutex)) {
    uint64_t seq = stripe.seq.load(std::memory_order_relaxed);
    if (seq & 1) stripe.seq.store(seq + 1, std::memory_order_release);
    spdlog::warn(
        "catalog {}: a process died while writing rows; the rows it was writing may hold a mix "
        "of old and new values",
        segment_.name());
  }
}

template <typename Write>
void Catalog::WriteLocked(uint64_t array_id, int64_t row, Write&& write) const {
  Stripe& stripe = StripeFor(array_id, row);
  LockStripe(stripe);
  uint64_t seq = stripe.seq.load(std::memory_order_relaxed);
  stripe.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  write();
  stripe.seq.store(seq + 2, std::memory_order_release);
  pthread_mutex_unlock(&stripe.mutex);
}

void Catalog::WriteRow(uint64_t array_id, int64_t row, void* base, size_t row_bytes,
                       const void* src, DType dtype, bool add) const {
  char* dst = static_cast<char*>(base) + static_cast<size_t>(row) * row_bytes;
  WriteLocked(array_id, row, [&] {
    if (add) {
      AddElements(dtype, dst, src, row_bytes / DTypeSize(dtype));
    } else {
      std::memcpy(dst, src, row_bytes);
    }
  });
}

void Catalog::ReadRow(uint64_t array_id, int64_t row, const void* base, size_t row_bytes,
                      void* dst) const {
  Stripe& stripe = StripeFor(array_id, row);
  const char* src = static_cast<const char*>(base) + static_cast<size_t>(row) * row_bytes;
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint64_t before = stripe.seq.load(std::memory_order_acquire);
    if ((before & 1) == 0) {
      std::memcpy(dst, src, row_bytes);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (stripe.seq.load(std::memory_order_relaxed) == before) return;
    }
    if (attempt >= 8) sched_yield();
  }
  // A writer keeps the stripe busy (or died mid-write): read under the lock.
  LockStripe(stripe);
  std::memcpy(dst, src, row_bytes);
  pthread_mutex_unlock(&stripe.mutex);
}

void Catalog::ReadRows(const ArrayInfo& info, const void* base, std::span<const int64_t> ids,
                       int64_t first, const int64_t* positions, void* dst) const {
  size_t row_bytes = info.row_bytes();
  char* out = static_cast<char*>(dst);
  const char* in = static_cast<const char*>(base);
  bool written = info.slot >= 0 && __atomic_load_n(&entries()[info.slot].written, __ATOMIC_ACQUIRE);
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t row = ids[i] - first;
    char* slot =
        out + static_cast<size_t>(positions ? positions[i] : static_cast<int64_t>(i)) * row_bytes;
    if (written) {
      ReadRow(info.id, row, base, row_bytes, slot);
    } else {
      std::memcpy(slot, in + static_cast<size_t>(row) * row_bytes, row_bytes);
    }
  }
}

void Catalog::WriteRows(const ArrayInfo& info, void* base, std::span<const int64_t> ids,
                        int64_t first, const int64_t* positions, const void* src, bool add) const {
  if (info.slot >= 0) __atomic_store_n(&entries()[info.slot].written, 1, __ATOMIC_SEQ_CST);
  size_t row_bytes = info.row_bytes();
  const char* in = static_cast<const char*>(src);
  for (size_t i = 0; i < ids.size(); ++i) {
    const char* slot =
        in + static_cast<size_t>(positions ? positions[i] : static_cast<int64_t>(i)) * row_bytes;
    WriteRow(info.id, ids[i] - first, base, row_bytes, slot, info.dtype, add);
  }
}

void Catalog::UpdateRows(const ArrayInfo& info, void* base, std::span<const int64_t> ids,
                         int64_t first,
                         const std::function<void(size_t i, char* row)>& update) const {
  if (info.slot >= 0) __atomic_store_n(&entries()[info.slot].written, 1, __ATOMIC_SEQ_CST);
  const size_t row_bytes = info.row_bytes();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t row = ids[i] - first;
    WriteLocked(info.id, row, [&] {
      update(i, static_cast<char*>(base) + static_cast<size_t>(row) * row_bytes);
    });
  }
}

void AddElements(DType dtype, void* dst, const void* src, size_t count) {
  VisitDType(dtype, [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), bool>) {
      auto* d = static_cast<uint8_t*>(dst);
      auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < count; ++i) d[i] = (d[i] | s[i]) ? 1 : 0;
    } else {
      AddTyped<decltype(v)>(dst, src, count);
    }
  });
}

}  // namespace tessera::shm
