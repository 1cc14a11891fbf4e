// File: src/graph/npy.h
//
// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the on-disk form of every
// array tessera reads and writes. Reading maps the file and validates it fully
// before any byte of data is used: magic, header syntax, dtype, byte order,
// C order, and that the file holds exactly the bytes its shape says. Errors name
// the file and the problem.
#ifndef TESSERA_SRC_GRAPH_NPY_H_
#define TESSERA_SRC_GRAPH_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/file.h"
#include "tessera/base/status.h"
#include "tessera/graph/array.h"

namespace tessera {

struct NpyHeader {
  DType dtype = DType::kBool;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // Bytes before the first element.
};

// Parses and validates the header of a mapped .npy file (including the
// data-size check against the file length).
StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t size, const std::string& path);
// The same from the first `available` bytes of a file of `file_size` bytes
// (read in pieces): the data size is checked against `file_size`.
StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t available, uint64_t file_size,
                                   const std::string& path);

// Maps and validates `path`; the returned array reads from the map (no copy).
StatusOr<Array> ReadNpy(const std::string& path);
// Only the header of `path` (dtype and shape), validated like ReadNpy.
StatusOr<NpyHeader> ReadNpyHeader(const std::string& path);

// The .npy header bytes (version 1.0, padded to a multiple of 64 bytes).
std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape);

// Writes `array` to `path` (created or truncated).
Status WriteNpy(const std::string& path, const Array& array);

// Streams a .npy file whose dtype and shape are known up front, so that large
// outputs never need to sit in memory whole. In append mode rows are appended
// in order and Close() fails unless exactly the declared number was written.
// In positional mode the file is sized up front and rows are written at any
// position; the caller must cover every row.
class NpyWriter {
 public:
  enum class Mode { kAppend, kPositional };
  static StatusOr<NpyWriter> Create(const std::string& path, DType dtype,
                                    std::vector<int64_t> shape, Mode mode = Mode::kAppend);

  // Append mode: appends `num_rows` rows from `data`.
  Status AppendRows(const void* data, int64_t num_rows);
  // Positional mode: writes `num_rows` rows starting at row `first_row`.
  // Thread-safe for disjoint row ranges.
  Status WriteRowsAt(int64_t first_row, const void* data, int64_t num_rows) const;
  Status Close();

 private:
  OutputFile file_;
  DType dtype_ = DType::kBool;
  std::vector<int64_t> shape_;
  size_t header_bytes_ = 0;
  size_t row_bytes_ = 0;
  int64_t rows_appended_ = 0;
  Mode mode_ = Mode::kAppend;
};

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_NPY_H_
