// File: src/base/resource.h
//
// Process resource readings for the "wall time and peak RSS" lines that
// long-running commands print, and byte formatting for humans.
#ifndef TESSERA_SRC_BASE_RESOURCE_H_
#define TESSERA_SRC_BASE_RESOURCE_H_

#include <cstdint>
#include <string>

namespace tessera {

// Peak resident set size of this process so far, in bytes (getrusage).
int64_t PeakRssBytes();
// "1.23 GiB", "512.0 MiB", "17 B".
std::string FormatBytes(int64_t bytes);

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_RESOURCE_H_
