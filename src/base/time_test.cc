#include "tessera/base/time.h"

#include <thread>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(Deadline, ExpiresAfterTimeout) {
  Deadline d = Deadline::In(std::chrono::milliseconds(30));
  EXPECT_FALSE(d.Expired());
  EXPECT_GT(d.RemainingMillis(), 0);
  EXPECT_LE(d.RemainingMillis(), 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_TRUE(d.Expired());
  EXPECT_EQ(d.RemainingMillis(), 0);
  EXPECT_EQ(d.Remaining(), Clock::duration::zero());
}

TEST(Deadline, InfiniteNeverExpires) {
  Deadline d = Deadline::Infinite();
  EXPECT_TRUE(d.IsInfinite());
  EXPECT_FALSE(d.Expired());
  EXPECT_EQ(d.RemainingMillis(), INT32_MAX);
}

TEST(Stopwatch, Measures) {
  Stopwatch w;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(w.Seconds(), 0.019);
  w.Reset();
  EXPECT_LT(w.Seconds(), 0.019);
}

}  // namespace
}  // namespace tessera
