// File: src/launcher/job_env.h
//
// The environment the launcher (or the local runner) gives every trainer
// process, as torchrun does for PyTorch, plus tessera's own variables:
//
//   TESSERA_JOB_ID       job id: scopes shared memory; standalone when unset
//   TESSERA_JOB_TOKEN    secret every request must carry
//   TESSERA_JOB_KEY      the job's CURVE secret key (Z85): the wire is encrypted
//   TESSERA_JOB_ENCRYPTION=off  instead of a key: no encryption (launch --no-encryption)
//   TESSERA_IP_CONFIG    ip_config path
//   TESSERA_PART_CONFIG  partition config path (as seen on this machine)
//   TESSERA_NUM_SERVERS  servers per machine (S)
//   TESSERA_MACHINE_ID   index of this machine in ip_config (after TESSERA_MACHINES)
//   TESSERA_MACHINES     the job's lines of ip_config when it lists spares ("0,2")
//   RANK, WORLD_SIZE     this trainer's global rank, number of trainers
//   LOCAL_RANK           rank among this machine's trainers
//   MASTER_ADDR, MASTER_PORT  c10d TCPStore of the trainers (trainer 0's machine)
//
// Libraries never read the environment: callers pass a getenv-like function.
#ifndef TESSERA_SRC_LAUNCHER_JOB_ENV_H_
#define TESSERA_SRC_LAUNCHER_JOB_ENV_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::launcher {

struct JobEnv {
  std::string job_id;
  std::string token;
  std::string curve_secret_key;  // Empty: encryption off.
  std::string ip_config;
  std::string part_config;
  int num_servers = 1;
  int machine_id = 0;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  int num_samplers = 0;  // Sampler threads per trainer (launch --num-samplers).
  std::string machines;  // TESSERA_MACHINES (SelectMachines); empty: every line.

  std::vector<std::pair<std::string, std::string>> ToVariables() const;
};

using GetEnvFn = std::function<const char*(const char*)>;

// A fresh job token (128 random bits, hex).
std::string RandomToken();

// The variables carrying the job's credentials: TESSERA_JOB_TOKEN, and
// TESSERA_JOB_KEY or TESSERA_JOB_ENCRYPTION=off.
std::vector<std::pair<std::string, std::string>> CredentialVariables(const std::string& token,
                                                                     const std::string& key);
// Reads them (as servers and trainers do); an error names what is missing.
Status ParseCredentials(const GetEnvFn& getenv, std::string* token, std::string* key);

// nullopt when TESSERA_JOB_ID is unset (standalone); an error naming the
// variable when one is present but malformed or inconsistent.
StatusOr<std::optional<JobEnv>> ParseJobEnv(const GetEnvFn& getenv);

// A server's report "lost <client id> <others talking>" (tools/cmd_server.cc,
// after its "ready <port>", on --ready-fd): a client silent for its
// heartbeat timeout, and how many others were heard from meanwhile.
struct LostReport {
  int client = 0;
  int others_talking = 0;
};
std::optional<LostReport> ParseLostReport(std::string_view line);

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_JOB_ENV_H_
