// File: src/rpc/message.h
//
// The in-memory form of an RPC message: a wire::Header plus raw arrays. Array
// payloads are Blobs, byte ranges kept alive by a shared owner, so a request
// can be sent, and a received frame read, without copying the bytes.
// ParseMessage turns received frames into a Message and validates everything
// a peer controls (header size and syntax, version, token, array count,
// dtypes, shapes and exact byte sizes) before anything reads it.
#ifndef TESSERA_SRC_RPC_MESSAGE_H_
#define TESSERA_SRC_RPC_MESSAGE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/rpc/wire.pb.h"
#include "tessera/base/dtype.h"
#include "tessera/base/status.h"

namespace tessera::rpc {

inline constexpr uint32_t kWireVersion = 3;
inline constexpr size_t kMaxHeaderBytes = 1 << 20;
inline constexpr int kMaxArrayDims = 8;

// `size` bytes at `data`, alive while `owner` (or a copy of the Blob) is.
struct Blob {
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;

  template <typename T, typename Alloc>
  static Blob FromVector(std::vector<T, Alloc> values) {
    auto holder = std::make_shared<std::vector<T, Alloc>>(std::move(values));
    return {holder->data(), holder->size() * sizeof(T), holder};
  }
  // Borrows memory the caller keeps alive (e.g. a shared-memory shard).
  static Blob Borrow(const void* data, size_t size) { return {data, size, nullptr}; }
  // `size` uninitialised bytes (8-byte aligned) to fill before sending.
  static Blob Allocate(size_t size, void** data) {
    std::shared_ptr<uint64_t[]> holder(new uint64_t[(size + 7) / 8]);
    *data = holder.get();
    return {holder.get(), size, std::move(holder)};
  }
};

struct WireArray {
  DType dtype = DType::kInt64;
  std::vector<int64_t> shape;
  Blob blob;

  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  size_t row_bytes() const;
  template <typename T>
  std::span<const T> span() const {
    return {static_cast<const T*>(blob.data), blob.size / sizeof(T)};
  }
};

template <typename T, typename Alloc>
WireArray MakeWireArray(std::vector<T, Alloc> values) {
  int64_t n = static_cast<int64_t>(values.size());
  return {DTypeOf<T>(), {n}, Blob::FromVector(std::move(values))};
}

struct Message {
  wire::Header header;
  std::vector<WireArray> arrays;
};

// A request with version, method and request id filled in.
Message MakeRequest(wire::Method method);
// A response to `request` carrying `status`.
Message MakeResponse(const wire::Header& request, const Status& status);
// The answer to a message from a peer that has not shown the job token (a
// wrong token, or a header too malformed to hold one): only the request id
// and the error, without the wire version or a method: such a peer learns
// nothing about the server.
Message MakeRefusal(uint64_t request_id, const Status& status);
bool IsRefusal(const wire::Header& header);
// The status a response carries (OK, or the server's error).
Status ResponseStatus(const wire::Header& header);

std::string_view MethodName(wire::Method method);

// Serialises the header (with array metadata filled from `message.arrays`).
std::string EncodeHeader(Message& message);

// Parses and validates frames[0] as a header and frames[1..] as its arrays.
// With a `token` (servers), the message must be a request carrying it,
// checked in constant time before anything else. A refusal (MakeRefusal) is
// the one response accepted without this program's wire version.
StatusOr<Message> ParseMessage(std::vector<Blob> frames, std::string_view token);

}  // namespace tessera::rpc

#endif  // TESSERA_SRC_RPC_MESSAGE_H_
