// File: include/tessera/dist/context.h
//
// The process's connection to its job (dgl.distributed.initialize), the
// error type every call of the trainer API throws, and barriers.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_CONTEXT_H_
#define TESSERA_INCLUDE_TESSERA_DIST_CONTEXT_H_

#include <torch/types.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace tessera {
namespace kvstore {
class Services;
}  // namespace kvstore

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
  // Keep freed memory mapped (src/base/resource.h): mini-batches then reuse
  // pages instead of faulting in new ones, measured 1.5x faster sampling.
  bool retain_freed_memory = true;
  // Standalone: raise LibTorch's intra-op threads to the cores this process
  // may use, unless OMP_NUM_THREADS is set (false: leave them as they are).
  bool choose_threads = true;
};

// The process's connection to its job (or its standalone state).
class Context {
 public:
  ~Context();
  bool standalone() const { return standalone_; }
  int rank() const { return rank_; }              // Trainer rank (RANK), 0 standalone.
  int world_size() const { return world_size_; }  // Number of trainers.
  int machine_id() const { return machine_id_; }
  // Sampler threads a loader gets by default: the launcher's --num-samplers
  // (0, DGL's "no sampler processes": one per 4 cores of the trainer's
  // share, its compute threads but at most the usable cores over the
  // machine's trainers; none below 2), or standalone a quarter of the usable
  // cores (at least one on 2 or more).
  int num_samplers() const { return num_samplers_; }
  const std::string& part_config() const { return part_config_; }
  // The trainers' c10d rendezvous (MASTER_ADDR, MASTER_PORT) and this
  // machine's address in ip_config (what Gloo binds to).
  const std::string& master_addr() const { return master_addr_; }
  int master_port() const { return master_port_; }
  const std::string& host_address() const { return host_address_; }
  const InitOptions& options() const { return options_; }

 private:
  friend std::shared_ptr<Context> initialize(const std::string&, const InitOptions&);
  friend void exit_client();
  friend class DistGraph;
  friend class DistTensor;
  friend struct ContextAccess;  // The loaders (dist.cc).
  Context() = default;
  std::shared_ptr<kvstore::Services> store_;  // Standalone: set by the first DistGraph.
  bool standalone_ = true;
  int rank_ = 0, world_size_ = 1, machine_id_ = 0, num_samplers_ = 0;
  std::string part_config_;
  std::string master_addr_ = "127.0.0.1", host_address_ = "127.0.0.1";
  int master_port_ = 0;
  InitOptions options_;
};

// Creates the process's context (or returns the existing one). In a launched
// job it connects to every server (waiting up to connect_timeout_s for them)
// and throws Error if it cannot. `ip_config` overrides TESSERA_IP_CONFIG.
std::shared_ptr<Context> initialize(const std::string& ip_config = "",
                                    const InitOptions& options = {});
// Says goodbye to the servers and forgets the context (DistGraphs and
// DistTensors still holding it keep it alive until they go). Idempotent;
// also happens at exit. Never throws: a goodbye a server does not answer in
// time (a loaded or stopped server) is logged as a warning.
void exit_client();

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_CONTEXT_H_
