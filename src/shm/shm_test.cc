// File: src/shm/shm_test.cc
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/shm/catalog.h"
#include "src/shm/segment.h"

using ::testing::HasSubstr;

namespace tessera::shm {
namespace {

TEST(SegmentTest, CreateOpenAndUnlinkOnDestruction) {
  std::string job = RandomJobId();
  std::string name = SegmentName(job, "x");
  {
    auto created = SharedSegment::Create(name, 4096);
    ASSERT_TRUE(created.ok()) << created.status();
    std::memcpy(created->data(), "hello", 6);
    auto again = SharedSegment::Create(name, 10);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
    auto opened = SharedSegment::Open(name, /*writable=*/false);
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_EQ(opened->size(), 4096u);
    EXPECT_STREQ(static_cast<const char*>(opened->data()), "hello");
    EXPECT_EQ(ListJobSegments(job).size(), 1u);
    SharedSegment moved = std::move(*created);  // Ownership moves with the object.
    EXPECT_TRUE(moved.owner());
  }
  EXPECT_TRUE(ListJobSegments(job).empty());
  EXPECT_EQ(SharedSegment::Open(name, false).status().code(), absl::StatusCode::kNotFound);
}

TEST(SegmentTest, RemoveJobSegmentsOnlyTouchesThatJob) {
  std::string a = RandomJobId(), b = RandomJobId();
  auto s1 = SharedSegment::Create(SegmentName(a, "1"), 8);
  auto s2 = SharedSegment::Create(SegmentName(a, "2"), 8);
  auto s3 = SharedSegment::Create(SegmentName(b, "1"), 8);
  ASSERT_TRUE(s1.ok() && s2.ok() && s3.ok());
  auto removed = RemoveJobSegments(a);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2);
  EXPECT_EQ(ListJobSegments(b).size(), 1u);
  EXPECT_FALSE(ValidateJobId("../etc").ok());
  EXPECT_FALSE(ValidateJobId("").ok());
}

TEST(CatalogTest, AddFindRemoveAndGeneration) {
  std::string job = RandomJobId();
  auto catalog = Catalog::Create(job, 3);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(Catalog::Create(job, 3).status().code(), absl::StatusCode::kAlreadyExists);
  auto reader = Catalog::Open(job, 3);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(Catalog::Open(job, 4).status().code(), absl::StatusCode::kNotFound);

  uint64_t g0 = reader->generation();
  ArrayInfo info{.name = "node/feat", .dtype = DType::kFloat32, .shape = {10, 4}};
  ASSERT_TRUE(catalog->Add(&info).ok());
  EXPECT_NE(info.id, 0u);
  EXPECT_NE(reader->generation(), g0);
  EXPECT_EQ(catalog->Add(&info).code(), absl::StatusCode::kAlreadyExists);

  auto found = reader->Find("node/feat");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->shape, (std::vector<int64_t>{10, 4}));
  EXPECT_EQ(found->segment, info.segment);
  EXPECT_EQ(found->row_bytes(), 16u);
  EXPECT_EQ(reader->List().size(), 1u);

  ArrayInfo bad{.name = std::string(200, 'x'), .shape = {1}};
  EXPECT_EQ(catalog->Add(&bad).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(catalog->Remove("node/feat").ok());
  EXPECT_EQ(reader->Find("node/feat").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog->Remove("node/feat").code(), absl::StatusCode::kNotFound);
}

// Four processes add 1.0 to the same 8 rows 2000 times each through the
// stripe locks; no update may be lost and no row torn.
TEST(CatalogTest, ConcurrentAddsFromManyProcessesLoseNothing) {
  std::string job = RandomJobId();
  auto catalog = Catalog::Create(job, 0);
  ASSERT_TRUE(catalog.ok());
  ArrayInfo info{.name = "w", .dtype = DType::kFloat32, .shape = {8, 64}};
  ASSERT_TRUE(catalog->Add(&info).ok());
  auto data = SharedSegment::Create(info.segment, info.nbytes());
  ASSERT_TRUE(data.ok());
  constexpr int kProcs = 4, kIters = 2000;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      auto c = Catalog::Open(job, 0);
      auto seg = SharedSegment::Open(info.segment, true);
      if (!c.ok() || !seg.ok()) _exit(3);
      std::vector<float> ones(64, 1.0f), row(64);
      for (int i = 0; i < kIters; ++i) {
        int64_t r = i % 8;
        c->WriteRow(info.id, r, seg->data(), info.row_bytes(), ones.data(), DType::kFloat32, true);
        c->ReadRow(info.id, r, seg->data(), info.row_bytes(), row.data());
        for (float v : row) {
          if (v != row[0]) _exit(4);  // Torn read.
        }
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  const float* values = static_cast<const float*>(data->data());
  for (int i = 0; i < 8 * 64; ++i) {
    ASSERT_EQ(values[i], kProcs * kIters / 8.0f) << "element " << i;
  }
}

// A writer killed while holding a stripe lock must not block others.
TEST(CatalogTest, DeadLockHolderDoesNotBlockOthers) {
  std::string job = RandomJobId();
  auto catalog = Catalog::Create(job, 0);
  ASSERT_TRUE(catalog.ok());
  ArrayInfo info{.name = "w", .dtype = DType::kInt64, .shape = {1, 1}};
  ASSERT_TRUE(catalog->Add(&info).ok());
  auto data = SharedSegment::Create(info.segment, info.nbytes());
  ASSERT_TRUE(data.ok());
  pid_t pid = fork();
  if (pid == 0) {
    // Writes the row in a loop until killed; the kill usually lands while
    // the stripe lock is held.
    auto c = Catalog::Open(job, 0);
    auto seg = SharedSegment::Open(info.segment, true);
    int64_t one = 1;
    for (;;) c->WriteRow(info.id, 0, seg->data(), 8, &one, DType::kInt64, true);
  }
  usleep(20000);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  int64_t one = 1, value = 0;
  catalog->WriteRow(info.id, 0, data->data(), 8, &one, DType::kInt64, true);
  catalog->ReadRow(info.id, 0, data->data(), 8, &value);
  EXPECT_GT(value, 1);
}

// Segments hold their pages from the start: no SIGBUS on first touch.
TEST(SegmentTest, CreateReservesThePages) {
  std::string job = RandomJobId();
  std::string name = SegmentName(job, "r");
  auto created = SharedSegment::Create(name, size_t{1} << 20);
  ASSERT_TRUE(created.ok()) << created.status();
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_GE(static_cast<int64_t>(st.st_blocks) * 512, int64_t{1} << 20);
}

// A segment larger than /dev/shm is refused at once (before any page is
// taken), with the sizes in the message, and leaves no name behind.
TEST(SegmentTest, SegmentLargerThanSharedMemoryIsRefusedClearly) {
  struct statvfs st {};
  ASSERT_EQ(statvfs("/dev/shm", &st), 0);
  uint64_t total = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  std::string job = RandomJobId();
  auto start = std::chrono::steady_clock::now();
  auto created = SharedSegment::Create(SegmentName(job, "big"), 2 * total + 4096);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(created.status().message(), HasSubstr("not enough shared memory"))
      << created.status();
  EXPECT_THAT(created.status().message(), HasSubstr("need ")) << created.status();
  EXPECT_TRUE(ListJobSegments(job).empty());
  // Sizes past what off_t holds, too.
  created = SharedSegment::Create(SegmentName(job, "huge"), std::numeric_limits<size_t>::max());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(ListJobSegments(job).empty());
}

TEST(SegmentTest, SpaceCheckNamesWhatIsNeededAndWhatIsFree) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  EXPECT_TRUE(CheckSharedMemorySpace("x", kGiB, 2 * kGiB, 4 * kGiB).ok());
  Status s = CheckSharedMemorySpace("'node/feat'", 10 * kGiB, kGiB, 64 * kGiB);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "not enough shared memory for 'node/feat': need 10.00 GiB, have 1.00 GiB free in "
            "/dev/shm");
  // tmpfs may be larger than the memory there is: the smaller figure counts.
  s = CheckSharedMemorySpace("x", 10 * kGiB, 64 * kGiB, 2 * kGiB);
  EXPECT_EQ(s.message(),
            "not enough shared memory for x: need 10.00 GiB, have 2.00 GiB of memory available "
            "(64.00 GiB free in /dev/shm)");
}

// Shapes whose byte size wraps around 2^64 (or is negative) saturate and
// are refused by the catalog.
TEST(CatalogTest, ShapesThatOverflowAreRefused) {
  ArrayInfo info{.name = "w", .dtype = DType::kFloat32, .shape = {4, int64_t{1} << 62, 8}};
  EXPECT_EQ(info.row_bytes(), std::numeric_limits<size_t>::max());
  EXPECT_EQ(info.nbytes(), std::numeric_limits<size_t>::max());
  info.shape = {int64_t{1} << 62, 8};
  EXPECT_EQ(info.row_bytes(), 32u);
  EXPECT_EQ(info.nbytes(), std::numeric_limits<size_t>::max());
  info.shape = {4, -1};
  EXPECT_EQ(info.nbytes(), std::numeric_limits<size_t>::max());
  std::string job = RandomJobId();
  auto catalog = Catalog::Create(job, 0);
  ASSERT_TRUE(catalog.ok());
  EXPECT_EQ(catalog->Add(&info).code(), absl::StatusCode::kInvalidArgument);
  info.shape = {4, 3};
  EXPECT_EQ(info.nbytes(), 48u);
  EXPECT_TRUE(catalog->Add(&info).ok());
}

}  // namespace
}  // namespace tessera::shm
