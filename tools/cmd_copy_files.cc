// `tessera copy-files`: puts a partitioned graph and the training scripts on
// the machines of an ip_config (DGL's tools/copy_files.py):
//
//   tessera copy-files --part-config parts/g.json --ip-config ip_config.txt
//       --workspace /home/me/work --rel-data-path data --script-folder scripts
//
// Machine i gets only partition i (a spare line past the parts gets every
// partition): <workspace>/<rel-data-path>/part<i>/,
// plus the partition config (paths rewritten to that layout, relative to the
// config) in <workspace>/<rel-data-path>/, the ip_config in <workspace>/,
// and the script folder in <workspace>/. Local machines (see
// src/launcher/remote.h) get plain copies, others go over ssh and scp.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/remote.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_config.h"
#include "tools/commands.h"
#include "tools/subprocess.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

struct CopyFlags {
  std::string part_config, ip_config, workspace, rel_data_path = ".", script_folder;
  int ssh_port = 22;
  std::string ssh_username;
  std::vector<std::string> ssh_options;
  bool force_ssh = false;
  double timeout_s = 3600;
};

Status Run(const std::vector<std::string>& argv, const std::string& what, double timeout_s) {
  ASSIGN_OR_RETURN(ChildResult r, RunChild(argv, Deadline::InSeconds(timeout_s)));
  if (r.exit_code != 0) {
    return absl::UnavailableError(
        fmt::format("{} failed (exit code {}): {}", what, r.exit_code, StrJoin(argv, " ")));
  }
  return absl::OkStatus();
}

Status CopyLocal(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec)
    return absl::InternalError(
        fmt::format("copy {} to {}: {}", from.string(), to.string(), ec.message()));
  return absl::OkStatus();
}

Status CopyFiles(const CopyFlags& f) {
  ASSIGN_OR_RETURN(launcher::IpConfig ip, launcher::ReadIpConfig(f.ip_config));
  // The reader's checks first: a clear error naming the file and the key for
  // a missing or wrong-typed field, and no path that leaves the config's
  // folder.
  ASSIGN_OR_RETURN(PartitionConfig checked, ReadPartitionConfig(f.part_config));
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(f.part_config));
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError(fmt::format("{}: not a valid JSON object", f.part_config));
  }
  const int parts = checked.num_parts;
  if (parts > ip.num_machines()) {
    return absl::InvalidArgumentError(
        fmt::format("{} has {} partitions but {} lists {} machines: machine i gets partition i",
                    f.part_config, parts, f.ip_config, ip.num_machines()));
  }
  if (!f.script_folder.empty() && !fs::is_directory(f.script_folder)) {
    return absl::NotFoundError(fmt::format("--script-folder {} is not a folder", f.script_folder));
  }
  const fs::path config_dir = fs::absolute(f.part_config).parent_path();
  // Each part's folder, and the config rewritten to part<i>/<name>.
  std::vector<fs::path> part_dirs;
  nlohmann::json remote_config = config;
  for (int p = 0; p < parts; ++p) {
    const std::string key = fmt::format("part-{}", p);
    if (!config.contains(key) || !config[key].is_object()) {
      return absl::InvalidArgumentError(fmt::format("{}: missing key '{}'", f.part_config, key));
    }
    // Every path of a part names an entry of one folder of its own (not the
    // config's folder): that folder is what is copied.
    fs::path dir;
    for (auto& [field, value] : remote_config[key].items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(fmt::format("{}: '{}'.'{}' must be a path, found {}",
                                                      f.part_config, key, field, value.dump()));
      }
      fs::path path = fs::path(value.get<std::string>()).lexically_normal();
      if (path.is_relative()) path = (config_dir / path).lexically_normal();
      if (!path.has_filename()) path = path.parent_path();  // "part0/graph/"
      if (!dir.empty() && path.parent_path() != dir) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: the files of '{}' are in {} and {}: copy-files needs each part's files in one "
            "folder",
            f.part_config, key, dir.string(), path.parent_path().string()));
      }
      dir = path.parent_path();
      value = fmt::format("part{}/{}", p, path.filename().string());
    }
    if (dir == config_dir.lexically_normal()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: the files of '{}' are in the config's own folder: copy-files needs each part in "
          "a folder of its own (as partition writes part<i>/)",
          f.part_config, key));
    }
    if (!fs::is_directory(dir)) {
      return absl::NotFoundError(fmt::format("partition {} folder {} is missing", p, dir.string()));
    }
    part_dirs.push_back(dir);
  }
  const std::string config_name = fs::path(f.part_config).filename().string();
  ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Open("", "tessera-copy-files"));
  const std::string rewritten = scratch.path() + "/" + config_name;
  RETURN_IF_ERROR(WriteFileAtomic(rewritten, remote_config.dump(1) + "\n"));
  launcher::SshOptions ssh{.port = f.ssh_port, .user = f.ssh_username, .extra = f.ssh_options};
  std::string scp;
  const fs::path data = fs::path(f.workspace) / f.rel_data_path;
  for (int m = 0; m < ip.num_machines(); ++m) {
    const std::string host = ip.machines[static_cast<size_t>(m)].ip;
    Stopwatch watch;
    // Machine i gets partition i; a spare (past the parts) gets them all, so
    // that it can take any machine's place.
    std::vector<int> mine;
    for (int p = m < parts ? m : 0; p < (m < parts ? m + 1 : parts); ++p) mine.push_back(p);
    if (!f.force_ssh && launcher::IsLocalAddress(host)) {
      for (int p : mine) {  // A local copy into its own source never ends.
        const fs::path from = fs::weakly_canonical(part_dirs[static_cast<size_t>(p)]);
        const fs::path to = fs::weakly_canonical(fs::absolute(data));
        if (std::mismatch(from.begin(), from.end(), to.begin(), to.end()).first == from.end()) {
          return absl::InvalidArgumentError(
              fmt::format("--workspace {}: the copy would go into the partition folder {} it "
                          "copies",
                          f.workspace, from.string()));
        }
      }
      for (int p : mine) {
        RETURN_IF_ERROR(
            CopyLocal(part_dirs[static_cast<size_t>(p)], data / fmt::format("part{}", p)));
      }
      RETURN_IF_ERROR(CopyLocal(rewritten, data / config_name));
      RETURN_IF_ERROR(
          CopyLocal(f.ip_config, fs::path(f.workspace) / fs::path(f.ip_config).filename()));
      if (!f.script_folder.empty()) {
        RETURN_IF_ERROR(CopyLocal(f.script_folder,
                                  fs::path(f.workspace) / fs::path(f.script_folder).filename()));
      }
    } else {
      if (scp.empty()) {
        ASSIGN_OR_RETURN(ssh.ssh, FindProgram("ssh"));
        ASSIGN_OR_RETURN(scp, FindProgram("scp"));
      }
      const std::string target = (f.ssh_username.empty() ? "" : f.ssh_username + "@") + host;
      RETURN_IF_ERROR(
          Run(launcher::SshArgv(ssh, host, launcher::ShellCommand({"mkdir", "-p", data.string()})),
              fmt::format("mkdir on machine {} ({})", m, host), f.timeout_s));
      std::vector<std::string> base = {scp, "-r", "-q", "-B", "-P", std::to_string(f.ssh_port)};
      for (const std::string& o : f.ssh_options) base.insert(base.end(), {"-o", o});
      auto copy = [&](const std::string& from, const std::string& to) {
        std::vector<std::string> argv = base;
        argv.insert(argv.end(), {from, target + ":" + to});
        return Run(argv, fmt::format("scp to machine {} ({})", m, host), f.timeout_s);
      };
      for (int p : mine) {
        // scp -r a/ into host:x/part<i> creates part<i> (it does not exist yet).
        const std::string to = (data / fmt::format("part{}", p)).string();
        RETURN_IF_ERROR(Run(launcher::SshArgv(ssh, host, launcher::ShellCommand({"rm", "-rf", to})),
                            fmt::format("clean machine {} ({})", m, host), f.timeout_s));
        RETURN_IF_ERROR(copy(part_dirs[static_cast<size_t>(p)].string(), to));
      }
      RETURN_IF_ERROR(copy(rewritten, (data / config_name).string()));
      RETURN_IF_ERROR(copy(f.ip_config, f.workspace + "/"));
      if (!f.script_folder.empty()) RETURN_IF_ERROR(copy(f.script_folder, f.workspace + "/"));
    }
    spdlog::info("copy-files: machine {} ({}): {} and the config in {:.1f} s", m, host,
                 m < parts ? fmt::format("partition {}", m) : "every partition (a spare)",
                 watch.Seconds());
  }
  return absl::OkStatus();
}

}  // namespace

Command RegisterCopyFiles(CLI::App& app) {
  auto f = std::make_shared<CopyFlags>();
  CLI::App* sub = app.add_subcommand(
      "copy-files", "Copy partition i (and the config, ip_config, scripts) to machine i");
  sub->add_option("--part-config,--part_config", f->part_config)->required();
  sub->add_option("--ip-config,--ip_config", f->ip_config)->required();
  sub->add_option("--workspace", f->workspace, "Folder on every machine")
      ->required()
      ->check(CLI::Validator(
          [](std::string& s) { return s.empty() ? std::string("must not be empty") : ""; }, "DIR"));
  sub->add_option("--rel-data-path,--rel_data_path", f->rel_data_path,
                  "Where the partition goes, relative to the workspace")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) {
            const std::filesystem::path p(s);
            const bool up =
                std::any_of(p.begin(), p.end(), [](const auto& c) { return c == ".."; });
            return p.is_absolute() || up ? "must be a path inside the workspace (no '..', not "
                                           "absolute), got '" +
                                               s + "'"
                                         : std::string();
          },
          "PATH"));
  sub->add_option("--script-folder,--script_folder", f->script_folder,
                  "Folder copied into the workspace");
  sub->add_option("--ssh-port,--ssh_port", f->ssh_port)->capture_default_str();
  sub->add_option("--ssh-username,--ssh_username", f->ssh_username);
  sub->add_option("--ssh-option", f->ssh_options,
                  "More ssh/scp -o options, e.g. StrictHostKeyChecking=accept-new (trusts a "
                  "machine's host key on first contact, still refuses a changed one)");
  sub->add_flag("--ssh", f->force_ssh, "Use ssh for local machines too");
  return {sub, [f] {
            Stopwatch watch;
            Status st;
            try {
              st = CopyFiles(*f);
            } catch (const std::exception& e) {  // A safety net: an error, never an abort.
              st = absl::InternalError(fmt::format("copy-files: {}", e.what()));
            }
            if (!st.ok()) return ReportError(st);
            ReportFinish("copy-files", watch.Seconds());
            return 0;
          }};
}

}  // namespace tessera::tools
