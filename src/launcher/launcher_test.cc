// File: src/launcher/launcher_test.cc
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/launcher/env_var.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "src/launcher/remote.h"

namespace tessera::launcher {
namespace {

TEST(IpConfigTest, ParsesDglFormat) {
  auto c =
      ParseIpConfig("# cluster\n10.0.0.1\n\n10.0.0.2 31000\n  127.0.0.1   40000  \n", "ip.txt");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->num_machines(), 3);
  EXPECT_EQ(c->machines[0].port, kDefaultPort);
  EXPECT_EQ(c->machines[1].port, 31000);
  EXPECT_EQ(c->ServerEndpoints(2),
            (std::vector<std::string>{"tcp://10.0.0.1:30050", "tcp://10.0.0.1:30051",
                                      "tcp://10.0.0.2:31000", "tcp://10.0.0.2:31001",
                                      "tcp://127.0.0.1:40000", "tcp://127.0.0.1:40001"}));
}

TEST(IpConfigTest, ErrorsNameTheLine) {
  auto bad = ParseIpConfig("10.0.0.1\nhost-a 1\n", "ip.txt");
  EXPECT_THAT(bad.status().message(), HasSubstr("ip.txt:2"));
  EXPECT_FALSE(ParseIpConfig("10.0.0.1 70000\n", "ip.txt").ok());
  EXPECT_FALSE(ParseIpConfig("10.0.0.1 1 2\n", "ip.txt").ok());
  EXPECT_FALSE(ParseIpConfig("\n# nothing\n", "ip.txt").ok());
  auto clash = ParseIpConfig("127.0.0.1 5000\n127.0.0.1 5001\n", "ip.txt");
  EXPECT_TRUE(CheckNoPortClash(*clash, 1).ok());
  EXPECT_FALSE(CheckNoPortClash(*clash, 2).ok());
}

TEST(IpConfigTest, SelectsTheJobsMachinesAmongSpares) {
  auto all = ParseIpConfig("10.0.0.1\n10.0.0.2\n10.0.0.3 31000\n", "ip.txt");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(SelectMachines(*all, "")->num_machines(), 3);
  auto chosen = SelectMachines(*all, "0,2");
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  ASSERT_EQ(chosen->num_machines(), 2);
  EXPECT_EQ(chosen->machines[1].ip, "10.0.0.3");
  EXPECT_EQ(chosen->machines[1].port, 31000);
  for (const char* bad : {"0,3", "1,1", "x", "-1", "0,,1"}) {
    auto r = SelectMachines(*all, bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("below 3")) << r.status();
  }
}

TEST(IpConfigTest, ProbesConsecutiveFreePortsBelowTheEphemeralRange) {
  auto port = ProbeFreePortRange("127.0.0.1", 3);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  // Outside the ports the kernel hands to connections and to bind(0).
  auto [low, high] = EphemeralPortRange();
  EXPECT_LE(*port + 3, low) << "ephemeral range " << low << "-" << high;
  // Each of the three can be bound now.
  for (int i = 0; i < 3; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(*port + i));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << *port + i;
    close(fd);
  }
  EXPECT_FALSE(ProbeFreePortRange("127.0.0.1", 0).ok());
}

TEST(JobEnvTest, StandaloneWhenUnsetAndStrictWhenSet) {
  std::map<std::string, std::string> vars;
  auto getenv = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  auto none = ParseJobEnv(getenv);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  JobEnv env{.job_id = "j1",
             .token = "t",
             .ip_config = "ip",
             .num_servers = 2,
             .machine_id = 1,
             .rank = 3,
             .world_size = 4};
  for (auto& [k, v] : env.ToVariables()) vars[k] = v;
  auto parsed = ParseJobEnv(getenv);
  ASSERT_TRUE(parsed.ok() && parsed->has_value());
  EXPECT_EQ((*parsed)->rank, 3);
  EXPECT_EQ((*parsed)->num_servers, 2);
  EXPECT_EQ((*parsed)->machines, "");  // No spares: TESSERA_MACHINES is not set.
  EXPECT_EQ(vars.count("TESSERA_MACHINES"), 0u);
  vars["TESSERA_MACHINES"] = "0,2";
  EXPECT_EQ((*ParseJobEnv(getenv))->machines, "0,2");
  vars.erase("TESSERA_MACHINES");
  vars["RANK"] = "x";
  EXPECT_THAT(ParseJobEnv(getenv).status().message(), HasSubstr("RANK"));
  vars["RANK"] = "4";
  EXPECT_FALSE(ParseJobEnv(getenv).ok());
  vars.erase("TESSERA_JOB_TOKEN");
  EXPECT_THAT(ParseJobEnv(getenv).status().message(), HasSubstr("TESSERA_JOB_TOKEN"));
}

// --extra-envs and the supervisor's stdin carry one KEY=VALUE per line: a
// newline in a value would add a variable, a NUL would cut it short.
TEST(EnvVarTest, KeysAreNamesAndValuesStayOnOneLine) {
  auto ok = ParseEnvAssignment("X_TAG=a=b c");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->first, "X_TAG");
  EXPECT_EQ(ok->second, "a=b c");
  EXPECT_TRUE(ParseEnvAssignment("_x9=").ok());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"A=1\nB=2", "the value of A contains a newline (character 2)"},
      {std::string("A=1\0B", 5), "the value of A contains a NUL character (character 2)"},
      {"NOEQUALS", "'NOEQUALS' is not KEY=VALUE"},
      {"=1", "'' is not a variable name"},
      {"9A=1", "'9A' is not a variable name"},
      {"A-B=1", "'A-B' is not a variable name"},
      {"A B=1", "'A B' is not a variable name"},
      {"A\nB=1", "'A\\nB' is not a variable name"},
  };
  for (const auto& [text, expect] : bad) {
    auto r = ParseEnvAssignment(text);
    ASSERT_FALSE(r.ok()) << EscapeForMessage(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(expect)) << r.status();
  }
}

TEST(RemoteTest, LocalAddresses) {
  EXPECT_TRUE(IsLocalAddress("127.0.0.1"));
  EXPECT_TRUE(IsLocalAddress("127.1.2.3"));
  EXPECT_TRUE(IsLocalAddress("::1"));
  EXPECT_TRUE(IsLocalAddress("localhost"));
  EXPECT_FALSE(IsLocalAddress("192.0.2.77"));  // TEST-NET-1: never an address of ours.
  EXPECT_FALSE(IsLocalAddress("not an address"));
}

// The quoted command survives a real shell unchanged, whatever it contains.
TEST(RemoteTest, ShellQuotingRoundTrips) {
  std::vector<std::string> argv = {"printf", "%s|",  "plain", "two words",  "it's",
                                   "$HOME",  "a\"b", "",      "semi;colon", "`tick`"};
  FILE* pipe = popen(("/bin/sh -c " + ShellQuote(ShellCommand(argv))).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[256] = {};
  size_t n = fread(buffer, 1, sizeof(buffer) - 1, pipe);
  pclose(pipe);
  EXPECT_EQ(std::string(buffer, n), "plain|two words|it's|$HOME|a\"b||semi;colon|`tick`|");
  EXPECT_EQ(ShellQuote("simple-path/x.json"), "simple-path/x.json");
}

TEST(RemoteTest, SshNeverPrompts) {
  auto argv =
      SshArgv({.port = 2222, .user = "me", .extra = {"IdentityFile=/k"}}, "10.0.0.2", "true");
  std::string joined;
  for (const auto& a : argv) joined += a + " ";
  EXPECT_THAT(joined, HasSubstr("BatchMode=yes"));
  EXPECT_THAT(joined, HasSubstr("-p 2222"));
  EXPECT_THAT(joined, HasSubstr("-l me"));
  EXPECT_THAT(joined, HasSubstr("-o IdentityFile=/k"));
  EXPECT_EQ(argv.back(), "true");
  EXPECT_EQ(argv[argv.size() - 2], "10.0.0.2");
}

}  // namespace
}  // namespace tessera::launcher
