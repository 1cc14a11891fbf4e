// File: src/kvstore/job_client.h
//
// JobClient: a trainer's connection to every server of its job, shared by
// the remote feature store and graph service, and the job's coordinator
// (barriers, leaving). Connect() says hello to every server (waiting up to
// connect_timeout for them to come up), receives the partition book, and
// maps this machine's shared memory if its servers run here.
//
// Every call of the services on it has a deadline (options.call_timeout)
// and fails with an error naming the server when one is dead (no heartbeat
// answers) or does not answer; once any server of the job is dead, every
// call fails at once (Health()), local ones included. Thread-safe.
#ifndef TESSERA_SRC_KVSTORE_JOB_CLIENT_H_
#define TESSERA_SRC_KVSTORE_JOB_CLIENT_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "src/kvstore/coordinator.h"
#include "src/kvstore/shard_map.h"
#include "src/rpc/transport.h"
#include "tessera/base/status.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

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

class JobClient : public Coordinator {
 public:
  static StatusOr<std::shared_ptr<JobClient>> Connect(const KvClientOptions& options);
  ~JobClient() override;  // Says goodbye if Close() was not called.

  const KvClientOptions& options() const { return options_; }
  const PartitionBook& book() const { return book_; }
  const std::string& graph_name() const { return graph_name_; }
  int halo_hops() const { return halo_hops_; }
  rpc::RpcClient& rpc() const { return *rpc_; }
  // This machine's shards, mapped; null when this machine serves no data here.
  ShardMap* local_shards() const { return local_.get(); }

  // OK while every server of the job is alive: once one is dead the job's
  // data is incomplete, so every call fails at once, naming that server.
  Status Health() const;
  // One of machine `machine`'s servers, in turn.
  int PickServer(int machine);
  // OK if a frame of `bytes` (`what`, for the error) fits the servers' limit.
  Status CheckFrameFits(size_t bytes, const std::string& what) const;
  Deadline CallDeadline() const { return Deadline::In(options_.call_timeout); }

  // Waits until all options.num_clients clients called a barrier.
  StatusOr<int64_t> BarrierMax(int64_t value) override;
  // Says goodbye to every server. Idempotent. A goodbye that times out or
  // fails is logged as a warning naming the servers, and Close() still
  // returns OK: ending the client never masks the program's result.
  Status Close() override;

 private:
  explicit JobClient(KvClientOptions options) : options_(std::move(options)) {}

  KvClientOptions options_;
  std::unique_ptr<rpc::RpcClient> rpc_;
  PartitionBook book_;
  std::string graph_name_;
  std::unique_ptr<ShardMap> local_;
  int halo_hops_ = 1;
  // The smallest frame limit of the servers (ServerInfo): larger frames
  // would drop the connection, so they are refused here with a clear error.
  int64_t max_frame_bytes_ = rpc::kDefaultMaxMessageBytes;
  std::atomic<uint64_t> round_robin_{0};
  std::atomic<bool> closed_{false};
  bool connected_ = false;  // Connect() succeeded: goodbyes are due.
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_JOB_CLIENT_H_
