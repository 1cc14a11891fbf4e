#include "src/dist_partition/mpi_comm.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tessera/base/strings.h"

namespace tessera::dist_partition {
namespace {

Status MpiError(int code, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(StrCat(call, " failed: ", std::string(text, length)));
}

#define TESSERA_MPI_CALL(call)                 \
  do {                                         \
    int tessera_mpi_rc_ = (call);              \
    if (tessera_mpi_rc_ != MPI_SUCCESS) {      \
      return MpiError(tessera_mpi_rc_, #call); \
    }                                          \
  } while (0)

class MpiComm final : public Comm {
 public:
  explicit MpiComm(int64_t piece_bytes) : comm_(MPI_COMM_WORLD), piece_(piece_bytes) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void* mpi_comm() override { return &comm_; }

  Status AllGather(const void* in, int64_t bytes, void* out) override {
    // Pieces of piece_ bytes in all (MPI counts are ints).
    const int64_t piece = std::max<int64_t>(1, piece_ / size_);
    std::vector<char> gathered;
    for (int64_t at = 0; at < bytes; at += piece) {
      const int64_t len = std::min<int64_t>(piece, bytes - at);
      gathered.resize(static_cast<size_t>(len) * size_);
      TESSERA_MPI_CALL(MPI_Allgather(static_cast<const char*>(in) + at, static_cast<int>(len),
                                     MPI_BYTE, gathered.data(), static_cast<int>(len), MPI_BYTE,
                                     comm_));
      for (int r = 0; r < size_; ++r) {
        std::memcpy(static_cast<char*>(out) + r * bytes + at, gathered.data() + r * len, len);
      }
    }
    return absl::OkStatus();
  }

  Status AllToAllV(const void* send, std::span<const int64_t> send_bytes, void* recv,
                   std::span<const int64_t> recv_bytes) override {
    std::vector<int64_t> send_at(size_ + 1, 0), recv_at(size_ + 1, 0);
    int64_t most = 0;
    for (int r = 0; r < size_; ++r) {
      send_at[r + 1] = send_at[r] + send_bytes[r];
      recv_at[r + 1] = recv_at[r] + recv_bytes[r];
      if (r != rank_) most = std::max({most, send_bytes[r], recv_bytes[r]});
    }
    if (send_bytes[rank_] != recv_bytes[rank_]) {
      return absl::InternalError("AllToAllV: a rank's bytes to itself disagree");
    }
    if (send_bytes[rank_] > 0) {
      std::memcpy(static_cast<char*>(recv) + recv_at[rank_],
                  static_cast<const char*>(send) + send_at[rank_], send_bytes[rank_]);
    }
    // Rounds: every pair moves at most piece_ bytes per round; every rank
    // takes part in as many rounds as the busiest pair needs.
    int64_t rounds = (most + piece_ - 1) / piece_;
    TESSERA_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, comm_));
    std::vector<MPI_Request> requests;
    for (int64_t round = 0; round < rounds; ++round) {
      requests.clear();
      const int64_t at = round * piece_;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        const int64_t in = std::min<int64_t>(piece_, recv_bytes[r] - at);
        if (in > 0) {
          requests.emplace_back();
          TESSERA_MPI_CALL(MPI_Irecv(static_cast<char*>(recv) + recv_at[r] + at,
                                     static_cast<int>(in), MPI_BYTE, r, 0, comm_,
                                     &requests.back()));
        }
      }
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        const int64_t out = std::min<int64_t>(piece_, send_bytes[r] - at);
        if (out > 0) {
          requests.emplace_back();
          TESSERA_MPI_CALL(MPI_Isend(static_cast<const char*>(send) + send_at[r] + at,
                                     static_cast<int>(out), MPI_BYTE, r, 0, comm_,
                                     &requests.back()));
        }
      }
      TESSERA_MPI_CALL(
          MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    }
    return absl::OkStatus();
  }

  Status Broadcast(int root, std::string* data) override {
    int64_t length = static_cast<int64_t>(data->size());
    TESSERA_MPI_CALL(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm_));
    data->resize(length);
    for (int64_t at = 0; at < length; at += piece_) {
      const int len = static_cast<int>(std::min<int64_t>(piece_, length - at));
      TESSERA_MPI_CALL(MPI_Bcast(data->data() + at, len, MPI_BYTE, root, comm_));
    }
    return absl::OkStatus();
  }

 private:
  MPI_Comm comm_;
  int64_t piece_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

MpiSession::MpiSession(int64_t piece_bytes)
    : world_(std::make_unique<MpiComm>(std::clamp<int64_t>(piece_bytes, 1, int64_t{1} << 30))) {}

StatusOr<std::unique_ptr<MpiSession>> MpiSession::Init(int* argc, char*** argv,
                                                       int64_t piece_bytes) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return absl::FailedPreconditionError("MPI is already initialised");
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return MpiError(rc, "MPI_Init_thread");
  return std::unique_ptr<MpiSession>(new MpiSession(piece_bytes));
}

MpiSession::~MpiSession() {
  world_.reset();
  MPI_Finalize();
}

bool LaunchedByMpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace tessera::dist_partition
