// File: tools/commands.h
//
// The subcommands of the `tessera` program. Each Register* function adds its
// subcommand and flags to the CLI11 app and returns it with the runner that
// main() calls if that subcommand was chosen. Runners return the exit code.
// Flags and environment are read only here (and, later, in initialize()).
#ifndef TESSERA_TOOLS_COMMANDS_H_
#define TESSERA_TOOLS_COMMANDS_H_

#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "tessera/base/status.h"
#include "tessera/graph/readers.h"
#include "tessera/partition/partition_graph.h"

namespace tessera::tools {

struct Command {
  CLI::App* subcommand;
  std::function<int()> run;
};

Command RegisterGenerate(CLI::App& app);
Command RegisterPartition(CLI::App& app);
Command RegisterInspect(CLI::App& app);
Command RegisterDemo(CLI::App& app);
Command RegisterBench(CLI::App& app);
Command RegisterServer(CLI::App& app);
Command RegisterLaunch(CLI::App& app);
Command RegisterSupervise(CLI::App& app);
Command RegisterCopyFiles(CLI::App& app);
Command RegisterChunk(CLI::App& app);
Command RegisterMpiPartition(CLI::App& app);
Command RegisterExportEmbeddings(CLI::App& app);
// `bench pull` / `bench sample` / `bench train` / `bench hetero` /
// `bench mpi-partition`, added under `bench`.
Command RegisterBenchPull(CLI::App* bench);
Command RegisterBenchSample(CLI::App* bench);
Command RegisterBenchTrain(CLI::App* bench);
Command RegisterBenchHetero(CLI::App* bench);
Command RegisterBenchMpiPartition(CLI::App* bench);

// A flag's check: a finite number of seconds in [lo, hi] (CLI11's own
// ranges let "nan" through).
CLI::Validator Seconds(double lo, double hi);
// A flag's check: a seed, an integer in [0, 2^64) (CLI11 wraps "-1").
CLI::Validator Seed();

// The input flags of `tessera partition` and `tessera chunk`: --format,
// --split, --undirected, --remove-self-loops, --remove-duplicates.
struct ReadFlags {
  std::string format = "auto", split;
  bool undirected = false, remove_self_loops = false, remove_duplicates = false;
};
void AddReadFlags(CLI::App* sub, ReadFlags* flags);
StatusOr<ReadOptions> MakeReadOptions(const ReadFlags& flags);

// The flags `tessera partition` and `tessera mpi-partition` share, bound to
// the fields of *options (whose values are the defaults shown); --part-method
// goes to *method, for ParsePartMethod. `partitioner` names the program that
// part_method metis runs ("METIS" or "PT-Scotch") in the help texts.
void AddPartitionFlags(CLI::App* sub, PartitionOptions* options, std::string* method,
                       const std::string& partitioner);

// Prints "error: <message>" to stderr and returns 1 for a non-OK status.
int ReportError(const Status& status);
// Prints the closing "<what> finished: wall X s, peak RSS Y" line.
void ReportFinish(const std::string& what, double seconds);
// Absolute path of the running executable.
std::string SelfExecutable();

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_COMMANDS_H_
