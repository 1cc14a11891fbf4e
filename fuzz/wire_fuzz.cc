// File: fuzz/wire_fuzz.cc
//
// Fuzzes the decoding and validation of received RPC messages
// (rpc::ParseMessage), as a server (with its job token) and as a client (no
// token) run it on every message a peer sends.
//
// Input: frames, each a little-endian uint32 length followed by that many
// bytes (the last frame takes what is left if the length says more); at most
// 16 frames. Frame 0 is the serialised wire::Header, frames 1.. the arrays.
// Frames point into the input at whatever offset they start, as ZeroMQ frames
// sit at any offset of its receive buffer.
//
// Properties checked beyond "no crash, leak or UB": a parsed message's arrays
// hold exactly the bytes their dtype and shape say and are readable as their
// type; re-encoding a parsed message (EncodeHeader) gives a message that
// parses again, with the same token check outcome.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "src/rpc/message.h"

namespace tessera::rpc {
namespace {

constexpr std::string_view kToken = "fuzz-job-token";
constexpr size_t kMaxFrames = 16;

std::vector<Blob> SplitFrames(const uint8_t* data, size_t size) {
  std::vector<Blob> frames;
  while (size >= 4 && frames.size() < kMaxFrames) {
    uint32_t len = 0;
    std::memcpy(&len, data, 4);
    data += 4;
    size -= 4;
    size_t n = len < size ? len : size;
    frames.push_back(Blob::Borrow(data, n));
    data += n;
    size -= n;
  }
  return frames;
}

template <typename T>
uint64_t Sum(const WireArray& a) {
  uint64_t sum = 0;
  for (T v : a.span<T>()) sum += static_cast<uint64_t>(v);
  return sum;
}

// Reads every element as the consumers of its dtype do.
uint64_t Touch(const WireArray& a) {
  size_t bytes = DTypeSize(a.dtype);
  for (int64_t d : a.shape) bytes *= static_cast<size_t>(d);
  FUZZ_ASSERT(bytes == a.blob.size);
  FUZZ_ASSERT(a.blob.size == 0 || reinterpret_cast<uintptr_t>(a.blob.data) % 8 == 0);
  return VisitDType(a.dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, bool>) {
      return Sum<uint8_t>(a);  // As bytes: nothing reads a peer's bools as bool.
    } else if constexpr (std::is_floating_point_v<T>) {
      return Sum<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(a);  // The bits.
    } else {
      return Sum<T>(a);
    }
  });
}

void Check(const Message& m) {
  volatile uint64_t sink = 0;
  for (const WireArray& a : m.arrays) {
    sink = sink + Touch(a);
    if (!a.shape.empty()) sink = sink + a.row_bytes() + static_cast<uint64_t>(a.rows());
  }
  (void)MethodName(m.header.method());
  (void)ResponseStatus(m.header).ok();
}

}  // namespace
}  // namespace tessera::rpc

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::rpc;
  std::vector<Blob> frames = SplitFrames(data, size);
  // As a server: requests must carry the token.
  auto server = ParseMessage(frames, kToken);
  // As a client (responses), and a server without a token.
  auto client = ParseMessage(frames, "");
  tessera::fuzz::Report("server", server.status());
  tessera::fuzz::Report("client", client.status());
  if (server.ok()) {
    FUZZ_ASSERT(client.ok());
    Check(*server);
    // Re-encoding what was accepted gives a message that is accepted again.
    Message m = std::move(*server);
    std::vector<Blob> again;
    auto header = std::make_shared<std::string>(EncodeHeader(m));
    again.push_back(Blob{header->data(), header->size(), header});
    for (WireArray& a : m.arrays) again.push_back(a.blob);
    auto reparsed = ParseMessage(std::move(again), kToken);
    FUZZ_ASSERT(reparsed.ok());
    FUZZ_ASSERT(reparsed->arrays.size() == m.arrays.size());
    FUZZ_ASSERT(reparsed->header.method() == m.header.method());
  }
  if (client.ok()) Check(*client);
  return 0;
}
