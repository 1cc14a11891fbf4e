// File: src/kvstore/test_cluster.h
//
// For tests only: a job of K machines x S servers running as threads of the
// test process on loopback (port 0), over a partition of Cora made in a
// temporary folder. Servers stop (and unlink their shared memory) when the
// cluster is destroyed, or when `expected_clients` clients came and left.
#ifndef TESSERA_SRC_KVSTORE_TEST_CLUSTER_H_
#define TESSERA_SRC_KVSTORE_TEST_CLUSTER_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/kv_client.h"
#include "src/kvstore/kv_server.h"
#include "src/partition/partition.h"
#include "src/rpc/security.h"
#include "tessera/graph/readers.h"

namespace tessera::kvstore::testing {

// Partitions Cora into `parts` parts under `dir`; returns the config path.
inline std::string PartitionCora(const std::string& dir, int parts) {
  auto graph = ReadGraph(tessera::testing::TestDataDir() + "/cora");
  EXPECT_TRUE(graph.ok()) << graph.status();
  PartitionOptions options;
  options.return_mapping = true;
  auto result = PartitionGraph(*graph, "cora", parts, dir, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->config_path : "";
}

// Cora in `parts` parts, partitioned once per test process under a folder
// removed at exit; the config path.
inline const std::string& CoraPartitions(int parts) {
  static tessera::testing::TempDir dir;
  static std::map<int, std::string> configs;
  auto it = configs.find(parts);
  if (it == configs.end()) {
    it = configs.emplace(parts, PartitionCora(dir / std::to_string(parts), parts)).first;
  }
  return it->second;
}

// What a job over parts `graphs` must answer for a sample: each part's own
// LocalGraph on its seeds, in part order (`weights`: each part's, one per
// owned edge in edge-id order; empty: uniform). A failure is a test failure
// (not an abort: the servers' shared memory must go) with what came so far.
inline sampling::SampledEdges PartsReference(
    const std::vector<std::shared_ptr<const sampling::LocalGraph>>& graphs,
    const std::vector<int64_t>& seeds, const sampling::NeighborOptions& o,
    const std::vector<std::vector<float>>& weights = {}) {
  sampling::SampledEdges all;
  for (size_t p = 0; p < graphs.size(); ++p) {
    std::vector<int64_t> mine;
    for (int64_t s : seeds) {
      if (s >= graphs[p]->node_range().first && s < graphs[p]->node_range().second) {
        mine.push_back(s);
      }
    }
    sampling::NeighborOptions po = o;
    if (!weights.empty()) po.weights = weights[p];
    auto r = graphs[p]->SampleNeighbors(mine, po);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return all;
    }
    all.src.insert(all.src.end(), r->src.begin(), r->src.end());
    all.dst.insert(all.dst.end(), r->dst.begin(), r->dst.end());
    all.eid.insert(all.eid.end(), r->eid.begin(), r->eid.end());
  }
  return all;
}

class TestCluster {
 public:
  TestCluster(const std::string& config, int machines, int servers_per_machine,
              rpc::Millis heartbeat_timeout = rpc::Millis(30000), int expected_clients = 1 << 20,
              int64_t max_message_bytes = rpc::kDefaultMaxMessageBytes)
      : job_(shm::RandomJobId()),
        key_(rpc::NewCurveSecretKey().value()),
        machines_(machines),
        S_(servers_per_machine) {
    for (int m = 0; m < machines; ++m) {
      for (int i = 0; i < S_; ++i) {
        KvServerOptions o{.job_id = job_,
                          .part_config = config,
                          .machine_id = m,
                          .local_index = i,
                          .servers_per_machine = S_,
                          .max_message_bytes = max_message_bytes};
        auto kv = i == 0 ? KvServer::Load(o, stop_) : KvServer::Attach(o);
        EXPECT_TRUE(kv.ok()) << kv.status();
        auto rpc = rpc::RpcServer::Bind({.host = "127.0.0.1",
                                         .token = "t",
                                         .curve_secret_key = key_,
                                         .name = "server " + std::to_string(m * S_ + i),
                                         .heartbeat_timeout = heartbeat_timeout,
                                         .expected_clients = expected_clients,
                                         .max_message_bytes = max_message_bytes});
        EXPECT_TRUE(rpc.ok()) << rpc.status();
        if (!kv.ok() || !rpc.ok()) return;
        auto node = std::make_unique<Node>();
        node->kv = std::move(*kv);
        node->rpc = std::move(*rpc);
        node->kv->set_rpc(node->rpc.get());
        endpoints_.push_back("tcp://127.0.0.1:" + std::to_string(node->rpc->port()));
        Node* n = node.get();
        node->thread = std::thread([this, n] { n->result = n->rpc->Serve(*n->kv, stop_); });
        nodes_.push_back(std::move(node));
      }
    }
  }
  ~TestCluster() {
    stop_ = true;
    for (auto& n : nodes_) n->thread.join();
  }

  KvClientOptions ClientOptions(int client_id, int machine_id, int num_clients = 1) const {
    return {.job_id = job_,
            .token = "t",
            .curve_secret_key = key_,
            .client_id = client_id,
            .machine_id = machine_id,
            .servers = endpoints_,
            .servers_per_machine = S_,
            .num_clients = num_clients,
            .connect_timeout = rpc::Millis(20000)};
  }
  std::unique_ptr<KvClient> Connect(int client_id, int machine_id, int num_clients = 1) const {
    auto c = KvClient::Connect(ClientOptions(client_id, machine_id, num_clients));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  const std::string& job() const { return job_; }
  const std::string& key() const { return key_; }
  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  struct Node {
    std::unique_ptr<KvServer> kv;
    std::unique_ptr<rpc::RpcServer> rpc;
    std::thread thread;
    Status result;
  };
  std::string job_;
  std::string key_;  // The job's CURVE key: the tests run encrypted, as jobs do.
  int machines_, S_;
  std::atomic<bool> stop_{false};
  std::vector<std::string> endpoints_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace tessera::kvstore::testing

#endif  // TESSERA_SRC_KVSTORE_TEST_CLUSTER_H_
