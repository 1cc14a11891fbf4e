// File: src/kvstore/kv_client.h
//
// KvClient: a trainer's connection to the key-value store of a job: every
// server of every machine. Tensors are named by key ("node/feat",
// "edge/weight"); their rows are sharded like the nodes or the edges, and the
// PartitionBook (received from the servers) says which machine owns an id.
//
//   pull: ids are split by owner; requests go to every remote owner at once;
//         the rows of this machine are then copied straight from shared
//         memory (no RPC) while the remote answers travel; remote rows are
//         placed last. Output rows follow the caller's order.
//   graph operations (sampling, degrees, edge endpoints): the same split;
//         remote machines run them on their own part, this machine's part is
//         worked on in this process from shared memory meanwhile.
//   push: the same split; local rows are written in place under the row
//         locks, remote rows are acknowledged by their server before Push
//         returns, so a later pull anywhere sees them.
//
// Every call has a deadline (options.call_timeout) and fails with an error
// naming the server when one is dead (no heartbeat answers) or does not
// answer; once any server of the job is dead, every call fails at once,
// local ones included. Nothing blocks forever. Thread-safe: concurrent calls from several threads
// are fine.
#ifndef TESSERA_SRC_KVSTORE_KV_CLIENT_H_
#define TESSERA_SRC_KVSTORE_KV_CLIENT_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/kvstore/kv_store.h"
#include "src/kvstore/shard_map.h"
#include "src/partition/partition_book.h"
#include "src/rpc/transport.h"

namespace tessera::kv {

struct KvClientOptions {
  std::string job_id;
  std::string token;
  std::string curve_secret_key;  // The job's key (Z85); empty: no encryption.
  int client_id = 0;
  int machine_id = -1;               // The machine this client runs on; -1: none.
  std::vector<std::string> servers;  // Endpoints in server-id order (machine * S + i).
  int servers_per_machine = 1;
  int num_clients = 1;  // Participants of Barrier().
  rpc::Millis call_timeout{30000};
  rpc::Millis connect_timeout{600000};   // Servers may still be loading.
  rpc::Millis barrier_timeout{1800000};  // Dead clients fail barriers sooner.
  rpc::Millis heartbeat_interval{1000};
  rpc::Millis heartbeat_timeout{10000};
  int streams = 0;  // Connections per server and calling thread (rpc::ClientOptions).
};

class KvClient : public KvStore {
 public:
  // Says hello to every server (waiting up to connect_timeout for them to
  // come up) and maps this machine's shared memory if its servers run here.
  static StatusOr<std::unique_ptr<KvClient>> Connect(const KvClientOptions& options);
  ~KvClient() override;  // Says goodbye if Close() was not called.

  const PartitionBook& book() const override { return book_; }
  const std::string& graph_name() const override { return graph_name_; }
  int num_machines() const { return book_.num_partitions(); }
  const KvClientOptions& options() const { return options_; }
  // This machine's shards, mapped; null when this machine serves no data here.
  ShardMap* local_shards() const { return local_.get(); }

  // Metadata of one tensor (cached), or of all of them (fresh).
  StatusOr<TensorMeta> Meta(const std::string& key) override;
  StatusOr<std::vector<TensorMeta>> List() override;

  // Rows `ids` of `key` into `out` (ids.size() * row_bytes bytes).
  Status PullInto(const std::string& key, std::span<const int64_t> ids, void* out) override;
  // Writes (or adds) ids.size() rows from `rows` (dtype and row size of `key`).
  Status Push(const std::string& key, std::span<const int64_t> ids, const void* rows,
              PushMode mode) override;
  Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, const float* grads,
                      const SparseOptimizerSpec& spec) override;
  // Creates a tensor on every machine; returns false if it existed already
  // (with the same dtype and shape: then this is an attach).
  StatusOr<bool> InitData(const InitSpec& spec) override;
  Status DeleteData(const std::string& key) override;
  // Waits until all options.num_clients clients called Barrier.
  Status Barrier() override;
  StatusOr<int64_t> BarrierMax(int64_t value) override;
  // Says goodbye to every server. Idempotent. A goodbye that times out or
  // fails is logged as a warning naming the servers, and Close() still
  // returns OK: ending the client never masks the program's result.
  Status Close() override;

  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const SampleRequest& request) override;
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) override;
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) override;

 private:
  explicit KvClient(KvClientOptions options) : options_(std::move(options)) {}
  int PickServer(int machine);
  // OK while every server of the job is alive: once one is dead the job's
  // data is incomplete, so every call fails at once, naming that server.
  Status JobHealth() const;
  // OK if a frame of `bytes` (`what`, for the error) fits the servers' limit.
  Status CheckFrameFits(size_t bytes, const std::string& what) const;
  Status CheckRowFits(const TensorMeta& meta) const;
  Deadline CallDeadline() const { return Deadline::In(options_.call_timeout); }
  // Ids grouped by owning machine, with their positions in the caller's order.
  struct Split {
    std::vector<std::vector<int64_t>> ids;        // Per machine.
    std::vector<std::vector<int64_t>> positions;  // Per machine.
  };
  // Rows of `meta`'s tensor to their owners: remote machines get requests
  // (fill() sets the method and its arguments; name, ids and rows are added)
  // in pieces of kChunkBytes, this machine's rows go to local() meanwhile.
  using LocalRows = std::function<Status(const Shard& shard, std::span<const int64_t> ids,
                                         const int64_t* positions, int64_t first)>;
  Status ScatterRows(const TensorMeta& meta, std::span<const int64_t> ids, const void* rows,
                     const std::function<void(rpc::Message*)>& fill, const LocalRows& local);
  StatusOr<Split> SplitIds(shm::Policy policy, int type, const std::string& what,
                           std::span<const int64_t> ids) const;
  // A graph operation over ids split by owner: each remote machine gets
  // make_request(part, ids) in pieces of at most kGraphChunk ids, answered
  // to place(piece, response) as they arrive; this machine's ids go to
  // run_local() meanwhile.
  struct Piece {
    int part;
    size_t begin, count;  // Into split.ids[part].
  };
  Status GraphCall(const Split& split,
                   const std::function<rpc::Message(std::span<const int64_t>)>& make_request,
                   const std::function<Status()>& run_local,
                   const std::function<Status(const Piece&, rpc::Message&)>& place);
  int local_part() const { return local_ ? book_.part_id() : -1; }
  StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraph();
  // One machine's ids sorted and deduplicated: ids[u] is wanted at
  // positions[group_start[u] .. group_start[u+1]).
  struct Grouped {
    std::vector<int64_t> ids;
    std::vector<size_t> group_start;
    std::vector<int64_t> positions;
  };
  static Grouped GroupIds(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions,
                          std::pair<int64_t, int64_t> range);

  KvClientOptions options_;
  std::unique_ptr<rpc::RpcClient> rpc_;
  PartitionBook book_;
  std::string graph_name_;
  std::unique_ptr<ShardMap> local_;
  int halo_hops_ = 1;
  // The smallest frame limit of the servers (ServerInfo): larger frames
  // would drop the connection, so they are refused here with a clear error.
  int64_t max_frame_bytes_ = rpc::kDefaultMaxMessageBytes;
  std::mutex graph_mutex_;
  std::shared_ptr<const sampling::LocalGraph> graph_;  // This machine's, built on first use.
  std::mutex meta_mutex_;
  std::map<std::string, TensorMeta> meta_cache_;
  std::atomic<uint64_t> round_robin_{0};
  std::atomic<bool> closed_{false};
  bool connected_ = false;  // Connect() succeeded: goodbyes are due.
};

}  // namespace tessera::kv

#endif  // TESSERA_SRC_KVSTORE_KV_CLIENT_H_
