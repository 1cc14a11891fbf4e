// The `tessera` command line: partition graphs, inspect partitions, generate
// synthetic graphs, run the demo and the benchmarks.
#include <sys/resource.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tools/commands.h"

namespace tessera::tools {

int ReportError(const Status& status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  return 1;
}

void ReportFinish(const std::string& what, double seconds) {
  // A child that peaked higher (METIS runs in one) is named too.
  struct rusage children {};
  getrusage(RUSAGE_CHILDREN, &children);
  const int64_t own = PeakRssBytes(), child = int64_t{children.ru_maxrss} * 1024;
  spdlog::info("{} finished: wall {:.2f} s, peak RSS {}{}", what, seconds, FormatBytes(own),
               child > own ? StrCat(", ", FormatBytes(child), " in a child process") : "");
}

std::string SelfExecutable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "tessera" : path.string();
}

}  // namespace tessera::tools

int main(int argc, char** argv) {
  CLI::App app{"tessera: distributed GNN training on partitioned graphs"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warn, error or off")
      ->capture_default_str()
      ->check(CLI::IsMember(
          {"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}));
  const std::vector<tessera::tools::Command> commands = {
      tessera::tools::RegisterPartition(app),    tessera::tools::RegisterInspect(app),
      tessera::tools::RegisterGenerate(app),     tessera::tools::RegisterDemo(app),
      tessera::tools::RegisterBench(app),        tessera::tools::RegisterServer(app),
      tessera::tools::RegisterLaunch(app),       tessera::tools::RegisterSupervise(app),
      tessera::tools::RegisterCopyFiles(app),    tessera::tools::RegisterChunk(app),
      tessera::tools::RegisterMpiPartition(app), tessera::tools::RegisterExportEmbeddings(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 calls an unknown command "A subcommand is required": name it.
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::fprintf(stderr, "tessera: unknown command '%s' (tessera --help lists them)\n",
                   app.remaining().front().c_str());
      return 2;
    }
    int code = app.exit(e);
    return code == 0 ? 0 : 2;  // Usage errors exit 2; --help exits 0.
  }
  tessera::InitLogging(log_level);
  for (const auto& command : commands) {
    if (!command.subcommand->parsed()) continue;
    // The last net: a command reports its errors itself, but an allocation
    // or a thread the system refuses must end in a message, not an abort.
    const std::string name = command.subcommand->get_name();
    try {
      return command.run();
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "tessera %s: out of memory (an allocation failed)\n", name.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tessera %s: %s\n", name.c_str(), e.what());
    }
    return 1;
  }
  return 2;
}
