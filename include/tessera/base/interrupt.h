// File: include/tessera/base/interrupt.h
//
// Lets a host program stop long waits when its user asks (Ctrl-C). Every wait
// in tessera that can last longer than a moment (an RPC waiting for answers,
// a loader waiting for its next batch, a barrier, connecting to servers)
// calls CheckInterrupt() at least every 100 ms and, when it returns an error,
// abandons the wait and returns that error (answers that arrive later are
// dropped, as for any abandoned call).
//
// The check is process-wide by nature: a signal is delivered to the process,
// not to one object. The default check never interrupts; the Python module
// installs one that asks the interpreter whether SIGINT arrived.
//
// Thread-safety: SetInterruptCheck and CheckInterrupt may be called from any
// thread. The installed function must be cheap and thread-safe; it is called
// from every thread that waits.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_INTERRUPT_H_
#define TESSERA_INCLUDE_TESSERA_BASE_INTERRUPT_H_

#include "tessera/base/status.h"

namespace tessera {

// Returns OK to keep waiting, or the error the interrupted call returns
// (absl::CancelledError by convention).
using InterruptCheck = Status (*)();

// Installs `check` (nullptr: never interrupt) and returns the previous one.
InterruptCheck SetInterruptCheck(InterruptCheck check);

// The installed check's answer (OK when none is installed).
Status CheckInterrupt();

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_INTERRUPT_H_
