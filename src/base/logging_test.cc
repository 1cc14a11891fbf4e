#include "src/base/logging.h"

#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"

namespace tessera {
namespace {

// Captures what spdlog's default logger prints while alive.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return stream_.str(); }
  int lines() const {
    std::string t = text();
    return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

TEST(LogLimiter, OneLinePerWindowThenASummaryFlushedOnTime) {
  CapturedLog log;
  LogLimiter limiter(/*interval_s=*/0.2);
  for (int i = 0; i < 20000; ++i) limiter.Warn("bad message " + std::to_string(i));
  EXPECT_EQ(log.lines(), 1);
  EXPECT_NE(log.text().find("bad message 0"), std::string::npos);
  EXPECT_EQ(limiter.suppressed(), 19999u);
  limiter.Flush();  // The window is still open: nothing yet.
  EXPECT_EQ(log.lines(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  limiter.Flush();  // On a timer, without a new event.
  EXPECT_EQ(log.lines(), 2);
  EXPECT_NE(log.text().find("19999 more like it"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("the last: bad message 19999"), std::string::npos) << log.text();
  limiter.Flush();  // Nothing left to say.
  EXPECT_EQ(log.lines(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  limiter.Warn("later");  // A new window: logged at once.
  EXPECT_EQ(log.lines(), 3);
}

}  // namespace
}  // namespace tessera
