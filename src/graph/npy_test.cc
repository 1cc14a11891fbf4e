#include "src/graph/npy.h"

#include <cstring>

#include "gtest/gtest.h"
#include "src/base/test_util.h"

namespace tessera {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

// A .npy file as numpy 1.x writes it: header for `descr`/`shape`, then data.
std::string NpyBytes(const std::string& dict, const std::string& data, int version = 1) {
  std::string header = dict;
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(version));
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  if (version != 1) out.append(2, '\0');
  return out + header + data;
}

TEST(Npy, RoundTripEveryDtype) {
  TempDir dir;
  std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  Array a = Array::From(f);
  ASSERT_TRUE(WriteNpy(dir / "f.npy", a).ok());
  auto back = ReadNpy(dir / "f.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype(), DType::kFloat32);
  EXPECT_EQ(back->shape(), std::vector<int64_t>{6});
  EXPECT_TRUE(back->is_mapped());
  EXPECT_EQ(std::vector<float>(back->span<float>().begin(), back->span<float>().end()), f);

  for (DType dtype : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32,
                      DType::kInt64, DType::kFloat32, DType::kFloat64}) {
    Array m = Array::Zeros(dtype, {3, 4});
    auto* bytes = static_cast<uint8_t*>(m.mutable_data());
    for (size_t i = 0; i < m.nbytes(); ++i) bytes[i] = dtype == DType::kBool ? i % 2 : i * 7;
    std::string path = dir / (std::string(DTypeName(dtype)) + ".npy");
    ASSERT_TRUE(WriteNpy(path, m).ok());
    auto r = ReadNpy(path);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->dtype(), dtype);
    EXPECT_EQ(r->shape(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(std::memcmp(r->data(), m.data(), m.nbytes()), 0);
  }
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  // numpy: np.save(f, np.arange(3, dtype=np.int64)) writes exactly this dict.
  std::string header = EncodeNpyHeader(DType::kInt64, {3});
  EXPECT_EQ(header.size() % 64, 0u);
  EXPECT_THAT(header, HasSubstr("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(EncodeNpyHeader(DType::kFloat32, {2, 5}), HasSubstr("'shape': (2, 5)"));
}

TEST(Npy, ReadsVersion2AndScalars) {
  TempDir dir;
  int32_t values[2] = {7, -9};
  WriteAll(dir / "v2.npy", NpyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                                    std::string(reinterpret_cast<char*>(values), 8), 2));
  auto a = ReadNpy(dir / "v2.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->span<int32_t>()[1], -9);
  double scalar = 2.5;
  WriteAll(dir / "s.npy", NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                   std::string(reinterpret_cast<char*>(&scalar), 8)));
  auto s = ReadNpy(dir / "s.npy");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ndim(), 0);
  EXPECT_EQ(s->span<double>()[0], 2.5);
}

TEST(Npy, RejectsBadFilesWithTheReason) {
  TempDir dir;
  struct Case {
    std::string name, bytes, reason;
  };
  const std::string ok_dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }";
  const std::vector<Case> cases = {
      {"truncated.npy", NpyBytes(ok_dict, std::string(20, 'x')), "truncated"},
      {"trailing.npy", NpyBytes(ok_dict, std::string(40, 'x')), "trailing bytes"},
      {"magic.npy", "PK\x03\x04 this is a zip file, not npy", "magic"},
      {"short.npy", "\x93NUM", "too short"},
      {"big_endian.npy",
       NpyBytes("{'descr': '>i8', 'fortran_order': False, 'shape': (4,), }", std::string(32, 'x')),
       "big-endian"},
      {"fortran.npy",
       NpyBytes("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 2), }", std::string(32, 'x')),
       "Fortran"},
      {"complex.npy",
       NpyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (4,), }", std::string(32, 'x')),
       "unsupported dtype"},
      {"object.npy",
       NpyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", std::string(32, 'x')),
       "dtype"},
      {"noshape.npy", NpyBytes("{'descr': '<i8', 'fortran_order': False, }", ""), "shape"},
      {"negative.npy", NpyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (-4,), }", ""),
       "shape"},
      {"huge.npy",
       NpyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
                ""),
       "implausibly large"},
      {"header_overrun.npy", std::string("\x93NUMPY\x01\x00\xff\x7f{'descr'", 17),
       "truncated header"},
      // Found by fuzz/npy_fuzz.cc: reading the byte 32 as a bool was undefined behaviour.
      {"bool_byte.npy",
       NpyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                std::string("\1\0 ", 3)),
       "bool element 2 is the byte 32 (expected 0 or 1)"},
      // Found while writing fuzz/npy_fuzz.cc: data at byte 73 was read as int64 in place
      // (misaligned, undefined behaviour).
      {"misaligned.npy",
       std::string("\x93NUMPY\x01\x00\x3f\x00", 10) +
           "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }     \n" + std::string(8, 'x'),
       "data starts at byte 73, not a multiple of the 8-byte int64 element"},
  };
  for (const Case& c : cases) {
    WriteAll(dir / c.name, c.bytes);
    auto r = ReadNpy(dir / c.name);
    ASSERT_FALSE(r.ok()) << c.name;
    std::string message(r.status().message());
    EXPECT_THAT(message, HasSubstr(dir / c.name)) << message;
    EXPECT_THAT(message, HasSubstr(c.reason)) << c.name << ": " << message;
  }
  EXPECT_EQ(ReadNpy(dir / "missing.npy").status().code(), absl::StatusCode::kNotFound);
}

TEST(NpyWriter, AppendModeChecksTheRowCount) {
  TempDir dir;
  int64_t rows[3] = {1, 2, 3};
  auto w = NpyWriter::Create(dir / "a.npy", DType::kInt64, {4});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->AppendRows(rows, 3).ok());
  Status st = w->Close();
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("3 rows written, 4 declared"));
  auto w2 = NpyWriter::Create(dir / "b.npy", DType::kInt64, {2});
  ASSERT_TRUE(w2.ok());
  EXPECT_FALSE(w2->AppendRows(rows, 3).ok());
}

TEST(NpyWriter, PositionalModeWritesAnywhere) {
  TempDir dir;
  auto w = NpyWriter::Create(dir / "p.npy", DType::kFloat32, {4, 2}, NpyWriter::Mode::kPositional);
  ASSERT_TRUE(w.ok());
  float hi[4] = {5, 6, 7, 8}, lo[4] = {1, 2, 3, 4};
  ASSERT_TRUE(w->WriteRowsAt(2, hi, 2).ok());
  ASSERT_TRUE(w->WriteRowsAt(0, lo, 2).ok());
  EXPECT_FALSE(w->WriteRowsAt(3, hi, 2).ok());
  EXPECT_FALSE(w->AppendRows(lo, 1).ok());
  ASSERT_TRUE(w->Close().ok());
  auto r = ReadNpy(dir / "p.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  auto v = r->span<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Array, GatherAndWiden) {
  Array a = Array::From(std::vector<int32_t>{10, 20, 30, 40});
  std::vector<int64_t> ids = {3, 0, 3};
  Array g = a.GatherRows(ids);
  EXPECT_EQ(g.span<int32_t>()[0], 40);
  EXPECT_EQ(g.span<int32_t>()[2], 40);
  auto wide = ToInt64Ids(std::move(a), "ids", true);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->dtype(), DType::kInt64);
  EXPECT_EQ(wide->span<int64_t>()[3], 40);
  auto negative = ToInt64Ids(Array::From(std::vector<int32_t>{1, -1}), "src.npy", true);
  EXPECT_THAT(negative.status().message(), HasSubstr("negative id -1 at position 1"));
  auto floats = ToInt64Ids(Array::From(std::vector<float>{1}), "src.npy", true);
  EXPECT_THAT(floats.status().message(), HasSubstr("float32"));
}

// Dropping the pages of some rows of a mapped array (whole pages inside the
// range) leaves every row readable; on a heap array it does nothing.
TEST(Array, ReleasingPagesOfRowsKeepsTheData) {
  TempDir dir;
  std::vector<int64_t> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * i);
  ASSERT_TRUE(WriteNpy(dir / "a.npy", Array::From(values)).ok());
  auto mapped = ReadNpy(dir / "a.npy");
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_TRUE(mapped->is_mapped());
  auto read = [&](const Array& a) {
    auto s = a.span<int64_t>();
    return std::vector<int64_t>(s.begin(), s.end());
  };
  EXPECT_EQ(read(*mapped), values);
  for (auto [begin, end] :
       {std::pair<int64_t, int64_t>{0, 1000}, {1000, 5000}, {7, 9}, {3, 3}, {4000, 10}}) {
    mapped->ReleasePages(begin, end);
    EXPECT_EQ(read(*mapped), values) << begin << ".." << end;
  }
  Array heap = Array::From(values);
  heap.ReleasePages(0, 5000);
  EXPECT_EQ(read(heap), values);
}

}  // namespace
}  // namespace tessera
