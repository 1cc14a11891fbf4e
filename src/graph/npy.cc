#include "src/graph/npy.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include "tessera/base/strings.h"

namespace tessera {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

Status Bad(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(path, ": not a valid .npy file: ", what));
}

// Finds `'key':` in the header dict and returns the text after it.
StatusOr<std::string_view> FindKey(std::string_view dict, std::string_view key,
                                   const std::string& path) {
  for (char quote : {'\'', '"'}) {
    std::string needle = StrCat(std::string(1, quote), key, std::string(1, quote));
    size_t pos = dict.find(needle);
    if (pos == std::string_view::npos) continue;
    std::string_view rest = dict.substr(pos + needle.size());
    rest = StripWhitespace(rest);
    if (rest.empty() || rest[0] != ':') return Bad(path, StrCat("malformed '", key, "'"));
    return StripWhitespace(rest.substr(1));
  }
  return Bad(path, StrCat("header has no '", key, "' entry"));
}

// Each DType's kind and size in a NumPy descr, in the enum's order.
constexpr std::string_view kKinds[] = {"b1", "i1", "u1", "i2", "i4", "i8", "f4", "f8"};

StatusOr<DType> ParseDescr(std::string_view descr, const std::string& path) {
  // Byte order: '<' little, '|' not applicable, '=' native (little here), '>' big.
  if (descr.size() < 2) return Bad(path, StrCat("unknown dtype '", descr, "'"));
  char order = descr[0];
  std::string_view kind = descr.substr(1);
  if (order == '>' && kind != "b1" && kind != "i1" && kind != "u1") {
    return absl::InvalidArgumentError(
        StrCat(path, ": big-endian dtype '", descr, "' is not supported; save it little-endian"));
  }
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    return Bad(path, StrCat("unknown dtype '", descr, "'"));
  }
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    if (kind == kKinds[i]) return static_cast<DType>(i);
  }
  return absl::InvalidArgumentError(
      StrCat(path, ": unsupported dtype '", descr,
             "' (supported: bool, int8, uint8, int16, int32, int64, float32, float64)"));
}

// How NumPy writes each DType's descr (little-endian, '|' for one byte).
std::string DescrOf(DType dtype) {
  if (DTypeSize(dtype) == 0) return "";
  return StrCat(DTypeSize(dtype) == 1 ? "|" : "<", kKinds[static_cast<size_t>(dtype)]);
}

StatusOr<std::string_view> QuotedValue(std::string_view text, const std::string& path) {
  if (text.empty() || (text[0] != '\'' && text[0] != '"')) return Bad(path, "malformed descr");
  size_t end = text.find(text[0], 1);
  if (end == std::string_view::npos) return Bad(path, "malformed descr");
  return text.substr(1, end - 1);
}

}  // namespace

StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t size, const std::string& path) {
  return ParseNpyHeader(data, size, size, path);
}

StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* data, size_t available, uint64_t file_size,
                                   const std::string& path) {
  // The header is parsed from the `available` bytes only.
  const size_t size = static_cast<size_t>(std::min<uint64_t>(available, file_size));
  if (size < 10 || std::memcmp(data, kMagic, kMagicLen) != 0) {
    return Bad(path, size < 10 ? "file too short for a header" : "missing \\x93NUMPY magic");
  }
  uint8_t major = data[6];
  size_t header_len = 0;
  size_t prefix = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return Bad(path, "file too short for a header");
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
                 (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
    prefix = 12;
  } else {
    return Bad(path, StrCat("unsupported format version ", major));
  }
  if (header_len > size - prefix) return Bad(path, "truncated header");
  std::string_view dict(reinterpret_cast<const char*>(data + prefix), header_len);
  if (dict.find('{') == std::string_view::npos || dict.find('}') == std::string_view::npos) {
    return Bad(path, "header is not a dict");
  }

  NpyHeader header;
  header.data_offset = prefix + header_len;

  ASSIGN_OR_RETURN(std::string_view descr_text, FindKey(dict, "descr", path));
  ASSIGN_OR_RETURN(std::string_view descr, QuotedValue(descr_text, path));
  ASSIGN_OR_RETURN(header.dtype, ParseDescr(descr, path));

  ASSIGN_OR_RETURN(std::string_view fortran, FindKey(dict, "fortran_order", path));
  bool fortran_order = fortran.starts_with("True");
  if (!fortran_order && !fortran.starts_with("False")) {
    return Bad(path, "malformed fortran_order");
  }

  ASSIGN_OR_RETURN(std::string_view shape_text, FindKey(dict, "shape", path));
  if (shape_text.empty() || shape_text[0] != '(') return Bad(path, "malformed shape");
  size_t close = shape_text.find(')');
  if (close == std::string_view::npos) return Bad(path, "malformed shape");
  int64_t total = 1;  // Elements; overflow-checked below.
  for (std::string_view part : SplitString(shape_text.substr(1, close - 1), ',')) {
    part = StripWhitespace(part);
    if (part.empty()) continue;
    if (part.back() == 'L') part.remove_suffix(1);  // Python 2 long literals.
    int64_t dim = 0;
    if (!ParseInt64(part, &dim) || dim < 0) {
      return Bad(path, StrCat("malformed shape dimension '", part, "'"));
    }
    header.shape.push_back(dim);
    if (__builtin_mul_overflow(total, dim, &total) || total > (int64_t{1} << 58)) {
      return Bad(path, "shape is implausibly large");
    }
  }
  // Elements are read in place from the (page-aligned) map: a misaligned
  // element would be undefined behaviour. numpy pads the header to 64 bytes.
  if (header.data_offset % DTypeSize(header.dtype) != 0) {
    return Bad(path, StrCat("data starts at byte ", header.data_offset, ", not a multiple of the ",
                            DTypeSize(header.dtype), "-byte ", DTypeName(header.dtype),
                            " element (numpy pads the header to 64 bytes)"));
  }
  if (fortran_order && header.shape.size() > 1) {
    return absl::InvalidArgumentError(
        StrCat(path, ": Fortran-ordered arrays are not supported; save with np.ascontiguousarray"));
  }
  const int64_t expected = total * static_cast<int64_t>(DTypeSize(header.dtype));
  const int64_t actual = static_cast<int64_t>(file_size) - static_cast<int64_t>(header.data_offset);
  if (actual != expected) {
    return absl::InvalidArgumentError(
        StrCat(path, ": ", actual < expected ? "truncated" : "has trailing bytes", ": shape (",
               StrJoin(header.shape, ", "), ") of ", DTypeName(header.dtype), " needs ", expected,
               " data bytes, file has ", actual));
  }
  return header;
}

StatusOr<Array> ReadNpy(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeader(file.data(), file.size(), path));
  if (header.dtype == DType::kBool) {
    // Reading any other byte as a bool is undefined behaviour (numpy only
    // ever writes 0 and 1).
    const uint8_t* bytes = file.data() + header.data_offset;
    const size_t n = file.size() - header.data_offset;
    for (size_t i = 0; i < n; ++i) {
      if (bytes[i] > 1) {
        return Bad(path, StrCat("bool element ", i, " is the byte ", static_cast<int>(bytes[i]),
                                " (expected 0 or 1)"));
      }
    }
  }
  return Array::FromMapped(header.dtype, std::move(header.shape), std::move(file),
                           header.data_offset);
}

StatusOr<NpyHeader> ReadNpyHeader(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return ParseNpyHeader(file.data(), file.size(), path);
}

std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape) {
  std::string shape_text;
  if (shape.size() == 1) {
    shape_text = StrCat("(", shape[0], ",)");
  } else {
    shape_text = StrCat("(", StrJoin(shape, ", "), ")");
  }
  std::string dict = StrCat("{'descr': '", DescrOf(dtype),
                            "', 'fortran_order': False, 'shape': ", shape_text, ", }");
  size_t unpadded = kMagicLen + 4 + dict.size() + 1;  // +1 for the final newline.
  size_t padded = (unpadded + 63) / 64 * 64;
  dict.append(padded - unpadded, ' ');
  dict.push_back('\n');
  std::string header(kMagic, kMagicLen);
  header.push_back('\x01');
  header.push_back('\x00');
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  return header + dict;
}

Status WriteNpy(const std::string& path, const Array& array) {
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, array.dtype(), array.shape()));
  if (array.nbytes() > 0) RETURN_IF_ERROR(writer.AppendRows(array.data(), array.rows()));
  return writer.Close();
}

StatusOr<NpyWriter> NpyWriter::Create(const std::string& path, DType dtype,
                                      std::vector<int64_t> shape, Mode mode) {
  NpyWriter writer;
  ASSIGN_OR_RETURN(writer.file_, OutputFile::Create(path));
  std::string header = EncodeNpyHeader(dtype, shape);
  RETURN_IF_ERROR(writer.file_.Append(header.data(), header.size()));
  writer.dtype_ = dtype;
  writer.shape_ = std::move(shape);
  writer.header_bytes_ = header.size();
  int64_t row_elems = 1;
  for (size_t i = 1; i < writer.shape_.size(); ++i) row_elems *= writer.shape_[i];
  writer.row_bytes_ = static_cast<size_t>(row_elems) * DTypeSize(dtype);
  writer.mode_ = mode;
  if (mode == Mode::kPositional) {
    int64_t rows = writer.shape_.empty() ? 1 : writer.shape_[0];
    RETURN_IF_ERROR(writer.file_.Resize(writer.header_bytes_ +
                                        static_cast<uint64_t>(rows) * writer.row_bytes_));
  }
  return writer;
}

Status NpyWriter::AppendRows(const void* data, int64_t num_rows) {
  if (mode_ != Mode::kAppend) {
    return absl::InternalError(StrCat(file_.path(), ": AppendRows on a positional writer"));
  }
  int64_t total_rows = shape_.empty() ? 1 : shape_[0];
  if (rows_appended_ + num_rows > total_rows) {
    return absl::InternalError(StrCat(file_.path(), ": more rows written than declared"));
  }
  RETURN_IF_ERROR(file_.Append(data, static_cast<size_t>(num_rows) * row_bytes_));
  rows_appended_ += num_rows;
  return absl::OkStatus();
}

Status NpyWriter::WriteRowsAt(int64_t first_row, const void* data, int64_t num_rows) const {
  if (mode_ != Mode::kPositional) {
    return absl::InternalError(StrCat(file_.path(), ": WriteRowsAt on an append writer"));
  }
  int64_t total_rows = shape_.empty() ? 1 : shape_[0];
  if (first_row < 0 || first_row + num_rows > total_rows) {
    return absl::InternalError(StrCat(file_.path(), ": row write out of range"));
  }
  return file_.WriteAt(header_bytes_ + static_cast<uint64_t>(first_row) * row_bytes_, data,
                       static_cast<size_t>(num_rows) * row_bytes_);
}

Status NpyWriter::Close() {
  int64_t total_rows = shape_.empty() ? 1 : shape_[0];
  if (mode_ == Mode::kAppend && rows_appended_ != total_rows) {
    return absl::InternalError(
        StrCat(file_.path(), ": ", rows_appended_, " rows written, ", total_rows, " declared"));
  }
  return file_.Close();
}

}  // namespace tessera
