// File: fuzz/ip_config_fuzz.cc
//
// Fuzzes ip_config parsing: the input is the file's text. ParseIpConfig must
// fail with a Status or return machines with IPv4 addresses and ports in
// 1-65535; ToText() of the result must parse back to the same machines, and
// ServerEndpoints and CheckNoPortClash must work on it.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "src/launcher/ip_config.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::launcher;
  std::string text(tessera::fuzz::AsText(data, size));
  auto config = ParseIpConfig(text, "ip_config.txt");
  tessera::fuzz::Report("ParseIpConfig", config.status());
  if (!config.ok()) return 0;
  FUZZ_ASSERT(config->num_machines() > 0);
  for (const MachineAddress& m : config->machines) {
    FUZZ_ASSERT(!m.ip.empty() && m.port >= 1 && m.port <= 65535);
  }
  auto again = ParseIpConfig(config->ToText(), "again");
  FUZZ_ASSERT(again.ok() && again->num_machines() == config->num_machines());
  for (int i = 0; i < config->num_machines(); ++i) {
    FUZZ_ASSERT(again->machines[i].ip == config->machines[i].ip);
    FUZZ_ASSERT(again->machines[i].port == config->machines[i].port);
  }
  for (int servers : {1, 3}) {
    FUZZ_ASSERT(config->ServerEndpoints(servers).size() ==
                static_cast<size_t>(config->num_machines() * servers));
    (void)CheckNoPortClash(*config, servers).ok();
  }
  return 0;
}
