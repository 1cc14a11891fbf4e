// File: src/kvstore/feature_store.cc
//
// The rules of tensors shared by every FeatureStore and the servers: names
// and types, initialisers, id ranges.
#include "src/kvstore/feature_store.h"

#include <cmath>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "src/base/random.h"

namespace tessera::kvstore {

size_t TensorMeta::row_bytes() const {
  size_t n = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

RowLayout LayoutOf(const TensorMeta& meta) { return {meta.dtype, meta.row_bytes()}; }

Status CheckLayout(const TensorMeta& meta, const RowLayout& layout) {
  if (LayoutOf(meta) == layout) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "tensor '{}' now holds {} rows of {} bytes, and the caller's buffer {} rows of {} bytes: "
      "was it deleted and created again with another dtype or shape since its handle was made?",
      meta.key, DTypeName(meta.dtype), meta.row_bytes(), DTypeName(layout.dtype),
      layout.row_bytes));
}

Status CheckEmbedding(const TensorMeta& meta, int64_t dim) {
  if (meta.dtype != DType::kFloat32 || meta.shape.size() != 2) {
    return absl::InvalidArgumentError(
        fmt::format("sparse update of '{}': not a float32 [rows, dim] embedding", meta.key));
  }
  return CheckLayout(meta, RowsOf<float>(dim));
}

double InitValue(Init init, double a, double b, uint64_t seed, uint64_t index) {
  Rng rng(seed, /*stream=*/static_cast<uint64_t>(init), index);
  switch (init) {
    case Init::kUniform:
      return a + (b - a) * rng.Uniform();
    case Init::kNormal:
      return a + b * rng.Normal();
    default:
      return 0;
  }
}

void FillInit(const InitSpec& spec, void* dst, size_t count, uint64_t first) {
  if (spec.init != Init::kUniform && spec.init != Init::kNormal) return;
  for (size_t k = 0; k < count; ++k) {
    double v = InitValue(spec.init, spec.a, spec.b, spec.seed, first + k);
    if (spec.dtype == DType::kFloat32) {
      static_cast<float*>(dst)[k] = static_cast<float>(v);
    } else {
      static_cast<double*>(dst)[k] = v;
    }
  }
}

Status ValidateInitSpec(const InitSpec& spec, const PartitionBook& book) {
  // Printable characters only: a NUL would cut the name short in the
  // catalog (a second tensor under an existing name), others garble logs.
  bool printable =
      std::all_of(spec.name.begin(), spec.name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  const size_t slash = spec.name.find('/');
  const std::string_view plain = book.is_homogeneous() || slash == std::string::npos
                                     ? std::string_view(spec.name)
                                     : std::string_view(spec.name).substr(slash + 1);
  if (plain.empty() || plain.find('/') != std::string::npos || !printable) {
    return absl::InvalidArgumentError(
        fmt::format("bad tensor name {:?}: printable ASCII without '/'{}", spec.name,
                    book.is_homogeneous() ? "" : " after its type (\"<type>/<name>\")"));
  }
  if (spec.policy != shm::Policy::kNode && spec.policy != shm::Policy::kEdge) {
    return absl::InvalidArgumentError("policy must be node or edge");
  }
  ASSIGN_OR_RETURN(int type, TensorType(book, spec.policy, spec.name));
  if (static_cast<uint32_t>(spec.dtype) > static_cast<uint32_t>(DType::kFloat64)) {
    return absl::InvalidArgumentError(
        fmt::format("unknown dtype {}", static_cast<uint32_t>(spec.dtype)));
  }
  if (static_cast<uint32_t>(spec.init) > static_cast<uint32_t>(Init::kNone)) {
    return absl::InvalidArgumentError(
        fmt::format("unknown initialiser {}", static_cast<uint32_t>(spec.init)));
  }
  if ((spec.init == Init::kUniform || spec.init == Init::kNormal) && !IsFloating(spec.dtype)) {
    return absl::InvalidArgumentError("uniform and normal initialisers need a float dtype");
  }
  int64_t rows = NumIds(book, spec.policy, type);
  if (spec.shape.empty() || spec.shape.size() > shm::Catalog::kMaxDims || spec.shape[0] != rows) {
    return absl::InvalidArgumentError(fmt::format(
        "tensor '{}': shape[0] must be the number of {}s{} ({}), with 1 to {} dimensions",
        spec.name, shm::PolicyName(spec.policy),
        book.is_homogeneous()
            ? ""
            : fmt::format(" of type '{}'", book.TypeName(spec.policy == shm::Policy::kNode, type)),
        rows, int{shm::Catalog::kMaxDims}));
  }
  // The size in bytes, checked: a wrapped product would pass every later
  // test with a buffer far too small.
  uint64_t bytes = DTypeSize(spec.dtype);
  for (int64_t d : spec.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(fmt::format("tensor '{}': negative dimension in [{}]",
                                                    spec.name, fmt::join(spec.shape, ", ")));
    }
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          fmt::format("tensor '{}': shape [{}] of {} is more than 2^63 bytes", spec.name,
                      fmt::join(spec.shape, ", "), DTypeName(spec.dtype)));
    }
  }
  return absl::OkStatus();
}

std::string TensorKey(const InitSpec& spec) {
  return fmt::format("{}/{}", shm::PolicyName(spec.policy), spec.name);
}

StatusOr<int> TensorType(const PartitionBook& book, shm::Policy policy, std::string_view name) {
  if (book.is_homogeneous()) return 0;
  const size_t slash = name.find('/');
  const std::string type(name.substr(0, slash));
  if (slash != std::string::npos) {
    if (policy == shm::Policy::kNode) {
      for (int t = 0; t < book.num_ntypes(); ++t) {
        if (book.ntypes()[t] == type) return t;
      }
    } else {
      for (int r = 0; r < book.num_etypes(); ++r) {
        if (book.etypes()[r].Canonical() == type) return r;
      }
    }
  }
  const std::vector<std::string> types = book.TypeNames(policy == shm::Policy::kNode);
  return absl::InvalidArgumentError(fmt::format(
      "{} tensor '{}' of a heterogeneous graph must be named '<type>/<name>' with one of its {} "
      "({})",
      shm::PolicyName(policy), name,
      policy == shm::Policy::kNode ? "node types" : "canonical relations", fmt::join(types, ", ")));
}

int64_t NumIds(const PartitionBook& book, shm::Policy policy, int type) {
  if (type == kAllTypes) return policy == shm::Policy::kNode ? book.num_nodes() : book.num_edges();
  return policy == shm::Policy::kNode ? book.NumNodesOfType(type) : book.NumEdgesOfType(type);
}

const std::vector<int64_t>& IdOffsets(const PartitionBook& book, shm::Policy policy, int type) {
  if (type == kAllTypes) {
    return policy == shm::Policy::kNode ? book.node_offsets() : book.edge_offsets();
  }
  return policy == shm::Policy::kNode ? book.TypedNodeOffsets(type) : book.TypedEdgeOffsets(type);
}

std::pair<int64_t, int64_t> IdRange(const PartitionBook& book, shm::Policy policy, int type,
                                    int part) {
  const std::vector<int64_t>& o = IdOffsets(book, policy, type);
  return {o[part], o[part + 1]};
}

Status CheckTensorKey(const std::string& key) {
  if (key.rfind("node/", 0) == 0 || key.rfind("edge/", 0) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a node or edge tensor (names start with node/ or edge/)", key));
}

}  // namespace tessera::kvstore
