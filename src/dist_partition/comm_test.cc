// The collectives of Comm on thread ranks (the in-process implementation).
#include "src/dist_partition/comm.h"

#include "gtest/gtest.h"
#include "src/dist_partition/comm_checks.h"

namespace tessera::dist_partition {
namespace {

void ExpectAllOk(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_TRUE(results[r].ok()) << r << ": " << results[r];
}

TEST(ThreadComm, Collectives) {
  for (int p : {1, 2, 3, 4}) {
    SCOPED_TRACE(p);
    ExpectAllOk(RunThreadRanks(p, [](Comm& comm) {
      RETURN_IF_ERROR(testing::CheckExchange(comm, 0));
      RETURN_IF_ERROR(testing::CheckExchange(comm, 5));
      RETURN_IF_ERROR(testing::CheckReductions(comm));
      return testing::CheckAgree(comm);
    }));
  }
}

}  // namespace
}  // namespace tessera::dist_partition
