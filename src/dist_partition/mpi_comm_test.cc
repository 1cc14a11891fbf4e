// The collectives of the MPI Comm, run by mpirun on every rank
// (CTest: mpi_comm_np1, _np2, _np4). Pieces of 1000 bytes make every
// exchange take many rounds.
#include "src/dist_partition/mpi_comm.h"

#include "gtest/gtest.h"
#include "src/dist_partition/comm_checks.h"

namespace tessera::dist_partition {
namespace {

Comm* world = nullptr;

TEST(MpiComm, Collectives) {
  EXPECT_TRUE(testing::CheckExchange(*world, 0).ok());
  Status st = testing::CheckExchange(*world, 777);  // 6 KB to 100 KB per pair.
  EXPECT_TRUE(st.ok()) << st;
  st = testing::CheckReductions(*world);
  EXPECT_TRUE(st.ok()) << st;
  st = testing::CheckAgree(*world);
  EXPECT_TRUE(st.ok()) << st;
}

}  // namespace
}  // namespace tessera::dist_partition

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto session = tessera::dist_partition::MpiSession::Init(&argc, &argv, /*piece_bytes=*/1000);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  tessera::dist_partition::world = &(*session)->world();
  return RUN_ALL_TESTS();
}
