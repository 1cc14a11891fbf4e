// File: src/base/interrupt.cc
#include "tessera/base/interrupt.h"

#include <atomic>

namespace tessera {
namespace {
std::atomic<InterruptCheck> g_check{nullptr};
}  // namespace

InterruptCheck SetInterruptCheck(InterruptCheck check) { return g_check.exchange(check); }

Status CheckInterrupt() {
  InterruptCheck check = g_check.load(std::memory_order_acquire);
  return check == nullptr ? absl::OkStatus() : check();
}

}  // namespace tessera
