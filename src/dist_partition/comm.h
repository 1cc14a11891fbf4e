// File: src/dist_partition/comm.h
//
// Comm: the collective operations the distributed partitioner needs, behind a
// narrow interface with two implementations: MPI (mpi_comm.h, the real runs
// under mpirun) and threads in one process (ThreadComm below, for tests and
// for reasoning about the logic without MPI).
//
// Every operation is collective: all ranks call it, in the same order, with
// compatible arguments. A rank that meets an error must still reach the next
// collective; the convention is to end every local step with Agree(), which
// turns one rank's error into the same error on every rank ("rank 2 of 4:
// <message>"), so that all ranks stop together and none waits forever.
//
// Sizes are 64-bit everywhere; the MPI implementation moves data in pieces of
// bounded size (kDefaultPieceBytes per pair of ranks and round by default),
// so no message exceeds MPI's int counts and no staging buffer grows with the
// data.
// A Comm is used by one thread per rank; it is not thread-safe.
#ifndef TESSERA_SRC_DIST_PARTITION_COMM_H_
#define TESSERA_SRC_DIST_PARTITION_COMM_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::dist_partition {

class Comm {
 public:
  // Bytes sent from one rank to another in one round of AllToAllV.
  static constexpr int64_t kDefaultPieceBytes = 16 << 20;

  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every rank contributes `bytes` bytes at `in`; `out` receives
  // size() * bytes bytes, rank 0's first.
  virtual Status AllGather(const void* in, int64_t bytes, void* out) = 0;
  // Rank r sends send_bytes[d] bytes to rank d, packed in `send` by
  // destination (rank 0's first); receives recv_bytes[s] bytes from rank s,
  // packed in `recv` by source. recv_bytes must be what the sources send
  // (ExchangeCounts gives it).
  virtual Status AllToAllV(const void* send, std::span<const int64_t> send_bytes, void* recv,
                           std::span<const int64_t> recv_bytes) = 0;
  // `data` of rank `root` replaces `data` on every rank.
  virtual Status Broadcast(int root, std::string* data) = 0;
  // The implementation's MPI communicator (an MPI_Comm*) for libraries that
  // need one (PT-Scotch); null when there is none.
  virtual void* mpi_comm() { return nullptr; }

  // Bytes a rank packs per round of the steps' exchanges in rounds
  // (packing.h's ExchangeEachRound, LookUp, the arrays' moves): a round's
  // copies are a bounded extra on top of what a step holds. Tests make it
  // small, so that small graphs take many rounds.
  int64_t round_bytes() const { return round_bytes_; }
  void set_round_bytes(int64_t bytes) { round_bytes_ = bytes < 1 ? 1 : bytes; }

 private:
  int64_t round_bytes_ = int64_t{16} << 20;
};

// Every rank's `local`. If any rank's is an error, every rank returns the
// error of the lowest such rank, its message prefixed "rank r of P: " (on
// that rank too), so all ranks stop at the same point.
Status Agree(Comm& comm, const Status& local);

// Sum / max of a value over all ranks (element-wise for spans, in place).
StatusOr<int64_t> AllSum(Comm& comm, int64_t value);
StatusOr<int64_t> AllMax(Comm& comm, int64_t value);
Status AllSum(Comm& comm, std::span<int64_t> values);

// Every rank's value: out[r] = rank r's `value`.
StatusOr<std::vector<int64_t>> AllGatherValue(Comm& comm, int64_t value);

// Every rank's `values` (any number per rank): out[r] = rank r's.
StatusOr<std::vector<std::vector<int64_t>>> AllGatherVectors(Comm& comm,
                                                             std::span<const int64_t> values);

// What every source sends this rank, given what this rank sends every
// destination (counts in any unit).
StatusOr<std::vector<int64_t>> ExchangeCounts(Comm& comm, std::span<const int64_t> send_counts);

// Data received from every rank, packed by source.
template <typename T>
struct Received {
  std::vector<T> data;
  std::vector<int64_t> counts;  // Elements from each source.
};

// AllToAllV of trivially copyable elements: send[ sum(counts[<d]) ... ) goes
// to rank d.
template <typename T>
StatusOr<Received<T>> Exchange(Comm& comm, std::span<const T> send,
                               std::span<const int64_t> counts) {
  static_assert(std::is_trivially_copyable_v<T>);
  Received<T> out;
  ASSIGN_OR_RETURN(out.counts, ExchangeCounts(comm, counts));
  int64_t total = 0;
  for (int64_t c : out.counts) total += c;
  out.data.resize(total);
  std::vector<int64_t> send_bytes(counts.begin(), counts.end()), recv_bytes(out.counts);
  for (int64_t& b : send_bytes) b *= sizeof(T);
  for (int64_t& b : recv_bytes) b *= sizeof(T);
  RETURN_IF_ERROR(comm.AllToAllV(send.data(), send_bytes, out.data.data(), recv_bytes));
  return out;
}

// Runs `body(comm)` on `num_ranks` threads, each with its own in-process
// Comm of that size, and returns every rank's result (rank order). For tests
// and single-machine use without MPI.
std::vector<Status> RunThreadRanks(int num_ranks, const std::function<Status(Comm&)>& body);

}  // namespace tessera::dist_partition

#endif  // TESSERA_SRC_DIST_PARTITION_COMM_H_
