#include "src/dist_partition/comm.h"

#include <algorithm>
#include <barrier>
#include <thread>

#include "tessera/base/strings.h"

namespace tessera::dist_partition {

Status Agree(Comm& comm, const Status& local) {
  const int32_t code = static_cast<int32_t>(local.code());
  std::vector<int32_t> codes(comm.size());
  RETURN_IF_ERROR(comm.AllGather(&code, sizeof(code), codes.data()));
  auto failed = std::find_if(codes.begin(), codes.end(), [](int32_t c) { return c != 0; });
  if (failed == codes.end()) return absl::OkStatus();
  const int root = static_cast<int>(failed - codes.begin());
  std::string message(comm.rank() == root ? local.message() : "");
  RETURN_IF_ERROR(comm.Broadcast(root, &message));
  return Status(static_cast<absl::StatusCode>(*failed),
                StrCat("rank ", root, " of ", comm.size(), ": ", message));
}

StatusOr<std::vector<int64_t>> AllGatherValue(Comm& comm, int64_t value) {
  std::vector<int64_t> all(comm.size());
  RETURN_IF_ERROR(comm.AllGather(&value, sizeof(value), all.data()));
  return all;
}

StatusOr<int64_t> AllSum(Comm& comm, int64_t value) {
  ASSIGN_OR_RETURN(std::vector<int64_t> all, AllGatherValue(comm, value));
  int64_t sum = 0;
  for (int64_t v : all) sum += v;
  return sum;
}

StatusOr<int64_t> AllMax(Comm& comm, int64_t value) {
  ASSIGN_OR_RETURN(std::vector<int64_t> all, AllGatherValue(comm, value));
  return *std::max_element(all.begin(), all.end());
}

Status AllSum(Comm& comm, std::span<int64_t> values) {
  const size_t n = values.size();
  std::vector<int64_t> all(n * comm.size());
  RETURN_IF_ERROR(
      comm.AllGather(values.data(), static_cast<int64_t>(n * sizeof(int64_t)), all.data()));
  std::fill(values.begin(), values.end(), 0);
  for (int r = 0; r < comm.size(); ++r) {
    for (size_t i = 0; i < n; ++i) values[i] += all[r * n + i];
  }
  return absl::OkStatus();
}

StatusOr<std::vector<std::vector<int64_t>>> AllGatherVectors(Comm& comm,
                                                             std::span<const int64_t> values) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   AllGatherValue(comm, static_cast<int64_t>(values.size())));
  const int64_t most = *std::max_element(sizes.begin(), sizes.end());
  std::vector<int64_t> padded(most, 0), all(most * comm.size());
  std::copy(values.begin(), values.end(), padded.begin());
  RETURN_IF_ERROR(comm.AllGather(padded.data(), most * sizeof(int64_t), all.data()));
  std::vector<std::vector<int64_t>> out(comm.size());
  for (int r = 0; r < comm.size(); ++r) {
    out[r].assign(all.begin() + r * most, all.begin() + r * most + sizes[r]);
  }
  return out;
}

StatusOr<std::vector<int64_t>> ExchangeCounts(Comm& comm, std::span<const int64_t> send_counts) {
  const int p = comm.size();
  if (static_cast<int>(send_counts.size()) != p) {
    return absl::InternalError(
        StrCat("ExchangeCounts: ", send_counts.size(), " counts for ", p, " ranks"));
  }
  std::vector<int64_t> matrix(static_cast<size_t>(p) * p);
  RETURN_IF_ERROR(comm.AllGather(send_counts.data(), p * sizeof(int64_t), matrix.data()));
  std::vector<int64_t> recv(p);
  for (int s = 0; s < p; ++s) recv[s] = matrix[static_cast<size_t>(s) * p + comm.rank()];
  return recv;
}

namespace {

// What the ranks of one ThreadComm group share: each rank posts a pointer,
// all meet at the barrier, read each other's posts, and meet again before
// anyone reuses its buffers.
struct ThreadGroup {
  explicit ThreadGroup(int n) : size(n), barrier(n), posted(n), posted_sizes(n) {}
  int size;
  std::barrier<> barrier;
  std::vector<const void*> posted;
  std::vector<const int64_t*> posted_sizes;
};

class ThreadComm final : public Comm {
 public:
  ThreadComm(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size; }

  Status AllGather(const void* in, int64_t bytes, void* out) override {
    group_.posted[rank_] = in;
    group_.barrier.arrive_and_wait();
    for (int r = 0; r < group_.size; ++r) {
      std::memcpy(static_cast<char*>(out) + r * bytes, group_.posted[r], bytes);
    }
    group_.barrier.arrive_and_wait();
    return absl::OkStatus();
  }

  Status AllToAllV(const void* send, std::span<const int64_t> send_bytes, void* recv,
                   std::span<const int64_t> recv_bytes) override {
    group_.posted[rank_] = send;
    group_.posted_sizes[rank_] = send_bytes.data();
    group_.barrier.arrive_and_wait();
    Status status;
    int64_t at = 0;
    for (int s = 0; s < group_.size; ++s) {
      const int64_t* sizes = group_.posted_sizes[s];
      int64_t offset = 0;
      for (int d = 0; d < rank_; ++d) offset += sizes[d];
      if (sizes[rank_] != recv_bytes[s]) {
        status = absl::InternalError(StrCat("AllToAllV: rank ", s, " sends ", sizes[rank_],
                                            " bytes, rank ", rank_, " expects ", recv_bytes[s]));
        break;
      }
      if (sizes[rank_] > 0) {
        std::memcpy(static_cast<char*>(recv) + at,
                    static_cast<const char*>(group_.posted[s]) + offset, sizes[rank_]);
      }
      at += sizes[rank_];
    }
    group_.barrier.arrive_and_wait();
    return status;
  }

  Status Broadcast(int root, std::string* data) override {
    group_.posted[rank_] = data;
    group_.barrier.arrive_and_wait();
    std::string copy = *static_cast<const std::string*>(group_.posted[root]);
    group_.barrier.arrive_and_wait();
    *data = std::move(copy);
    return absl::OkStatus();
  }

 private:
  ThreadGroup& group_;
  int rank_;
};

}  // namespace

std::vector<Status> RunThreadRanks(int num_ranks, const std::function<Status(Comm&)>& body) {
  ThreadGroup group(num_ranks);
  std::vector<Status> results(num_ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < num_ranks; ++r) {
    threads.emplace_back([&, r] {
      ThreadComm comm(group, r);
      results[r] = body(comm);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace tessera::dist_partition
