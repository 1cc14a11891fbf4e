// File: include/tessera/base/time.h
//
// Stopwatch (elapsed wall time) and Deadline (a point in time that every
// blocking wait in tessera is bounded by). Both use the monotonic clock and are
// cheap value types; neither is thread-safe for concurrent mutation.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_TIME_H_
#define TESSERA_INCLUDE_TESSERA_BASE_TIME_H_

#include <chrono>

namespace tessera {

using Clock = std::chrono::steady_clock;

// Measures wall time since construction or the last Reset().
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void Reset() { start_ = Clock::now(); }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  Clock::time_point start_;
};

// A point in time after which a wait must give up. Deadline::Infinite() never
// expires; it exists for callers that bound the wait by other means.
class Deadline {
 public:
  static Deadline In(Clock::duration timeout) { return Deadline(Clock::now() + timeout); }
  static Deadline InSeconds(double seconds) {
    return In(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  }
  static Deadline Infinite() { return Deadline(Clock::time_point::max()); }

  bool Expired() const { return Clock::now() >= at_; }
  bool IsInfinite() const { return at_ == Clock::time_point::max(); }
  // Time left, zero once expired.
  Clock::duration Remaining() const {
    auto now = Clock::now();
    return now >= at_ ? Clock::duration::zero() : at_ - now;
  }
  // Time left in whole milliseconds, clamped to [0, INT32_MAX] (poll-style APIs).
  int RemainingMillis() const;
  Clock::time_point time_point() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_TIME_H_
