// File: src/launcher/job_env.cc
#include "src/launcher/job_env.h"

#include <cstdint>
#include <random>

#include "fmt/format.h"
#include "src/rpc/security.h"
#include "tessera/base/strings.h"

namespace tessera::launcher {

std::optional<LostReport> ParseLostReport(std::string_view line) {
  auto words = SplitString(std::string(line), ' ');
  int64_t client = -1, talking = -1;
  if (words.size() != 3 || words[0] != "lost" || !ParseInt64(words[1], &client) ||
      !ParseInt64(words[2], &talking) || client < 0 || client > INT32_MAX || talking < 0 ||
      talking > INT32_MAX) {
    return std::nullopt;
  }
  return LostReport{static_cast<int>(client), static_cast<int>(talking)};
}

std::string RandomToken() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

std::vector<std::pair<std::string, std::string>> CredentialVariables(const std::string& token,
                                                                     const std::string& key) {
  if (key.empty()) return {{"TESSERA_JOB_TOKEN", token}, {"TESSERA_JOB_ENCRYPTION", "off"}};
  return {{"TESSERA_JOB_TOKEN", token}, {"TESSERA_JOB_KEY", key}};
}

Status ParseCredentials(const GetEnvFn& getenv, std::string* token, std::string* key) {
  const char* t = getenv("TESSERA_JOB_TOKEN");
  if (t == nullptr || *t == '\0') {
    return absl::InvalidArgumentError(
        "TESSERA_JOB_TOKEN is not set: start job processes with `tessera launch`");
  }
  *token = t;
  const char* k = getenv("TESSERA_JOB_KEY");
  const char* encryption = getenv("TESSERA_JOB_ENCRYPTION");
  bool off = encryption != nullptr && std::string_view(encryption) == "off";
  if (encryption != nullptr && *encryption != '\0' && !off) {
    return absl::InvalidArgumentError(fmt::format(
        "TESSERA_JOB_ENCRYPTION='{}': the only value is 'off' (unset: encrypted)", encryption));
  }
  if (off) {
    if (k != nullptr && *k != '\0') {
      return absl::InvalidArgumentError(
          "both TESSERA_JOB_KEY and TESSERA_JOB_ENCRYPTION=off are set: choose one");
    }
    key->clear();
    return absl::OkStatus();
  }
  if (k == nullptr || *k == '\0') {
    return absl::InvalidArgumentError(
        "TESSERA_JOB_KEY is not set: start job processes with `tessera launch` (which makes the "
        "job's key), or set TESSERA_JOB_ENCRYPTION=off for a job without encryption");
  }
  RETURN_IF_ERROR(rpc::ValidateCurveSecretKey(k, "TESSERA_JOB_KEY"));
  *key = k;
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> JobEnv::ToVariables() const {
  std::vector<std::pair<std::string, std::string>> vars = {{"TESSERA_JOB_ID", job_id}};
  for (auto& v : CredentialVariables(token, curve_secret_key)) vars.push_back(std::move(v));
  std::vector<std::pair<std::string, std::string>> rest = {
      {"TESSERA_IP_CONFIG", ip_config},
      {"TESSERA_PART_CONFIG", part_config},
      {"TESSERA_NUM_SERVERS", std::to_string(num_servers)},
      {"TESSERA_MACHINE_ID", std::to_string(machine_id)},
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world_size)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"MASTER_ADDR", master_addr},
      {"MASTER_PORT", std::to_string(master_port)},
      {"TESSERA_NUM_SAMPLERS", std::to_string(num_samplers)}};
  for (auto& v : rest) vars.push_back(std::move(v));
  if (!machines.empty()) vars.emplace_back("TESSERA_MACHINES", machines);
  return vars;
}

StatusOr<std::optional<JobEnv>> ParseJobEnv(const GetEnvFn& getenv) {
  const char* job = getenv("TESSERA_JOB_ID");
  if (job == nullptr || *job == '\0') return std::optional<JobEnv>();
  JobEnv env;
  env.job_id = job;
  auto text = [&](const char* name, std::string* out, bool required) -> Status {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') {
      if (required) {
        return absl::InvalidArgumentError(
            fmt::format("{} is set but {} is not: start trainers with `tessera launch`",
                        "TESSERA_JOB_ID", name));
      }
      return absl::OkStatus();
    }
    *out = v;
    return absl::OkStatus();
  };
  auto number = [&](const char* name, int* out, int min, bool required) -> Status {
    std::string s;
    RETURN_IF_ERROR(text(name, &s, required));
    if (s.empty()) return absl::OkStatus();
    int64_t v = 0;
    if (!ParseInt64(s, &v) || v < min || v > (1 << 30)) {
      return absl::InvalidArgumentError(
          fmt::format("environment variable {}='{}' is not an integer >= {}", name, s, min));
    }
    *out = static_cast<int>(v);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ParseCredentials(getenv, &env.token, &env.curve_secret_key));
  RETURN_IF_ERROR(text("TESSERA_IP_CONFIG", &env.ip_config, true));
  RETURN_IF_ERROR(text("TESSERA_PART_CONFIG", &env.part_config, false));
  RETURN_IF_ERROR(number("TESSERA_NUM_SERVERS", &env.num_servers, 1, false));
  RETURN_IF_ERROR(number("TESSERA_MACHINE_ID", &env.machine_id, 0, true));
  RETURN_IF_ERROR(number("RANK", &env.rank, 0, true));
  RETURN_IF_ERROR(number("WORLD_SIZE", &env.world_size, 1, true));
  RETURN_IF_ERROR(number("LOCAL_RANK", &env.local_rank, 0, false));
  RETURN_IF_ERROR(text("MASTER_ADDR", &env.master_addr, false));
  RETURN_IF_ERROR(number("MASTER_PORT", &env.master_port, 0, false));
  if (env.master_port > 65535) {
    return absl::InvalidArgumentError(fmt::format(
        "environment variable MASTER_PORT={} is not a port (1-65535)", env.master_port));
  }
  RETURN_IF_ERROR(number("TESSERA_NUM_SAMPLERS", &env.num_samplers, 0, false));
  RETURN_IF_ERROR(text("TESSERA_MACHINES", &env.machines, false));
  if (env.rank >= env.world_size) {
    return absl::InvalidArgumentError(
        fmt::format("RANK={} is not below WORLD_SIZE={}", env.rank, env.world_size));
  }
  return std::optional<JobEnv>(std::move(env));
}

}  // namespace tessera::launcher
