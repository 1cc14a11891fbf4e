// File: src/kvstore/kv_server.h
//
// KvServer: the request handler of a `tessera server` process. Machine m of a
// job serves partition m. Its main server (local index 0) loads the partition
// into shared memory (graph arrays as "graph/<name>", node data as
// "node/<name>", edge data as "edge/<name>") and publishes them in the
// machine's catalog; the other servers of the machine attach to the same
// segments, so any of them can answer any request.
//
// Requests: HELLO (-> ServerInfo), PULL and PUSH of rows by global id (ids
// must belong to this machine; pushes hold the row locks, so concurrent pushes
// from every server and local client of the machine never mix rows), INIT_DATA
// / DELETE_DATA (main servers), LIST_DATA, BARRIER (global server 0 only),
// and the graph operations SAMPLE, IN_DEGREES, OUT_DEGREES and FIND_EDGES on
// the nodes and edges of this machine's partition.
// Every argument is validated; a bad one is an error response, and so is a
// request whose answer would exceed options.max_response_bytes. No request
// throws out of Handle: an exception (std::bad_alloc included) becomes an
// error response.
//
// Not thread-safe: driven by the one thread that runs RpcServer::Serve.
#ifndef TESSERA_SRC_KVSTORE_KV_SERVER_H_
#define TESSERA_SRC_KVSTORE_KV_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/kvstore/feature_store.h"
#include "src/kvstore/graph_service.h"
#include "src/kvstore/shard_map.h"
#include "src/rpc/transport.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

struct KvServerOptions {
  std::string job_id;
  std::string part_config;  // Partition config (JSON) path.
  int machine_id = 0;       // = partition served.
  int local_index = 0;      // 0: the main server, which loads the data.
  int servers_per_machine = 1;
  // Clients of the whole job (0: unknown). Barriers of more are refused.
  int num_clients = 0;
  // Largest answer (and largest rows payload of a push) one request may
  // cause, in bytes: larger requests are refused with ResourceExhausted
  // naming the sizes. Clients send 1 MiB / 4096-seed pieces.
  size_t max_response_bytes = size_t{256} << 20;
  // The transport's frame limit (--max-message-bytes), told to clients so
  // that they refuse to send larger frames with a clear error.
  int64_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
};

class KvServer : public rpc::Service {
 public:
  // Main server: loads the partition into shared memory. Returns Cancelled if
  // `cancel` becomes true meanwhile (everything created is removed again).
  static StatusOr<std::unique_ptr<KvServer>> Load(const KvServerOptions& options,
                                                  const std::atomic<bool>& cancel);
  // Backup server: attaches to the main server's catalog when first needed.
  static StatusOr<std::unique_ptr<KvServer>> Attach(const KvServerOptions& options);
  ~KvServer() override;

  // The server must know its RpcServer to answer barriers late.
  void set_rpc(rpc::RpcServer* rpc) { rpc_ = rpc; }
  // Called with OnClientLostSettled's arguments: `tessera server` tells its
  // launcher, which stops a job whose trainer is alive but silent while
  // others work.
  using LostClient = std::function<void(int client_id, int others_talking)>;
  void set_on_lost_client(LostClient f) { on_lost_client_ = std::move(f); }

  std::optional<rpc::Message> Handle(const rpc::Peer& peer, rpc::Message& request) override;
  void OnClientGone(int client_id, bool lost) override;
  void OnClientLostSettled(int client_id, int others_talking) override {
    if (on_lost_client_) on_lost_client_(client_id, others_talking);
  }
  void FailBarrier(const std::string& why);

  int server_id() const {
    return options_.machine_id * options_.servers_per_machine + options_.local_index;
  }

 private:
  KvServer(KvServerOptions options, PartitionBook book, std::string graph_name, int halo_hops);
  Status EnsureCatalog();
  // Requests are served by handlers registered per method by each service
  // (kv_server.cc: the job's; kv_server_features.cc, kv_server_graph.cc).
  // A handler's nullopt means the answer comes later (barriers).
  using Reply = StatusOr<std::optional<rpc::Message>>;
  using Handler = std::function<Reply(const rpc::Peer& peer, rpc::Message& request)>;
  void On(wire::Method method, Handler handler) { handlers_[method] = std::move(handler); }
  void RegisterJobHandlers();
  void RegisterFeatureHandlers();
  void RegisterGraphHandlers();
  std::optional<rpc::Message> Dispatch(const rpc::Peer& peer, rpc::Message& request);
  // ResourceExhausted unless `count` items of `item_bytes` bytes stay within
  // options_.max_response_bytes.
  Status CheckSize(std::string_view what, uint64_t count, uint64_t item_bytes) const;
  StatusOr<rpc::Message> Hello(const rpc::Message& request);
  StatusOr<rpc::Message> Pull(const rpc::Message& request);
  StatusOr<rpc::Message> Push(const rpc::Message& request);
  StatusOr<rpc::Message> SparseUpdate(const rpc::Message& request);
  StatusOr<rpc::Message> InitData(const rpc::Message& request);
  StatusOr<rpc::Message> DeleteData(const rpc::Message& request);
  StatusOr<rpc::Message> ListData(const rpc::Message& request);
  StatusOr<rpc::Message> Sample(const rpc::Message& request);
  StatusOr<rpc::Message> Degrees(const rpc::Message& request);
  StatusOr<rpc::Message> FindEdges(const rpc::Message& request);
  StatusOr<const sampling::LocalGraph*> Graph();
  // ResourceExhausted if sampling `seeds` may answer more than the limit.
  Status CheckSampleSize(const sampling::LocalGraph& graph, std::span<const int64_t> seeds,
                         const SampleRequest& sample) const;
  std::optional<rpc::Message> Barrier(const rpc::Peer& peer, const rpc::Message& request);
  // Local rows of `ids` (global ids of `shard`'s policy); error if any id is
  // not owned by this machine.
  StatusOr<std::vector<int64_t>> ToLocalRows(const Shard& shard, const rpc::WireArray& ids) const;

  KvServerOptions options_;
  PartitionBook book_;
  std::string graph_name_;
  int halo_hops_ = 1;
  std::unique_ptr<ShardMap> shards_;
  std::shared_ptr<const sampling::LocalGraph> graph_;  // Built on first use.
  std::map<uint64_t, shm::SharedSegment> owned_;       // Segments this server created.
  rpc::RpcServer* rpc_ = nullptr;
  std::map<int, Handler> handlers_;  // By wire::Method.
  std::vector<uint64_t> seed_bits_;  // Over the owned nodes, clear between requests.

  std::vector<std::pair<rpc::Peer, wire::Header>> barrier_;  // Waiting, in arrival order.
  std::set<int> active_clients_;                             // Said hello, not gone.
  std::set<int> seen_clients_;                               // Ever said hello.
  std::string last_departure_;  // "client 3 has left", for barrier errors.
  LostClient on_lost_client_;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_KV_SERVER_H_
