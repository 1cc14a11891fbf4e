#include "src/base/logging.h"

#include "spdlog/sinks/stdout_sinks.h"

namespace tessera {

void InitLogging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("tessera");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  auto parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; treat them as info instead.
  if (parsed == spdlog::level::off && level != "off") parsed = spdlog::level::info;
  spdlog::set_level(parsed);
}

Progress::Progress(std::string step, int64_t total, std::string unit, double interval_s)
    : step_(std::move(step)), total_(total), unit_(std::move(unit)), interval_s_(interval_s) {}

Progress::~Progress() = default;

void Progress::Update(int64_t done) {
  double now = watch_.Seconds();
  if (now - last_report_s_ < interval_s_) return;
  last_report_s_ = now;
  double rate = now > 0 ? done / now : 0;
  if (total_ > 0) {
    spdlog::info("{}: {}/{} {} ({:.0f}%), {:.1f} s, {:.3g} {}/s", step_, done, total_, unit_,
                 100.0 * done / total_, now, rate, unit_);
  } else {
    spdlog::info("{}: {} {}, {:.1f} s", step_, done, unit_, now);
  }
}

double Progress::Done() {
  double elapsed = watch_.Seconds();
  if (!done_) {
    done_ = true;
    spdlog::info("{}: done in {:.2f} s", step_, elapsed);
  }
  return elapsed;
}

void LogLimiter::Warn(std::string message) {
  double now = clock_.Seconds();
  if (now - window_start_s_ < interval_s_) {
    ++suppressed_;
    last_ = std::move(message);
    return;
  }
  Flush();
  spdlog::warn("{}", message);
  window_start_s_ = now;
}

void LogLimiter::Flush(bool now) {
  if (suppressed_ == 0) return;
  double t = clock_.Seconds();
  if (!now && t - window_start_s_ < interval_s_) return;
  try {
    spdlog::warn("{} more like it in {:.0f} s; the last: {}", suppressed_, t - window_start_s_,
                 last_);
  } catch (...) {
    // Out of memory while formatting: the summary is lost, not the process.
  }
  suppressed_ = 0;
  last_.clear();
  window_start_s_ = t;
}

}  // namespace tessera
