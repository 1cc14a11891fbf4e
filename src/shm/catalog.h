// File: src/shm/catalog.h
//
// Catalog: the control segment of one machine of a job,
// "/tessera.<job>.m<machine>.catalog". The main server creates it; backup
// servers and local clients open it. It holds
//   * the table of named arrays the machine serves (the partition's graph
//     arrays, its node/edge data and every KV tensor made at run time), each
//     living in its own segment, with a generation counter that changes on
//     every add or remove so readers can refresh cached mappings cheaply;
//   * the row-lock stripes that make concurrent writes to the same rows from
//     several processes (servers and clients of one machine) safe: a robust
//     process-shared mutex per stripe for writers and a sequence counter for
//     lock-free readers (a seqlock).
// Mutexes are robust: a process killed while holding one does not block the
// others forever; the next locker repairs the stripe and logs a warning.
//
// Thread-safe and process-safe.
#ifndef TESSERA_SRC_SHM_CATALOG_H_
#define TESSERA_SRC_SHM_CATALOG_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "src/shm/segment.h"
#include "tessera/base/dtype.h"
#include "tessera/base/status.h"

namespace tessera::shm {

// How an array's rows are spread over machines: like the nodes, like the
// edges, or not sharded (graph structure, one array per machine).
enum class Policy : uint8_t { kNode = 0, kEdge = 1, kLocal = 2 };
std::string_view PolicyName(Policy policy);  // "node", "edge", "local"

struct ArrayInfo {
  std::string name;  // Catalog key, e.g. "node/feat", "graph/indptr".
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // This machine's shard.
  Policy policy = Policy::kNode;
  bool persistent = true;
  uint64_t id = 0;      // Unique within the job's machine; names the segment.
  std::string segment;  // Shared-memory name of the data.
  int slot = -1;        // Catalog entry index (set by Add and List).

  // Sizes in bytes; SIZE_MAX when the shape is negative or its size does
  // not fit in size_t (no allocation of that size can succeed).
  size_t nbytes() const;
  size_t row_bytes() const;
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
};

class Catalog {
 public:
  static constexpr int kMaxArrays = 1024;
  static constexpr int kMaxNameLength = 127;
  static constexpr int kMaxDims = 4;
  static constexpr int kNumStripes = 4096;

  // Creates the control segment (AlreadyExists if a server of this job and
  // machine already did).
  static StatusOr<Catalog> Create(std::string_view job, int machine);
  // Opens it; NotFound when no server of this job and machine runs here.
  static StatusOr<Catalog> Open(std::string_view job, int machine);

  Catalog(Catalog&&) noexcept = default;
  Catalog& operator=(Catalog&&) noexcept = default;

  // Reserves an array id and returns the segment name that goes with it, so
  // that the data can be created and filled before Add() publishes it.
  uint64_t ReserveId(std::string* segment);
  // Adds an entry (with a reserved id, or assigns one when info->id is 0) and
  // sets info->segment. AlreadyExists if the name is taken, ResourceExhausted
  // when the table is full.
  Status Add(ArrayInfo* info);
  // Removes an entry; NotFound if absent.
  Status Remove(const std::string& name);
  StatusOr<ArrayInfo> Find(const std::string& name) const;
  std::vector<ArrayInfo> List() const;
  // Changes on every Add and Remove.
  uint64_t generation() const;

  // Row writes: WriteRow copies `row_bytes` bytes from `src` over row `row` of
  // `base` (or adds them, element-wise, when `add`), under the stripe lock.
  // ReadRow copies a consistent snapshot of the row (never a torn one).
  void WriteRow(uint64_t array_id, int64_t row, void* base, size_t row_bytes, const void* src,
                DType dtype, bool add) const;
  void ReadRow(uint64_t array_id, int64_t row, const void* base, size_t row_bytes, void* dst) const;

  // Batch forms over the array `info` (as returned by Add, Find or List) at
  // `base`: row ids[i] - first goes to / comes from slot positions[i] of
  // dst / src (slot i when positions is null). Writes mark the array as
  // written first; reads of an array never written since it was published
  // (e.g. the partition's features) copy without the seqlock, at plain
  // gather speed. A read that races with the very first write to an array
  // may therefore see that write half done; later reads never do.
  void ReadRows(const ArrayInfo& info, const void* base, std::span<const int64_t> ids,
                int64_t first, const int64_t* positions, void* dst) const;
  void WriteRows(const ArrayInfo& info, void* base, std::span<const int64_t> ids, int64_t first,
                 const int64_t* positions, const void* src, bool add) const;
  // Read-modify-write: calls update(i, row) for row ids[i] - first of the
  // array at `base`, under that row's stripe lock (readers see the row
  // before or after, never half updated). State kept in other arrays for the
  // same row may be updated inside `update` too: every writer of such state
  // must go through this function with the same `info`.
  void UpdateRows(const ArrayInfo& info, void* base, std::span<const int64_t> ids, int64_t first,
                  const std::function<void(size_t i, char* row)>& update) const;

  bool owner() const { return segment_.owner(); }

 private:
  struct Header;
  struct Entry;
  struct Stripe;
  explicit Catalog(SharedSegment segment) : segment_(std::move(segment)) {}
  Header* header() const;
  Entry* entries() const;
  Stripe* stripes() const;
  Stripe& StripeFor(uint64_t array_id, int64_t row) const;
  void LockStripe(Stripe& stripe) const;
  // Runs write() under the row's stripe lock, with the seqlock marking the
  // row as being written (WriteRow, UpdateRows).
  template <typename Write>
  void WriteLocked(uint64_t array_id, int64_t row, Write&& write) const;
  void LockTable() const;
  void UnlockTable() const;

  SharedSegment segment_;
  std::string job_;
  int machine_ = 0;
};

// Adds `src` to `dst` element-wise: `count` elements of `dtype`.
void AddElements(DType dtype, void* dst, const void* src, size_t count);

}  // namespace tessera::shm

#endif  // TESSERA_SRC_SHM_CATALOG_H_
