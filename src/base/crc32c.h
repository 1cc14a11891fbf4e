// File: src/base/crc32c.h
//
// CRC-32C (Castagnoli), the checksum of checkpoint files: with SSE 4.2's
// crc32 instruction where the CPU has it (several GB/s on one core), a
// table otherwise. Crc32c("123456789") == 0xE3069283.
#ifndef TESSERA_SRC_BASE_CRC32C_H_
#define TESSERA_SRC_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace tessera {

// The CRC of `size` bytes following data that had CRC `crc` (0 to start).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);
inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_CRC32C_H_
