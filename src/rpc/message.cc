// File: src/rpc/message.cc
#include "src/rpc/message.h"

#include <cstdint>
#include <cstring>

#include "fmt/format.h"
#include "src/rpc/security.h"

namespace tessera::rpc {

size_t WireArray::row_bytes() const {
  // Parsed arrays cannot overflow (ParseMessage); others saturate.
  size_t n = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(n, static_cast<size_t>(shape[i]), &n)) {
      return SIZE_MAX;
    }
  }
  return n;
}

Message MakeRequest(wire::Method method) {
  static std::atomic<uint64_t> next_id{1};
  Message m;
  m.header.set_version(kWireVersion);
  m.header.set_method(method);
  m.header.set_request_id(next_id.fetch_add(1, std::memory_order_relaxed));
  return m;
}

Message MakeResponse(const wire::Header& request, const Status& status) {
  Message m;
  m.header.set_version(kWireVersion);
  m.header.set_method(request.method());
  m.header.set_request_id(request.request_id());
  m.header.set_client_id(request.client_id());
  m.header.set_is_response(true);
  m.header.set_status_code(static_cast<int>(status.code()));
  m.header.set_status_message(std::string(status.message()));
  return m;
}

Message MakeRefusal(uint64_t request_id, const Status& status) {
  Message m;
  m.header.set_request_id(request_id);
  m.header.set_is_response(true);
  m.header.set_status_code(static_cast<int>(status.code()));
  m.header.set_status_message(std::string(status.message()));
  return m;
}

bool IsRefusal(const wire::Header& header) {
  return header.is_response() && header.version() == 0 && header.status_code() != 0 &&
         header.arrays_size() == 0;
}

Status ResponseStatus(const wire::Header& header) {
  if (header.status_code() == 0) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(header.status_code());
  if (header.status_code() < 0 || header.status_code() > 16) code = absl::StatusCode::kUnknown;
  return Status(code, header.status_message());
}

std::string_view MethodName(wire::Method method) {
  switch (method) {
    case wire::HELLO:
      return "hello";
    case wire::GOODBYE:
      return "goodbye";
    case wire::HEARTBEAT:
      return "heartbeat";
    case wire::PULL:
      return "pull";
    case wire::PUSH:
      return "push";
    case wire::INIT_DATA:
      return "init_data";
    case wire::DELETE_DATA:
      return "delete_data";
    case wire::LIST_DATA:
      return "list_data";
    case wire::BARRIER:
      return "barrier";
    case wire::SAMPLE:
      return "sample";
    case wire::IN_DEGREES:
      return "in_degrees";
    case wire::OUT_DEGREES:
      return "out_degrees";
    case wire::FIND_EDGES:
      return "find_edges";
    case wire::SPARSE_UPDATE:
      return "sparse_update";
    default:
      return "unknown method";
  }
}

std::string EncodeHeader(Message& message) {
  message.header.clear_arrays();
  for (const WireArray& a : message.arrays) {
    wire::ArrayMeta* meta = message.header.add_arrays();
    meta->set_dtype(static_cast<uint32_t>(a.dtype));
    for (int64_t d : a.shape) meta->add_shape(d);
  }
  return message.header.SerializeAsString();
}

StatusOr<Message> ParseMessage(std::vector<Blob> frames, std::string_view token) {
  if (frames.empty()) return absl::InvalidArgumentError("empty message");
  const Blob& head = frames[0];
  if (head.size > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(
        fmt::format("header of {} bytes exceeds the {} byte limit", head.size, kMaxHeaderBytes));
  }
  Message m;
  if (!m.header.ParseFromArray(head.data, static_cast<int>(head.size))) {
    return absl::InvalidArgumentError(fmt::format("malformed header ({} bytes)", head.size));
  }
  // The token first: a peer without it learns nothing, not even the version.
  if (!token.empty()) {  // A server reading a request.
    if (!ConstantTimeEquals(m.header.token(), token)) {
      return absl::PermissionDeniedError("wrong job token");
    }
    if (m.header.is_response())
      return absl::InvalidArgumentError("a response was sent to a server");
  }
  if (m.header.version() != kWireVersion) {
    if (IsRefusal(m.header) && frames.size() == 1) return m;
    return absl::FailedPreconditionError(
        fmt::format("wire version {} is not supported (this program speaks version {})",
                    m.header.version(), kWireVersion));
  }
  // Responses to unparseable requests carry METHOD_UNSPECIFIED.
  if (!wire::Method_IsValid(m.header.method()) ||
      (m.header.method() == wire::METHOD_UNSPECIFIED && !m.header.is_response())) {
    return absl::InvalidArgumentError(
        fmt::format("unknown method {}", static_cast<int>(m.header.method())));
  }
  size_t num_arrays = static_cast<size_t>(m.header.arrays_size());
  if (num_arrays != frames.size() - 1) {
    return absl::InvalidArgumentError(fmt::format(
        "header describes {} arrays but {} frames follow it", num_arrays, frames.size() - 1));
  }
  for (size_t i = 0; i < num_arrays; ++i) {
    const wire::ArrayMeta& meta = m.header.arrays(static_cast<int>(i));
    if (meta.dtype() > static_cast<uint32_t>(DType::kFloat64)) {
      return absl::InvalidArgumentError(fmt::format("array {}: unknown dtype {}", i, meta.dtype()));
    }
    if (meta.shape_size() > kMaxArrayDims) {
      return absl::InvalidArgumentError(
          fmt::format("array {}: {} dimensions (at most {})", i, meta.shape_size(), kMaxArrayDims));
    }
    WireArray a;
    a.dtype = static_cast<DType>(meta.dtype());
    // The product of the non-zero dimensions must fit too: row_bytes() of
    // an array of 0 rows multiplies the others.
    uint64_t bytes = DTypeSize(a.dtype), nonzero = DTypeSize(a.dtype);
    for (int64_t d : meta.shape()) {
      if (d < 0) return absl::InvalidArgumentError(fmt::format("array {}: negative dimension", i));
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
          (d > 0 && __builtin_mul_overflow(nonzero, static_cast<uint64_t>(d), &nonzero)) ||
          nonzero > (uint64_t{1} << 62)) {
        return absl::InvalidArgumentError(fmt::format("array {}: shape too large", i));
      }
      a.shape.push_back(d);
    }
    if (bytes != frames[i + 1].size) {
      return absl::InvalidArgumentError(
          fmt::format("array {}: shape and dtype need {} bytes but the frame has {}", i, bytes,
                      frames[i + 1].size));
    }
    a.blob = std::move(frames[i + 1]);
    if (a.blob.size > 0 && reinterpret_cast<uintptr_t>(a.blob.data) % 8 != 0) {
      // Small frames can sit at any offset of ZeroMQ's receive buffer; give
      // typed readers an aligned copy (an empty frame has nothing to read:
      // its copy would be a null vector, and memcpy to null is UB).
      auto copy = std::make_shared<std::vector<uint64_t>>((a.blob.size + 7) / 8);
      std::memcpy(copy->data(), a.blob.data, a.blob.size);
      a.blob = Blob{copy->data(), a.blob.size, copy};
    }
    m.arrays.push_back(std::move(a));
  }
  return m;
}

}  // namespace tessera::rpc
