// File: include/tessera/dist.h
//
// The trainer-side API, with DGL's names (dgl.distributed):
//
//   auto ctx = tessera::dist::initialize("ip_config.txt");  // standalone when not launched
//   tessera::dist::DistGraph g("products", "parts/products.json");
//   torch::Tensor x = g.ndata("feat")[ids];                  // pull rows by global id
//   tessera::dist::DistTensor h({g.num_nodes(), 16}, torch::kFloat32, "h");
//   h.set(ids, rows);                                        // push rows (acknowledged)
//   g.barrier();
//
// Modes. Launched by `tessera launch` (or the local runner), the environment
// names the job (src/launcher/job_env.h) and initialize() connects to every
// server of the job; a trainer reads its own machine's rows straight from
// shared memory. Without that environment the program is standalone:
// nothing is started, and DistGraph loads a one-part partition in process.
// The same program runs unchanged in both modes.
//
// Errors (a dead server, a deadline, a bad id, a missing tensor) are thrown
// as tessera::dist::Error, whose message names the cause; nothing blocks
// without a deadline. DistGraph and DistTensor are safe to use from several
// threads at once.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_H_
#define TESSERA_INCLUDE_TESSERA_DIST_H_

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/partition/partition_book.h"

namespace tessera {
namespace kv {
class KvStore;
}  // namespace kv

namespace dist {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InitOptions {
  double call_timeout_s = 30;      // Deadline of every pull, push, init and delete.
  double connect_timeout_s = 600;  // Servers may still be loading their partition.
  double barrier_timeout_s = 1800;
  double heartbeat_interval_s = 1;
  double heartbeat_timeout_s = 10;  // A server silent this long is dead.
  // Where the launcher's variables are read from (tests pass their own).
  std::function<const char*(const char*)> getenv;
};

// The process's connection to its job (or its standalone state).
class Context {
 public:
  ~Context();
  bool standalone() const { return standalone_; }
  int rank() const { return rank_; }              // Trainer rank (RANK), 0 standalone.
  int world_size() const { return world_size_; }  // Number of trainers.
  int machine_id() const { return machine_id_; }
  const std::string& part_config() const { return part_config_; }

 private:
  friend std::shared_ptr<Context> initialize(const std::string&, const InitOptions&);
  friend void exit_client();
  friend class DistGraph;
  friend class DistTensor;
  Context() = default;
  std::shared_ptr<kv::KvStore> store_;  // Standalone: set by the first DistGraph.
  bool standalone_ = true;
  int rank_ = 0, world_size_ = 1, machine_id_ = 0;
  std::string part_config_;
};

// Creates the process's context (or returns the existing one). In a launched
// job it connects to every server (waiting up to connect_timeout_s for them)
// and throws Error if it cannot. `ip_config` overrides TESSERA_IP_CONFIG.
std::shared_ptr<Context> initialize(const std::string& ip_config = "",
                                    const InitOptions& options = {});
// Says goodbye to the servers and forgets the context (DistGraphs and
// DistTensors still holding it keep it alive until they go). Idempotent;
// also happens at exit.
void exit_client();

enum class PartPolicy { kAuto, kNode, kEdge };

// How a new DistTensor is filled. Values depend only on the seed and the
// element's global index, never on the number of partitions.
struct Init {
  enum Kind { kZeros, kUniform, kNormal } kind = kZeros;
  double a = 0, b = 1;
  uint64_t seed = 0;
  static Init Zeros() { return {}; }
  static Init Uniform(double low, double high, uint64_t seed = 0) {
    return {kUniform, low, high, seed};
  }
  static Init Normal(double mean, double stddev, uint64_t seed = 0) {
    return {kNormal, mean, stddev, seed};
  }
};

// A tensor whose rows are sharded over the machines like the nodes (or the
// edges) of the graph. Copies share the same tensor.
class DistTensor {
 public:
  // Creates (or, if a tensor of that name, dtype and shape exists, attaches
  // to) a tensor on every machine. shape[0] must be the number of nodes or
  // edges; kAuto picks whichever matches (Error if both or neither do). An
  // empty name makes an anonymous tensor (every trainer must then create its
  // anonymous tensors in the same order). A non-persistent tensor is deleted
  // cluster-wide when the last copy of the handle that created it goes.
  DistTensor(std::vector<int64_t> shape, torch::Dtype dtype, std::string name = "",
             Init init = Init::Zeros(), PartPolicy policy = PartPolicy::kAuto,
             bool persistent = false);

  // Rows `ids` (any integer tensor of global ids), in order: [n, shape[1:]...].
  torch::Tensor operator[](const torch::Tensor& ids) const;
  // Writes rows (dtype and row shape of this tensor); visible to every
  // trainer's later reads once this returns.
  void set(const torch::Tensor& ids, const torch::Tensor& rows) const;
  // Adds rows element-wise (atomic per row against concurrent writers).
  void add(const torch::Tensor& ids, const torch::Tensor& rows) const;

  const std::vector<int64_t>& shape() const;
  torch::Dtype dtype() const;
  const std::string& name() const;
  PartPolicy part_policy() const;

 private:
  friend class DistGraph;
  struct State;
  explicit DistTensor(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

struct AttrScheme {
  std::vector<int64_t> shape;  // Per row.
  torch::Dtype dtype;
};

class DistGraph {
 public:
  // Distributed: the graph the servers serve (Error if its name differs).
  // Standalone: loads `part_config`, which must have exactly one part.
  explicit DistGraph(const std::string& graph_name, const std::string& part_config = "");

  int64_t num_nodes() const;
  int64_t num_edges() const;
  // The node / edge data of the partition, and tensors created at run time.
  DistTensor ndata(const std::string& name) const;
  DistTensor edata(const std::string& name) const;
  std::map<std::string, AttrScheme> node_attr_schemes() const;
  std::map<std::string, AttrScheme> edge_attr_schemes() const;
  const PartitionBook& partition_book() const;
  const std::string& graph_name() const { return graph_name_; }
  // This trainer's rank among all trainers.
  int rank() const;
  // Waits for every trainer (Error if one died or left).
  void barrier() const;

 private:
  DistTensor Data(const std::string& prefix, const std::string& name) const;
  std::map<std::string, AttrScheme> Schemes(const std::string& prefix) const;
  std::shared_ptr<Context> context_;
  std::string graph_name_;
};

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_H_
