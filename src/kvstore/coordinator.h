// File: src/kvstore/coordinator.h
//
// Coordinator: barriers among a job's trainers, and leaving the job.
// Implementations are thread-safe.
#ifndef TESSERA_SRC_KVSTORE_COORDINATOR_H_
#define TESSERA_SRC_KVSTORE_COORDINATOR_H_

#include <cstdint>

#include "tessera/base/status.h"

namespace tessera::kvstore {

// The job's coordination: barriers among its trainers, and leaving it.
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  // Waits until every trainer of the job called Barrier (or BarrierMax).
  Status Barrier() { return BarrierMax(0).status(); }
  // A barrier that also returns the largest `value` any participant passed.
  virtual StatusOr<int64_t> BarrierMax(int64_t value) = 0;
  // Leaves the job. Idempotent; never masks the program's result.
  virtual Status Close() = 0;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_COORDINATOR_H_
