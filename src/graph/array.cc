#include "tessera/graph/array.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "spdlog/spdlog.h"
#include "tessera/base/strings.h"

namespace tessera {

// Heap memory (64-byte aligned, uninitialised) or a mapped file.
struct Array::Storage {
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<uint8_t[], AlignedDelete> heap;
  MappedFile mapped;
  size_t offset = 0;
};

Array::Array() : shape_{0} {}
Array::Array(Array&&) noexcept = default;
Array& Array::operator=(Array&&) noexcept = default;
Array::~Array() = default;

Array Array::Empty(DType dtype, std::vector<int64_t> shape) {
  Array a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.storage_ = std::make_unique<Storage>();
  size_t bytes = std::max<size_t>(a.nbytes(), 1);
  a.storage_->heap.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t(64))));
  a.data_ = a.storage_->heap.get();
  return a;
}

Array Array::Zeros(DType dtype, std::vector<int64_t> shape) {
  Array a = Empty(dtype, std::move(shape));
  std::memset(a.data_, 0, a.nbytes());
  return a;
}

Array Array::FromMapped(DType dtype, std::vector<int64_t> shape, MappedFile file, size_t offset) {
  Array a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.storage_ = std::make_unique<Storage>();
  a.storage_->mapped = std::move(file);
  a.storage_->offset = offset;
  a.data_ = const_cast<uint8_t*>(a.storage_->mapped.data()) + offset;
  if (a.storage_->mapped.data() == nullptr) a.data_ = nullptr;
  return a;
}

int64_t Array::row_elems() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape_.size(); ++i) n *= shape_[i];
  return n;
}

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Array::is_mapped() const { return storage_ != nullptr && storage_->heap == nullptr; }

void* Array::mutable_data() {
  if (is_mapped()) {
    spdlog::critical("Array::mutable_data on a read-only mapped array {}", Describe());
    std::abort();
  }
  return data_;
}

void Array::CheckType(DType requested) const {
  if (requested != dtype_) {
    spdlog::critical("Array of dtype {} accessed as {}", DTypeName(dtype_), DTypeName(requested));
    std::abort();
  }
}

Array Array::Clone() const {
  Array a = Empty(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(a.data_, data_, nbytes());
  return a;
}

Array Array::GatherRows(std::span<const int64_t> ids) const {
  std::vector<int64_t> shape = shape_;
  if (shape.empty()) shape.push_back(1);
  shape[0] = static_cast<int64_t>(ids.size());
  Array out = Empty(dtype_, std::move(shape));
  const size_t rb = row_bytes();
  auto* dst = static_cast<uint8_t*>(out.data_);
  const auto* src = static_cast<const uint8_t*>(data_);
  if (rb == 8) {
    for (size_t i = 0; i < ids.size(); ++i) std::memcpy(dst + i * 8, src + ids[i] * 8, 8);
  } else if (rb == 4) {
    for (size_t i = 0; i < ids.size(); ++i) std::memcpy(dst + i * 4, src + ids[i] * 4, 4);
  } else if (rb == 1) {
    for (size_t i = 0; i < ids.size(); ++i) dst[i] = src[ids[i]];
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::memcpy(dst + i * rb, src + ids[i] * rb, rb);
  }
  return out;
}

void Array::CopyRow(int64_t i, void* dst) const {
  const size_t rb = row_bytes();
  std::memcpy(dst, static_cast<const uint8_t*>(data_) + static_cast<size_t>(i) * rb, rb);
}

std::string Array::Describe() const {
  return StrCat(DTypeName(dtype_), "[", StrJoin(shape_, ", "), "]");
}

void Array::ReleasePages() const {
  if (is_mapped()) storage_->mapped.DontNeed(storage_->offset, nbytes());
}

void Array::ReleasePages(int64_t begin_row, int64_t end_row) const {
  if (!is_mapped() || end_row <= begin_row) return;
  storage_->mapped.DontNeed(storage_->offset + static_cast<size_t>(begin_row) * row_bytes(),
                            static_cast<size_t>(end_row - begin_row) * row_bytes());
}

namespace {

template <typename T>
void Widen(const Array& in, Array* out) {
  auto src = in.span<T>();
  std::copy(src.begin(), src.end(), out->mutable_span<int64_t>().begin());
}

// A chunk at a time, dropping a mapped array's pages behind the check, so
// that checking a large mapped id list does not leave it resident.
Status CheckNonNegative(const Array& array, std::string_view what) {
  constexpr size_t kChunk = 1 << 20;
  auto ids = array.span<int64_t>();
  for (size_t begin = 0; begin < ids.size(); begin += kChunk) {
    const size_t end = std::min(ids.size(), begin + kChunk);
    for (size_t i = begin; i < end; ++i) {
      if (ids[i] < 0) {
        return absl::InvalidArgumentError(
            StrCat(what, ": negative id ", ids[i], " at position ", i));
      }
    }
    array.ReleasePages(static_cast<int64_t>(begin), static_cast<int64_t>(end));
  }
  array.ReleasePages();  // The pages that chunk boundaries split.
  return absl::OkStatus();
}

}  // namespace

StatusOr<Array> ToInt64Ids(Array array, std::string_view what, bool non_negative) {
  if (array.ndim() != 1) {
    return absl::InvalidArgumentError(
        StrCat(what, ": expected a 1-D id array, got ", array.Describe()));
  }
  if (IsFloating(array.dtype())) {
    return absl::InvalidArgumentError(
        StrCat(what, ": expected an integer array, got ", DTypeName(array.dtype())));
  }
  if (array.dtype() != DType::kInt64) {
    Array out = Array::Empty(DType::kInt64, {array.rows()});
    VisitDType(array.dtype(), [&](auto v) {
      // Floating types were rejected above; int64 is not here.
      if constexpr (std::is_integral_v<decltype(v)>) Widen<decltype(v)>(array, &out);
    });
    array = std::move(out);
  }
  // An int64 input keeps its (possibly mapped) storage.
  if (non_negative) RETURN_IF_ERROR(CheckNonNegative(array, what));
  return array;
}

}  // namespace tessera
