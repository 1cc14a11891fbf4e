// Runs the real `tessera` binary: successful runs, and bad input that must end
// in a clear error naming the problem, a non-zero exit and no valid-looking
// output.
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/process.h"
#include "src/base/test_util.h"
#include "src/graph/npy.h"
#include "tessera/base/strings.h"
#include "tessera/partition/load_partition.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::TesseraBinary;
using testing::TestDataDir;

using CliRun = testing::ShellRun;
using testing::RunTessera;

void WriteIds(const std::string& path, std::vector<int64_t> ids) {
  ASSERT_TRUE(WriteNpy(path, Array::From(ids)).ok());
}

// 4 nodes in a ring, with a feature.
void WriteRing(const std::string& dir) {
  WriteIds(dir + "/src.npy", {0, 1, 2, 3});
  WriteIds(dir + "/dst.npy", {1, 2, 3, 0});
  ASSERT_TRUE(WriteNpy(dir + "/feat.npy", Array::Zeros(DType::kFloat32, {4, 3})).ok());
}

TEST(Cli, PartitionThenInspectCora) {
  TempDir out;
  CliRun part = RunTessera("partition --input " + TestDataDir() +
                           "/cora --graph-name cora --num-parts 2 "
                           "--balance-ntypes train_mask --balance-edges --return-mapping --out " +
                           out.path());
  ASSERT_EQ(part.exit_code, 0) << part.output;
  EXPECT_THAT(part.output, HasSubstr("METIS"));
  EXPECT_THAT(part.output, HasSubstr("partition finished: wall"));
  EXPECT_THAT(part.output, HasSubstr("peak RSS"));
  EXPECT_TRUE(PathExists(out / "orig_nids.npy"));
  for (int p = 0; p < 2; ++p) ASSERT_TRUE(LoadPartition(out / "cora.json", p).ok());

  CliRun inspect = RunTessera("inspect " + out / "cora.json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_THAT(inspect.output, HasSubstr("2708 nodes, 10556 edges, 2 parts (metis)"))
      << inspect.output;
  EXPECT_THAT(inspect.output, HasSubstr("edge cut:"));
  EXPECT_THAT(inspect.output, HasSubstr("train_mask"));
  CliRun json = RunTessera("inspect --json " + out / "cora.json");
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_THAT(json.output, HasSubstr("\"edge_cut_fraction\""));
}

TEST(Cli, DglUnderscoreSpellingsAndCsvInput) {
  TempDir dir;
  testing::WriteAll(dir / "edges.tsv", "# ring\n0\t1\n1\t2\n2\t3\n3\t0\n");
  CliRun run = RunTessera("partition --input " + dir / "edges.tsv" +
                          " --graph_name ring --num_parts 2 --part_method random --num_hops 2 "
                          "--undirected --out " +
                          dir / "out");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto lp = LoadPartition(dir / "out/ring.json", 0);
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_EQ(lp->config.num_edges, 8);
  EXPECT_EQ(lp->config.halo_hops, 2);
}

// A SIGTERM to the partitioner while METIS runs ends it by that signal, as
// for any program, and METIS's process with it. (GKlib traps SIGTERM while
// METIS runs: in the partitioner's own process it made METIS "fail", and its
// longjmp could corrupt the heap.) A SIGTERM sent to METIS's own process,
// trapped so, is named (was "METIS failed with code -4").
TEST(Cli, SigtermDuringMetisEndsThePartitionerAndMetis) {
  TempDir dir;
  ASSERT_EQ(RunTessera("--log-level error generate --out " + dir / "g" +
                       " --nodes 300000 --edges 1500000 --feat-dim 1 --classes 2")
                .exit_code,
            0);
  // Starts `partition`; returns METIS's pid once the log names it (a
  // whole line: not part of the pid) and GKlib traps SIGTERM there (bit 15
  // of SigCgt, inside METIS_PartGraphKway), or 0.
  auto start = [&](std::optional<Process>& part, const std::string& log_path) -> pid_t {
    auto spawned =
        Process::Spawn({.argv = {TesseraBinary(), "partition", "--input", dir / "g", "--graph-name",
                                 "g", "--num-parts", "8", "--out", dir / "p"},
                        .log_path = log_path});
    if (!spawned.ok()) return 0;
    part = std::move(*spawned);
    const std::string running = "METIS: running in process ";
    pid_t metis = 0;
    for (Deadline deadline = Deadline::InSeconds(120); !deadline.Expired(); usleep(1000)) {
      const std::string log = testing::ReadAll(log_path);
      if (const size_t at = log.find(running);
          at != std::string::npos && metis == 0 && log.find('\n', at) != std::string::npos) {
        metis = std::stoi(log.substr(at + running.size()));
      }
      if (metis == 0) {
        if (part->Poll()) return 0;
        continue;
      }
      std::ifstream in("/proc/" + std::to_string(metis) + "/status");
      const std::string status((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
      const size_t caught = status.find("SigCgt:\t");
      if (caught == std::string::npos) return 0;  // Gone.
      if ((std::stoull(status.substr(caught + 8, 16), nullptr, 16) >> (SIGTERM - 1) & 1) != 0) {
        return metis;
      }
    }
    return 0;
  };
  std::optional<Process> part;
  pid_t metis = start(part, dir / "log");
  ASSERT_GT(metis, 0) << testing::ReadAll(dir / "log");
  ASSERT_EQ(kill(part->pid(), SIGTERM), 0);
  auto code = part->Wait(Deadline::InSeconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  std::string log = testing::ReadAll(dir / "log");
  EXPECT_EQ(*code, -SIGTERM) << log;
  EXPECT_THAT(log, Not(HasSubstr("METIS: objective"))) << "METIS ended before the signal";
  // Gone, or a zombie left to init: dead either way.
  auto gone = [&metis] {
    const std::string stat = testing::ReadAll("/proc/" + std::to_string(metis) + "/stat");
    const size_t paren = stat.rfind(')');
    return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
  };
  for (Deadline deadline = Deadline::InSeconds(10); !gone() && !deadline.Expired();) usleep(1000);
  EXPECT_TRUE(gone()) << "METIS's process " << metis << " outlived the partitioner";

  // To METIS's own process.
  metis = start(part, dir / "log2");
  ASSERT_GT(metis, 0) << testing::ReadAll(dir / "log2");
  ASSERT_EQ(kill(metis, SIGTERM), 0);
  code = part->Wait(Deadline::InSeconds(60));
  log = testing::ReadAll(dir / "log2");
  ASSERT_TRUE(code.ok()) << log;
  EXPECT_EQ(*code, 1) << log;
  EXPECT_THAT(log, HasSubstr("METIS stopped with METIS_ERROR: its process (pid ")) << log;
  EXPECT_THAT(log, HasSubstr("received SIGTERM or SIGABRT")) << log;
}

TEST(Cli, GenerateWritesTheRequestedGraph) {
  TempDir dir;
  CliRun run = RunTessera("generate --out " + dir / "g" +
                          " --nodes 3000 --edges 20000 --feat-dim 5 --classes 4");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto feat = ReadNpyHeader(dir / "g/feat.npy");
  ASSERT_TRUE(feat.ok());
  EXPECT_EQ(feat->shape, (std::vector<int64_t>{3000, 5}));
  EXPECT_EQ(ReadNpyHeader(dir / "g/src.npy")->shape, (std::vector<int64_t>{40000}));
}

TEST(Cli, HeteroGraphGeneratePartitionInspect) {
  TempDir dir;
  CliRun gen = RunTessera("generate --hetero --num-nodes 6000 --feat-dim 4 --out " + dir / "mag");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  CliRun part = RunTessera("partition --input " + dir / "mag" +
                           " --graph-name mag --num-parts 2 --balance-ntypes train_mask --out " +
                           dir / "parts");
  ASSERT_EQ(part.exit_code, 0) << part.output;
  for (int p = 0; p < 2; ++p) {
    auto lp = LoadPartition(dir / "parts/mag.json", p);
    ASSERT_TRUE(lp.ok()) << lp.status();
    EXPECT_TRUE(lp->config.typed());
    EXPECT_EQ(lp->config.layout.ntypes,
              (std::vector<std::string>{"paper", "author", "institution", "field_of_study"}));
    EXPECT_TRUE(lp->node_data.count("paper/feat"));
    EXPECT_EQ(lp->etype.rows(), lp->num_local_edges());
  }
  CliRun inspect = RunTessera("inspect " + dir / "parts/mag.json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_THAT(inspect.output, HasSubstr("author:writes:paper")) << inspect.output;
  EXPECT_THAT(inspect.output, HasSubstr("field_of_study")) << inspect.output;
  CliRun json = RunTessera("inspect --json " + dir / "parts/mag.json");
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_THAT(json.output, HasSubstr("\"type_cut_edges\""));
  // The homogeneous transformations do not apply to typed input.
  CliRun undirected =
      RunTessera("partition --input " + dir / "mag" +
                 " --graph-name mag --num-parts 2 --undirected --out " + dir / "parts2");
  EXPECT_NE(undirected.exit_code, 0);
  EXPECT_FALSE(PathExists(dir / "parts2/mag.json"));
}

// Each bad input: the message must contain `expect`, the exit code must be
// non-zero, and no partition config may exist afterwards.
struct BadCase {
  std::string name;
  std::function<void(const std::string& dir)> setup;  // Writes the input into dir/in.
  std::string extra_flags;
  std::string expect;
};

TEST(Cli, BadInputGivesAClearErrorAndNoOutput) {
  const std::vector<BadCase> cases = {
      {"missing input", [](const std::string&) {}, "", "no such file or directory"},
      {"missing dst.npy",
       [](const std::string& d) {
         WriteRing(d);
         ASSERT_TRUE(RemoveAll(d + "/dst.npy").ok());
       },
       "", "dst.npy: missing"},
      {"float ids",
       [](const std::string& d) {
         WriteRing(d);
         ASSERT_TRUE(WriteNpy(d + "/src.npy", Array::From(std::vector<double>{0, 1, 2, 3})).ok());
       },
       "", "src.npy: expected an integer array, got float64"},
      {"feature of the wrong shape",
       [](const std::string& d) {
         WriteRing(d);
         ASSERT_TRUE(WriteNpy(d + "/label.npy", Array::From(std::vector<int64_t>{0, 1})).ok());
       },
       "", "label.npy: has 2 rows"},
      {"id out of range",
       [](const std::string& d) {
         WriteRing(d);
         WriteIds(d + "/dst.npy", {1, 2, 3, 4});
       },
       "", "dst[3] = 4 is out of range [0, 4)"},
      {"mismatched lengths",
       [](const std::string& d) {
         WriteRing(d);
         WriteIds(d + "/dst.npy", {1, 2, 3});
       },
       "", "src.npy has 4 entries but dst.npy has 3"},
      {"truncated npy",
       [](const std::string& d) {
         WriteRing(d);
         std::string bytes = testing::ReadAll(d + "/feat.npy");
         testing::WriteAll(d + "/feat.npy", bytes.substr(0, bytes.size() - 7));
       },
       "", "feat.npy: truncated"},
      {"empty graph",
       [](const std::string& d) {
         WriteIds(d + "/src.npy", {});
         WriteIds(d + "/dst.npy", {});
         ASSERT_TRUE(WriteNpy(d + "/feat.npy", Array::Zeros(DType::kFloat32, {4, 3})).ok());
       },
       "", "the graph is empty"},
      {"zero parts", WriteRing, "--num-parts 0", "num_parts must be in [1, num_nodes = 4], got 0"},
      {"too many parts", WriteRing, "--num-parts 5", "got 5"},
      {"unknown method", WriteRing, "--part-method spectral", "unknown part_method 'spectral'"},
      {"corrupt gzip",
       [](const std::string& d) {
         ASSERT_TRUE(MakeDirs(d).ok());
         const char kBadGzip[] = "\x1f\x8b\x08\x00garbage-not-deflate";  // gzip magic, junk.
         testing::WriteAll(d + "/e.csv.gz", std::string(kBadGzip, sizeof(kBadGzip) - 1));
       },
       "", "corrupt or truncated gzip"},
      {"malformed csv line",
       [](const std::string& d) {
         ASSERT_TRUE(MakeDirs(d).ok());
         testing::WriteAll(d + "/e.csv", "0,1\n1,2\n2;3\n");
       },
       "", "e.csv:3:"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    std::string in = dir / "in";
    if (c.name != "missing input" && c.name.find("csv") == std::string::npos &&
        c.name.find("gzip") == std::string::npos) {
      ASSERT_TRUE(MakeDirs(in).ok());
    }
    c.setup(in);
    std::string input = in;
    if (c.name == "corrupt gzip") input = in + "/e.csv.gz";
    if (c.name == "malformed csv line") input = in + "/e.csv";
    std::string flags = c.extra_flags.find("--num-parts") == std::string::npos
                            ? "--num-parts 2 " + c.extra_flags
                            : c.extra_flags;
    CliRun run = RunTessera("partition --input " + input + " --graph-name g " + flags + " --out " +
                            dir / "out");
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("error: ")) << run.output;
    EXPECT_THAT(run.output, HasSubstr(c.expect)) << run.output;
    EXPECT_FALSE(PathExists(dir / "out/g.json"));
    EXPECT_FALSE(PathExists(dir / "out/part0"));
  }
}

TEST(Cli, UnwritableOutputFolder) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "in").ok());
  WriteRing(dir / "in");
  testing::WriteAll(dir / "blocker", "a file where a folder should be");
  CliRun run = RunTessera("partition --input " + dir / "in" +
                          " --graph-name g --num-parts 2 --out " + dir / "blocker/out");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output,
              HasSubstr("error: output folder: cannot create directory " + dir / "blocker/out"))
      << run.output;
}

TEST(Cli, UsageErrorsExitTwo) {
  CliRun missing = RunTessera("partition --input x");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("required")) << missing.output;
  EXPECT_EQ(RunTessera("no-such-command").exit_code, 2);
  EXPECT_EQ(RunTessera("partition --num-parts abc").exit_code, 2);
  CliRun help = RunTessera("partition --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("--balance-ntypes"));
  CliRun inspect = RunTessera("inspect /nonexistent/g.json");
  EXPECT_EQ(inspect.exit_code, 1);
  EXPECT_THAT(inspect.output, HasSubstr("/nonexistent/g.json"));
}

// A partition config may only name files inside its folder: an array name
// that climbs out ("../../../secret") makes every command that reads the
// config fail with an error naming the config and the name, before any file
// outside is read or any process started.
TEST(Cli, ConfigNamesOutsideItsFolderAreRefused) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "in").ok());
  WriteRing(dir / "in");
  CliRun part = RunTessera("partition --input " + dir / "in" +
                           " --graph-name g --num-parts 1 --out " + dir / "ws/parts");
  ASSERT_EQ(part.exit_code, 0) << part.output;
  // The secret has the shape of a node array of the part: only the name check stops it.
  ASSERT_TRUE(WriteNpy(dir / "secret.npy", Array::Zeros(DType::kFloat32, {4, 3})).ok());
  const std::string config = dir / "ws/parts/g.json";
  nlohmann::json j = nlohmann::json::parse(testing::ReadAll(config));
  j["tessera"]["node_feats"].push_back("../../../../secret");
  testing::WriteAll(config, j.dump(2));
  testing::WriteAll(dir / "ws/ip_config.txt", "127.0.0.1 1\n");
  const std::string expect = config +
                             ": 'tessera'.'node_feats' has the array name '../../../../secret': "
                             "an array name must be a plain file name";
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"server", "env TESSERA_JOB_TOKEN=t TESSERA_JOB_ENCRYPTION=off " + TesseraBinary() +
                     " server --ip-config " + dir / "ws/ip_config.txt" + " --part-config " +
                     config + " --server-id 0 --num-clients 1 --job-id jclitest"},
      {"inspect", TesseraBinary() + " inspect " + config},
      {"launch", TesseraBinary() + " launch --workspace " + dir / "ws" +
                     " --part-config parts/g.json --ip-config ip_config.txt true"},
      {"copy-files", TesseraBinary() + " copy-files --part-config " + config + " --ip-config " +
                         dir / "ws/ip_config.txt" + " --workspace " + dir / "copy"},
  };
  for (const auto& [name, command] : commands) {
    SCOPED_TRACE(name);
    // RunTessera() prefixes the binary; these need an environment first.
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      output.append(buffer.data(), n);
    int status = ::pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status)) << output;
    EXPECT_EQ(WEXITSTATUS(status), 1) << output;
    EXPECT_THAT(output, HasSubstr("error: " + expect)) << output;
    EXPECT_THAT(output, Not(HasSubstr("launch: job"))) << output;
  }
  EXPECT_FALSE(PathExists(dir / "copy"));
}

// A malformed config is an error naming the file and the field (exit code 1),
// never an uncaught JSON exception.
TEST(Cli, CopyFilesGivesAClearErrorForAMalformedConfig) {
  TempDir dir;
  testing::WriteAll(dir / "ip_config.txt", "127.0.0.1\n");
  const std::string good_part =
      R"("part-0": {"part_graph": "part0/graph", "node_feats": "part0/node_feat",
                    "edge_feats": "part0/edge_feat"})";
  const std::string maps = R"("node_map": [[0, 4]], "edge_map": [[0, 4]])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"graph_name": "g", "num_nodes": 4, "num_edges": 4, "num_parts": "1", )" + maps + ", " +
           good_part + "}",
       "missing or invalid key 'num_parts'"},
      {R"({"graph_name": "g", "num_nodes": 4, "num_edges": 4, "num_parts": 1, )" + maps +
           R"(, "part-0": {"part_graph": 5, "node_feats": "a", "edge_feats": "b"}})",
       "'part-0' lacks 'part_graph'"},
      {R"({"graph_name": "g", "num_nodes": 4, "num_edges": 4, "num_parts": 1, )" + maps +
           R"(, "part-0": {"part_graph": "a", "node_feats": "b", "edge_feats": "c", "x": []}})",
       "'part-0'.'x' must be a path, found []"},
      {R"({"graph_name": "g", "num_nodes": 4, "num_edges": 4, "num_parts": 1, )" + maps +
           R"(, "part-0": {"part_graph": "../a", "node_feats": "b", "edge_feats": "c"}})",
       "'part-0'.'part_graph' = '../a' leaves the config's folder"},
      {R"([1, 2])", "not a valid JSON object"},
  };
  for (const auto& [json, expect] : cases) {
    SCOPED_TRACE(json);
    testing::WriteAll(dir / "g.json", json);
    CliRun run = RunTessera("copy-files --part-config " + dir / "g.json" + " --ip-config " +
                            dir / "ip_config.txt" + " --workspace " + dir / "copy");
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr("error: " + dir / "g.json" + ": " + expect)) << run.output;
    EXPECT_THAT(run.output, Not(HasSubstr("terminate"))) << run.output;
    EXPECT_FALSE(PathExists(dir / "copy"));
  }
}

// A 4-node ring (WriteRing) in dir/in, partitioned in one part into dir/p.
void PartitionRing(const TempDir& dir) {
  std::filesystem::create_directories(dir / "in");
  WriteRing(dir / "in");
  CliRun run = RunTessera("--log-level error partition --input " + dir / "in" +
                          " --graph-name g --num-parts 1 --out " + dir / "p");
  ASSERT_EQ(run.exit_code, 0) << run.output;
}

// copy-files copies each part's folder: paths written "part0/graph/" work,
// and layouts it cannot copy (parts' files in the config's own folder, a
// workspace inside a part) are refused before anything is written.
TEST(Cli, CopyFilesCopiesPartFoldersAndRefusesLayoutsItCannotCopy) {
  TempDir dir;
  PartitionRing(dir);
  testing::WriteAll(dir / "ip_config.txt", "127.0.0.1\n");
  auto config = nlohmann::json::parse(testing::ReadAll(dir / "p/g.json"));
  auto copy = [&](const std::string& config_path, const std::string& workspace) {
    return RunTessera("--log-level error copy-files --part-config " + config_path +
                      " --ip-config " + dir / "ip_config.txt" + " --workspace " + workspace);
  };
  nlohmann::json slash = config;
  for (auto& [field, value] : slash["part-0"].items()) value = value.get<std::string>() + "/";
  testing::WriteAll(dir / "p/slash.json", slash.dump());
  CliRun run = copy(dir / "p/slash.json", dir / "ws");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  CliRun inspect = RunTessera("inspect " + dir / "ws/slash.json");
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_TRUE(PathExists(dir / "ws/part0/node_feat")) << "the node features were not copied";

  nlohmann::json flat = config;
  for (const char* field : {"part_graph", "node_feats", "edge_feats"}) {
    std::filesystem::rename(dir / ("p/" + config["part-0"][field].get<std::string>()),
                            dir / ("p/" + std::string(field)));
    flat["part-0"][field] = field;
  }
  testing::WriteAll(dir / "p/flat.json", flat.dump());
  run = copy(dir / "p/flat.json", dir / "p/ws2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("are in the config's own folder")) << run.output;
  EXPECT_FALSE(PathExists(dir / "p/ws2"));

  testing::WriteAll(dir / "p/g2.json", config.dump());
  for (const char* field : {"part_graph", "node_feats", "edge_feats"}) {
    std::filesystem::rename(dir / ("p/" + std::string(field)),
                            dir / ("p/" + config["part-0"][field].get<std::string>()));
  }
  run = copy(dir / "p/g2.json", dir / "p/part0/ws3");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("into the partition folder")) << run.output;
}

// Flags that name impossible values are usage errors, and a command that
// runs out of memory ends in a message, not an abort.
TEST(Cli, OutOfRangeFlagsAndOutOfMemoryAreErrors) {
  TempDir dir;
  testing::WriteAll(dir / "ip_config.txt", "127.0.0.1 30050\n");
  const std::string launch = "launch --ip-config " + dir / "ip_config.txt" + " --part-config " +
                             dir / "g.json" + " --workspace " + dir.path() + " --num-trainers 1 ";
  for (const std::string flags :
       {"--master-port 70000 true", "--startup-timeout nan true", "--startup-timeout inf true",
        "--grace -1 true", "--heartbeat-timeout 0 true", "' '"}) {  // ' ': waited 60 s.
    CliRun run = RunTessera(launch + flags);
    EXPECT_EQ(run.exit_code, 2) << flags << ": " << run.output;
  }
  // Values that crashed the benches (a division by zero, an empty buffer) or
  // became nonsense (a NaN timeout cast to an integer): refused by name.
  for (const std::string command : std::vector<std::string>{
           "bench pull --batch 0", "bench sample --batches 0", "bench sample --threads -1",
           "bench mpi-partition --graph x --ranks 0", "bench train --timeout nan",
           "generate -o " + dir / "t" + " --threads 100000", "server --startup-timeout nan",
           "server --heartbeat-timeout 1e308", "supervise --grace nan true",
           "--log-level nonsense inspect x", "mpi-partition -i x --num-parts 4 --out o --ranks 0",
           "copy-files --part-config x --ip-config y --workspace ''",
           "copy-files --part-config x --ip-config y --workspace w --rel-data-path ../up",
           "generate -o " + dir / "t" + " --seed -1",  // Was 2^64 - 1.
           "partition -i x --graph-name g --num-parts 2 --out o --seed 18446744073709551616"}) {
    CliRun run = RunTessera(command);
    EXPECT_EQ(run.exit_code, 2) << command << ": " << run.output;
    const size_t at = command.rfind("--");
    const std::string flag = command.substr(at, command.find(' ', at) - at);
    EXPECT_THAT(run.output, HasSubstr(flag)) << command << ": " << run.output;
  }
  CliRun unknown = RunTessera("bogus");  // Was "A subcommand is required".
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("unknown command 'bogus'")) << unknown.output;
  CliRun range = RunTessera(
      "partition -i x --graph-name g --num-parts 2 --out o "
      "--coarsen-min-arcs -1");  // Was a range to DBL_MAX in 300 digits.
  EXPECT_EQ(range.exit_code, 2) << range.output;
  EXPECT_THAT(range.output, HasSubstr("not in range 0 to 9223372036854775807")) << range.output;
  // Was an error after the partition was written; before mpirun now.
  CliRun stats = RunTessera(
      "mpi-partition -i x --num-parts 2 --out o --ranks 2 --mpirun /bin/false "
      "--stats-json /nonexistent/s.json");
  EXPECT_EQ(stats.exit_code, 1) << stats.output;
  EXPECT_THAT(stats.output, HasSubstr("--stats-json /nonexistent/s.json: no folder /nonexistent"))
      << stats.output;
  EXPECT_THAT(stats.output, Not(HasSubstr("starting"))) << stats.output;
  CliRun ranks = RunTessera("mpi-partition -i x --num-parts 4 --out o --ranks 3");
  EXPECT_EQ(ranks.exit_code, 1) << ranks.output;
  EXPECT_THAT(ranks.output, HasSubstr("--num-parts 4 must be a multiple of --ranks 3"));
  testing::WriteAll(dir / "big_ip.txt", "127.0.0.1 65534\n");
  PartitionRing(dir);
  CliRun port =
      RunTessera("launch --ip-config " + dir / "big_ip.txt" + " --part-config " + dir / "p/g.json" +
                 " --workspace " + dir.path() + " --num-trainers 1 --num-servers 2 true");
  EXPECT_EQ(port.exit_code, 1) << port.output;
  EXPECT_THAT(port.output, HasSubstr("above 65535: pass --master-port")) << port.output;
  CliRun chunks =
      RunTessera("chunk --input " + dir / "in" + " --out " + dir / "c" + " --num-chunks 5000");
  EXPECT_EQ(chunks.exit_code, 1) << chunks.output;
  EXPECT_THAT(chunks.output, HasSubstr("the number of chunks must be in [1, 4096]"))
      << chunks.output;
  // A graph name mpi-partition would refuse after the chunking (the folder's).
  chunks = RunTessera("chunk --input " + dir / "in" + " --out '" + dir / "my chunks" + "'");
  EXPECT_EQ(chunks.exit_code, 1) << chunks.output;
  EXPECT_THAT(chunks.output, HasSubstr("graph name 'my chunks'")) << chunks.output;
  EXPECT_FALSE(PathExists(dir / "my chunks"));
  // 600 class centroids of 1e6 floats (2.4 GB) in 2 GB of address space
  // (the graph's 2.4 GB must fit on the disk, or generate refuses it first).
  struct statvfs disk {};
  if (statvfs(dir.path().c_str(), &disk) == 0 &&
      static_cast<double>(disk.f_bavail) * disk.f_frsize > 3e9) {
    CliRun oom = RunTessera("--log-level error generate -o " + dir / "gen" +
                                " --nodes 600 --classes 600 --edges 5000 --feat-dim 1000000",
                            "ulimit -v 2000000;");
    EXPECT_EQ(oom.exit_code, 1) << oom.output;
    EXPECT_THAT(oom.output, HasSubstr("tessera generate: out of memory")) << oom.output;
    EXPECT_FALSE(PathExists(dir / "gen/src.npy.partial"));  // Removed on the way out.
  }
  // A label of 2^40 would size an output layer of 2^40 classes: the example
  // trainer names the labels instead.
  WriteIds(dir / "in/label.npy", {0, 1, int64_t{1} << 40, 2});
  for (const char* mask : {"train_mask", "val_mask", "test_mask"}) {
    ASSERT_TRUE(
        WriteNpy(dir / ("in/" + std::string(mask) + ".npy"), Array::Zeros(DType::kBool, {4})).ok());
  }
  ASSERT_EQ(RunTessera("--log-level error partition --input " + dir / "in" +
                       " --graph-name g --num-parts 1 --out " + dir / "labels")
                .exit_code,
            0);
  CliRun train = testing::RunShell(std::string(TESSERA_BINARY_DIR) +
                                   "/bin/graphsage_train_dist --graph-name g --part-config " +
                                   dir / "labels/g.json");
  EXPECT_EQ(train.exit_code, 1) << train.output;
  EXPECT_THAT(train.output,
              HasSubstr("labels must be class indices below 1048576; the largest is 1099511627776"))
      << train.output;
}

}  // namespace
}  // namespace tessera
