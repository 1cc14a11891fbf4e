// File: src/base/logging.h
//
// Logging goes through spdlog (to stderr). Libraries log with spdlog::info /
// warn / error directly; only the programs in tools/ call InitLogging. This
// header also provides Progress, the progress-and-timing reporter that long
// operations (reading, METIS, writing) use so that users can watch them.
#ifndef TESSERA_SRC_BASE_LOGGING_H_
#define TESSERA_SRC_BASE_LOGGING_H_

#include <cstdint>
#include <string>

#include "spdlog/spdlog.h"
#include "tessera/base/time.h"

namespace tessera {

// Sets the format "[HH:MM:SS.mmm] [level] message" and the level ("debug",
// "info", "warn", "error", "off"). Unknown levels fall back to info.
void InitLogging(const std::string& level);

// Reports progress of one long step: at most one line every `interval_s`
// seconds while running, and a final line with the elapsed time on Done().
// Not thread-safe; call from the thread that drives the step.
class Progress {
 public:
  // `total` is the amount of work in `unit`s (0 if unknown).
  Progress(std::string step, int64_t total, std::string unit, double interval_s = 5.0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Records that `done` units are finished (monotone); may print a line.
  void Update(int64_t done);
  // Prints "<step>: done in X s" once; returns the elapsed seconds.
  double Done();
  double Seconds() const { return watch_.Seconds(); }

 private:
  std::string step_;
  int64_t total_;
  std::string unit_;
  double interval_s_;
  double last_report_s_ = 0;
  bool done_ = false;
  Stopwatch watch_;
};

// Warnings that a peer can trigger (a hostile client can trigger millions),
// at most one line per `interval_s`: the first of a window is logged at once,
// later ones are counted and summarised ("N more like it; last: ...") once
// the window is over, by the next Warn or by Flush. Call Flush on a timer so
// that a summary is never held back until the next event. Not thread-safe.
class LogLimiter {
 public:
  explicit LogLimiter(double interval_s = 10) : interval_s_(interval_s) {}

  void Warn(std::string message);
  // Summarises what was held back once the window is over (`now`: at
  // once, e.g. before the process exits). Never throws.
  void Flush(bool now = false);
  uint64_t suppressed() const { return suppressed_; }

 private:
  double interval_s_;
  Stopwatch clock_;
  double window_start_s_ = -1e300;
  uint64_t suppressed_ = 0;
  std::string last_;
};

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_LOGGING_H_
