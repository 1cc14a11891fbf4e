// File: src/dist/dist_test_env.h
//
// For tests only: the launcher's variables that make this process trainer 0
// (of 1) of a TestCluster's job, as initialize() reads them.
#ifndef TESSERA_SRC_DIST_DIST_TEST_ENV_H_
#define TESSERA_SRC_DIST_DIST_TEST_ENV_H_

#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "src/kvstore/test_cluster.h"

namespace tessera::testing {

class TrainerEnv {
 public:
  // Writes the cluster's ip_config into `dir`.
  TrainerEnv(const kvstore::testing::TestCluster& cluster, const std::string& dir,
             const std::string& part_config) {
    const std::string ip_config = dir + "/ip_config.txt";
    std::ofstream out(ip_config);
    for (const std::string& e : cluster.endpoints()) {
      out << "127.0.0.1 " << e.substr(e.rfind(':') + 1) << "\n";
    }
    vars = {{"TESSERA_JOB_ID", cluster.job()},
            {"TESSERA_JOB_TOKEN", "t"},
            {"TESSERA_JOB_KEY", cluster.key()},
            {"TESSERA_IP_CONFIG", ip_config},
            {"TESSERA_PART_CONFIG", part_config},
            {"TESSERA_NUM_SERVERS", "1"},
            {"TESSERA_MACHINE_ID", "0"},
            {"RANK", "0"},
            {"WORLD_SIZE", "1"}};
  }
  // For InitOptions::getenv (reads `vars` when called).
  std::function<const char*(const char*)> getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
  std::map<std::string, std::string> vars;
};

}  // namespace tessera::testing

#endif  // TESSERA_SRC_DIST_DIST_TEST_ENV_H_
