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
  EXPECT_NE(log.text().find("bad message 0"), std::string::npos);
  EXPECT_EQ(limiter.suppressed(), 19999u);
  limiter.Flush();  // The window is still open: nothing yet.
  EXPECT_EQ(log.CountLines(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  limiter.Flush();  // On a timer, without a new event.
  EXPECT_EQ(log.CountLines(), 2);
  EXPECT_NE(log.text().find("19999 more like it"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("the last: bad message 19999"), std::string::npos) << log.text();
  limiter.Flush();  // Nothing left to say.
  EXPECT_EQ(log.CountLines(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  limiter.Warn("later");  // A new window: logged at once.
  EXPECT_EQ(log.CountLines(), 3);
}

}  // namespace
}  // namespace tessera
