// File: src/base/logging_test.cc
#include "src/base/logging.h"

#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/test_util.h"

namespace tessera {
namespace {

TEST(LogLimiter, OneLinePerWindowThenASummaryFlushedOnTime) {
  testing::CapturedLog log;
  LogLimiter limiter(/*interval_s=*/2);  // The burst takes milliseconds.
  for (int i = 0; i < 20000; ++i) limiter.Warn("bad message " + std::to_string(i));
  EXPECT_EQ(log.CountLines(), 1);
  EXPECT_THAT(log.text(), HasSubstr("bad message 0"));
  EXPECT_EQ(limiter.suppressed(), 19999u);
  limiter.Flush();  // The window is still open: nothing yet.
  EXPECT_EQ(log.CountLines(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  limiter.Flush();  // On a timer, without a new event.
  EXPECT_EQ(log.CountLines(), 2);
  EXPECT_THAT(log.text(), HasSubstr("19999 more like it")) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("the last: bad message 19999")) << log.text();
  limiter.Flush();  // Nothing left to say.
  EXPECT_EQ(log.CountLines(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  limiter.Warn("later");  // A new window: logged at once.
  EXPECT_EQ(log.CountLines(), 3);
}

}  // namespace
}  // namespace tessera
