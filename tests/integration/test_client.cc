// File: tests/integration/test_client.cc
//
// A KV client process for the runtime tests, started by LocalJob: it finds
// the job through the launcher's environment and runs one workload.
//
//   test_client pull-check                 pull random rows, compare with the files
//   test_client pull-loop <seconds>        pull until an error or the time is up
//   test_client push-add <rounds>          everyone adds 1 to shared rows; rank 0 checks
//   test_client idle                       connect and wait to be killed
// Options: --call-timeout <s>, --idle-ranks <r,r,...> (those ranks run `idle`).
// Exit codes: 0 success, 3 an RPC call failed (message on stderr), 4 wrong data.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "src/base/logging.h"
#include "src/kvstore/kv_client.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/partition/load_partition.h"

using namespace tessera;

namespace {

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "test_client: %s: %s\n", what.c_str(), std::string(s.message()).c_str());
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  InitLogging("warn");
  std::vector<std::string> args(argv + 1, argv + argc);
  double call_timeout = 30;
  std::vector<int> idle_ranks;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--call-timeout" && i + 1 < args.size()) {
      call_timeout = std::atof(args[++i].c_str());
    } else if (args[i] == "--idle-ranks" && i + 1 < args.size()) {
      for (std::string_view r : SplitString(args[++i], ','))
        idle_ranks.push_back(std::atoi(std::string(r).c_str()));
    } else {
      positional.push_back(args[i]);
    }
  }
  if (positional.empty()) return 2;
  auto env = launcher::ParseJobEnv([](const char* n) { return std::getenv(n); });
  if (!env.ok() || !env->has_value()) return Fail("environment", env.status());
  const launcher::JobEnv& job = **env;
  auto ip = launcher::ReadIpConfig(job.ip_config);
  if (!ip.ok()) return Fail("ip_config", ip.status());
  kvstore::KvClientOptions options{
      .job_id = job.job_id,
      .token = job.token,
      .curve_secret_key = job.curve_secret_key,
      .client_id = job.rank,
      .machine_id = job.machine_id,
      .servers = ip->ServerEndpoints(job.num_servers),
      .servers_per_machine = job.num_servers,
      .num_clients = job.world_size,
      .call_timeout = rpc::Millis(static_cast<int64_t>(call_timeout * 1000)),
      .connect_timeout = rpc::Millis(60000)};
  auto client = kvstore::KvClient::Connect(options);
  if (!client.ok()) return Fail("connect", client.status());
  kvstore::KvClient& kv = **client;
  std::string mode = positional[0];
  for (int r : idle_ranks) {
    if (r == job.rank) mode = "idle";
  }
  std::mt19937_64 rng(job.rank + 1);
  int64_t n = kv.book().num_nodes();

  if (mode == "idle") {
    std::printf("idle\n");
    std::fflush(stdout);
    pause();
    return 0;
  }
  if (mode == "pull-check") {
    auto meta = kv.features().Meta("node/feat");
    if (!meta.ok()) return Fail("meta", meta.status());
    int64_t cols = meta->shape[1];
    std::vector<std::unique_ptr<LocalPartition>> parts;
    for (int p = 0; p < kv.num_machines(); ++p) {
      auto part = LoadPartition(job.part_config, p);
      if (!part.ok()) return Fail("load", part.status());
      parts.push_back(std::make_unique<LocalPartition>(std::move(*part)));
    }
    for (int round = 0; round < 20; ++round) {
      std::vector<int64_t> ids(500);
      for (int64_t& id : ids) id = static_cast<int64_t>(rng() % n);
      std::vector<float> out(ids.size() * cols);
      if (Status s =
              kv.features().PullInto("node/feat", ids, kvstore::RowsOf<float>(cols), out.data());
          !s.ok())
        return Fail("pull", s);
      for (size_t i = 0; i < ids.size(); ++i) {
        int p = kv.book().NodeOwner(ids[i]);
        const Array& feat = parts[p]->node_data.at("feat");
        int64_t row = ids[i] - kv.book().NodeRange(p).first;
        if (std::memcmp(out.data() + i * cols,
                        static_cast<const char*>(feat.data()) + row * feat.row_bytes(),
                        feat.row_bytes()) != 0) {
          std::fprintf(stderr, "test_client: row of node %ld differs\n", static_cast<long>(ids[i]));
          return 4;
        }
      }
    }
    if (Status s = kv.job().Barrier(); !s.ok()) return Fail("barrier", s);
    return kv.job().Close().ok() ? 0 : 3;
  }
  if (mode == "pull-loop") {
    double seconds = positional.size() > 1 ? std::atof(positional[1].c_str()) : 5;
    Stopwatch watch;
    std::vector<int64_t> ids(1000);
    std::vector<float> out;
    int64_t pulls = 0;
    while (watch.Seconds() < seconds) {
      for (int64_t& id : ids) id = static_cast<int64_t>(rng() % n);
      out.resize(ids.size() * 1433);
      Stopwatch call;
      if (Status s =
              kv.features().PullInto("node/feat", ids, kvstore::RowsOf<float>(1433), out.data());
          !s.ok()) {
        std::fprintf(stderr,
                     "after %ld pulls, a call failed after %.2f s: ", static_cast<long>(pulls),
                     call.Seconds());
        return Fail("pull", s);
      }
      ++pulls;
    }
    std::printf("pulls %ld\n", static_cast<long>(pulls));
    return kv.job().Close().ok() ? 0 : 3;
  }
  if (mode == "push-add") {
    int rounds = positional.size() > 1 ? std::atoi(positional[1].c_str()) : 100;
    auto created =
        kv.features().InitData({.name = "acc", .dtype = DType::kFloat64, .shape = {n, 4}});
    if (!created.ok()) return Fail("init_data", created.status());
    if (Status s = kv.job().Barrier(); !s.ok()) return Fail("barrier", s);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 64; ++i) ids.push_back((i * 7919) % n);
    std::vector<double> ones(ids.size() * 4, 1.0);
    for (int r = 0; r < rounds; ++r) {
      if (Status s = kv.features().Push("node/acc", ids, kvstore::RowsOf<double>(4), ones.data(),
                                        kvstore::PushMode::kAdd);
          !s.ok()) {
        return Fail("push", s);
      }
    }
    if (Status s = kv.job().Barrier(); !s.ok()) return Fail("barrier", s);
    if (job.rank == 0) {
      std::vector<double> out(ids.size() * 4);
      if (Status s =
              kv.features().PullInto("node/acc", ids, kvstore::RowsOf<double>(4), out.data());
          !s.ok())
        return Fail("pull", s);
      for (double v : out) {
        if (v != static_cast<double>(rounds) * job.world_size) {
          std::fprintf(stderr, "test_client: row holds %f, expected %d\n", v,
                       rounds * job.world_size);
          return 4;
        }
      }
    }
    if (Status s = kv.job().Barrier(); !s.ok()) return Fail("barrier", s);
    return kv.job().Close().ok() ? 0 : 3;
  }
  return 2;
}
