// File: src/dist_partition/mpi_comm.h
//
// MpiSession: the MPI side of a process started by mpirun (with Open MPI) --
// MPI_Init on creation, MPI_Finalize on destruction -- and its Comm over
// MPI_COMM_WORLD. The only mpi.h user besides the PT-Scotch adapter.
//
// A rank that dies (crash, kill) is noticed by mpirun, which stops the other
// ranks and names the dead one; a rank that meets an error reports it through
// Agree (comm.h), so every rank stops with the same message. One session per
// process; use from one thread.
#ifndef TESSERA_SRC_DIST_PARTITION_MPI_COMM_H_
#define TESSERA_SRC_DIST_PARTITION_MPI_COMM_H_

#include <memory>

#include "src/dist_partition/comm.h"
#include "tessera/base/status.h"

namespace tessera::dist_partition {

class MpiSession {
 public:
  // Initialises MPI (once per process; a second call is FailedPrecondition).
  // `piece_bytes`: what one rank sends another per round of AllToAllV.
  static StatusOr<std::unique_ptr<MpiSession>> Init(int* argc, char*** argv,
                                                    int64_t piece_bytes = Comm::kDefaultPieceBytes);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  Comm& world() { return *world_; }

 private:
  explicit MpiSession(int64_t piece_bytes);
  std::unique_ptr<Comm> world_;
};

// True when this process was started by mpirun / mpiexec (Open MPI's or
// another launcher's rank variables are set). Reads the environment, so
// only tools/ call it.
bool LaunchedByMpirun();

}  // namespace tessera::dist_partition

#endif  // TESSERA_SRC_DIST_PARTITION_MPI_COMM_H_
