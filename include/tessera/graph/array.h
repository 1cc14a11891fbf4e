// File: include/tessera/graph/array.h
//
// Array: the n-dimensional, row-major, typed buffer that every node
// and edge array (features, labels, masks, ids) travels in. An Array owns its
// storage, which is either heap memory or a read-only memory map of a .npy
// file; it is move-only. Arrays are not thread-safe for concurrent mutation;
// concurrent reads are fine.
#ifndef TESSERA_INCLUDE_TESSERA_GRAPH_ARRAY_H_
#define TESSERA_INCLUDE_TESSERA_GRAPH_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tessera/base/dtype.h"
#include "tessera/base/file.h"
#include "tessera/base/status.h"

namespace tessera {

class Array {
 public:
  // A zero-row array of dtype bool.
  Array();
  // Uninitialised heap array. Precondition: every dimension >= 0.
  static Array Empty(DType dtype, std::vector<int64_t> shape);
  // Zero-filled heap array.
  static Array Zeros(DType dtype, std::vector<int64_t> shape);
  // View into a mapped file that the array then owns. Precondition: the file
  // holds at least offset + nbytes bytes.
  static Array FromMapped(DType dtype, std::vector<int64_t> shape, MappedFile file, size_t offset);
  // 1-D heap array holding a copy of `values`.
  template <typename T>
  static Array From(std::span<const T> values) {
    Array a = Empty(DTypeOf<T>(), {static_cast<int64_t>(values.size())});
    if (!values.empty()) std::memcpy(a.mutable_data(), values.data(), values.size_bytes());
    return a;
  }
  template <typename T>
  static Array From(const std::vector<T>& values) {
    return From(std::span<const T>(values));
  }

  Array(Array&&) noexcept;
  Array& operator=(Array&&) noexcept;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  ~Array();

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  // First dimension (1 for a 0-d array).
  int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
  // Elements per row: product of the dimensions after the first.
  int64_t row_elems() const;
  size_t row_bytes() const { return static_cast<size_t>(row_elems()) * DTypeSize(dtype_); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }
  bool is_mapped() const;

  const void* data() const { return data_; }
  // Precondition: heap storage (mapped arrays are read-only).
  void* mutable_data();

  // Typed access. Precondition: DTypeOf<T>() == dtype().
  template <typename T>
  std::span<const T> span() const {
    CheckType(DTypeOf<T>());
    return {static_cast<const T*>(data_), static_cast<size_t>(numel())};
  }
  template <typename T>
  std::span<T> mutable_span() {
    CheckType(DTypeOf<T>());
    return {static_cast<T*>(mutable_data()), static_cast<size_t>(numel())};
  }

  // A heap copy with the same dtype and shape.
  Array Clone() const;
  // Rows `ids` of this array, in that order. Precondition: ids in [0, rows()).
  Array GatherRows(std::span<const int64_t> ids) const;
  // Copies row `i` to `dst` (row_bytes() bytes).
  void CopyRow(int64_t i, void* dst) const;
  // "float32[2708, 1433]".
  std::string Describe() const;
  // For mapped arrays: drops the resident pages (data stays readable).
  void ReleasePages() const;
  // The same for rows [begin_row, end_row) only (the whole pages inside
  // them): a sweep over a large mapped array drops what it has read.
  void ReleasePages(int64_t begin_row, int64_t end_row) const;

 private:
  struct Storage;
  void CheckType(DType requested) const;

  DType dtype_ = DType::kBool;
  std::vector<int64_t> shape_;
  std::unique_ptr<Storage> storage_;
  void* data_ = nullptr;
};

// Converts a 1-D integer (or bool) array of any width to int64; errors on
// floating dtypes and, when `non_negative`, on negative values. `what` names
// the array in errors. An int64 array keeps its storage; when it is mapped,
// the check drops the pages it has read.
StatusOr<Array> ToInt64Ids(Array array, std::string_view what, bool non_negative);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_GRAPH_ARRAY_H_
