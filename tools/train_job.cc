// File: tools/train_job.cc
#include "tools/train_job.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/launcher/local_job.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};

void OnSignal(int signal) {
  g_signal.store(signal);
  g_cancel.store(true);
}

// The last "RESULT {...}" line of a log.
StatusOr<nlohmann::json> ResultOf(const std::string& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.rfind("RESULT ", 0) == 0) last = line.substr(7);
  }
  if (last.empty()) return absl::NotFoundError(StrCat("no RESULT line in ", log));
  nlohmann::json result = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return absl::DataLossError(StrCat("malformed RESULT line in ", log));
  return result;
}

// The last lines of a log, for error messages.
std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size();
       ++i) {
    out += "\n  " + all[i];
  }
  return out;
}

}  // namespace

void InstallCancelHandlers() { HandleSignals(OnSignal, {SIGINT, SIGTERM}); }

int CancelSignal() { return g_signal.load(); }

StatusOr<std::string> TrainerProgram() {
  std::filesystem::path path =
      std::filesystem::path(SelfExecutable()).parent_path() / "graphsage_train_dist";
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(StrCat(path.string(),
                                      " is missing: build the graphsage_train_dist target "
                                      "(scripts/build.sh builds everything)"));
  }
  return path.string();
}

StatusOr<std::vector<std::string>> PythonExample() {
  std::filesystem::path script = std::filesystem::path(TESSERA_SOURCE_DIR) /
                                 "examples/python/graphsage/node_classification.py";
  if (!std::filesystem::exists(script)) {
    return absl::NotFoundError(StrCat(script.string(), " is missing"));
  }
  // This build's package first (the installed one may be older).
  std::filesystem::path package =
      std::filesystem::path(SelfExecutable()).parent_path().parent_path() / "python";
  if (std::filesystem::exists(package / "tessera")) {
    const char* old = std::getenv("PYTHONPATH");
    std::string value = package.string() + (old && *old ? StrCat(":", old) : "");
    setenv("PYTHONPATH", value.c_str(), 1);
  }
  return std::vector<std::string>{TESSERA_PYTHON, script.string()};
}

StatusOr<nlohmann::json> RunTrainJob(const TrainJobOptions& o) {
  InstallCancelHandlers();
  std::vector<std::string> argv = o.program;
  if (argv.empty()) {
    ASSIGN_OR_RETURN(std::string program, TrainerProgram());
    argv.push_back(program);
  }
  // Exactly o.samplers threads (0: inline), standalone and launched alike:
  // a launched trainer's default for --num-samplers 0 is one thread.
  argv.insert(argv.end(), {"--num-workers", std::to_string(o.samplers)});
  RETURN_IF_ERROR(MakeDirs(o.workdir));
  argv.insert(argv.end(), {"--graph-name", o.graph_name, "--part-config", o.part_config});
  if (o.capture) argv.push_back("--json");
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  const Deadline deadline = Deadline::InSeconds(o.timeout_s);
  if (o.standalone) {
    std::string log = o.capture ? o.workdir + "/standalone.log" : "";
    SpawnOptions spawn{.argv = argv, .log_path = log};
    ASSIGN_OR_RETURN(Process trainer, Process::Spawn(spawn));
    while (!trainer.Poll()) {
      if (g_cancel.load()) {
        trainer.Stop();
        return absl::CancelledError("interrupted; the trainer was stopped");
      }
      if (deadline.Expired()) {
        trainer.Stop();
        return absl::DeadlineExceededError(
            StrCat("the standalone trainer ran past ", o.timeout_s, " s; stopped"));
      }
      StatusOr<int> code = trainer.Wait(Deadline::InSeconds(0.2));
      if (code.ok()) break;
    }
    if (trainer.exit_code() != 0) {
      return absl::InternalError(
          StrCat("the standalone trainer exited with code ", trainer.exit_code(),
                 log.empty() ? "" : StrCat(" (log ", log, "):", Tail(log, 15))));
    }
    if (log.empty()) return nlohmann::json::object();
    return ResultOf(log);
  }
  launcher::LocalJobOptions job_options{.tessera_binary = SelfExecutable(),
                                        .part_config = o.part_config,
                                        .workdir = o.workdir,
                                        .clients_per_machine = o.trainers_per_machine,
                                        .num_samplers = o.samplers,
                                        .client_argv = argv,
                                        .client_log_dir = o.capture ? o.workdir : "",
                                        .encryption = o.encryption};
  ASSIGN_OR_RETURN(std::unique_ptr<launcher::LocalJob> job, launcher::LocalJob::Start(job_options));
  spdlog::info("job {}: {} machine(s) ready, {} trainer(s) each", job->job_id(),
               job->num_machines(), o.trainers_per_machine);
  StatusOr<launcher::JobResult> waited = job->Wait(deadline, &g_cancel);
  if (g_cancel.load()) {
    return absl::CancelledError(
        StrCat("interrupted (signal ", g_signal.load(), "); every process of the job was stopped"));
  }
  ASSIGN_OR_RETURN(launcher::JobResult result, std::move(waited));
  const std::string log0 = o.workdir + "/client-0.log";
  if (!result.ok()) {
    std::string detail =
        result.first_failure.empty() ? "a process of the job failed" : result.first_failure;
    if (o.capture) {
      for (size_t rank = 0; rank < result.client_exit_codes.size(); ++rank) {
        if (result.client_exit_codes[rank] == 0) continue;
        std::string log = StrCat(o.workdir, "/client-", rank, ".log");
        detail += StrCat("\n trainer ", rank, " (log ", log, "):", Tail(log, 10));
        break;
      }
    }
    return absl::InternalError(StrCat("training job failed: ", detail));
  }
  if (!o.capture) return nlohmann::json::object();
  return ResultOf(log0);
}

}  // namespace tessera::tools
