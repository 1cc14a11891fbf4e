// File: fuzz/npy_fuzz.cc
//
// Fuzzes the .npy reader: the input is the file. ReadNpy (which maps the file
// and validates it) must either fail with a Status or return an array whose
// every element can be read as its dtype, as tessera's consumers read them
// (ids widened by ToInt64Ids, bool masks read as bool, features as floats).
// The header must also agree with ParseNpyHeader on the same bytes in memory,
// and EncodeNpyHeader of the result must parse back to the same dtype and
// shape.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "src/graph/npy.h"
#include "tessera/graph/array.h"

namespace tessera {
namespace {

template <typename T>
double Sum(const Array& a) {
  double sum = 0;
  for (T v : a.span<T>()) sum += static_cast<double>(v);
  return sum;
}

double Touch(const Array& a) {
  return VisitDType(a.dtype(), [&](auto v) { return Sum<decltype(v)>(a); });
}

}  // namespace
}  // namespace tessera

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static const std::string path = fuzz::ScratchFolder() + "/input.npy";
  fuzz::WriteFile(path, fuzz::AsText(data, size));
  auto in_memory = ParseNpyHeader(data, size, path);
  auto array = ReadNpy(path);
  fuzz::Report("ReadNpy", array.status());
  if (!array.ok()) return 0;
  FUZZ_ASSERT(in_memory.ok());
  FUZZ_ASSERT(in_memory->dtype == array->dtype() && in_memory->shape == array->shape());
  FUZZ_ASSERT(array->nbytes() == size - in_memory->data_offset);
  volatile double sink = Touch(*array);
  (void)sink;
  if (array->ndim() == 1) (void)ToInt64Ids(std::move(*array), path, /*non_negative=*/true);

  std::string header = EncodeNpyHeader(in_memory->dtype, in_memory->shape);
  std::string file = header + std::string(fuzz::AsText(data, size).substr(in_memory->data_offset));
  auto again = ParseNpyHeader(reinterpret_cast<const uint8_t*>(file.data()), file.size(), path);
  FUZZ_ASSERT(again.ok());
  FUZZ_ASSERT(again->dtype == in_memory->dtype && again->shape == in_memory->shape);
  FUZZ_ASSERT(again->data_offset == header.size());
  return 0;
}
