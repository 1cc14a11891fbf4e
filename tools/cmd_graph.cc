// `tessera partition`, `tessera inspect` and `tessera generate`.
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>

#include "spdlog/spdlog.h"
#include "src/graph/generator.h"
#include "src/graph/typed_generator.h"
#include "src/partition/inspect.h"
#include "src/partition/partition.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/graph/readers.h"
#include "tools/commands.h"

namespace tessera::tools {

CLI::Validator Seconds(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < lo || v > hi) {
          return StrCat("must be a number of seconds in [", lo, ", ", hi, "], got '", text, "'");
        }
        return "";
      },
      StrCat("SECONDS in [", lo, ", ", hi, "]"));
}

CLI::Validator Seed() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
          return StrCat("must be an integer in [0, 2^64), got '", text, "'");
        }
        return "";
      },
      "SEED in [0, 2^64)");
}

void AddReadFlags(CLI::App* sub, ReadFlags* flags) {
  sub->add_option("--format", flags->format, "Input format: auto, npy, csv, ogb")
      ->capture_default_str();
  sub->add_option("--split", flags->split, "OGB split name (default: public or the only one)");
  sub->add_flag("--undirected", flags->undirected, "Add the reverse of every edge");
  sub->add_flag("--remove-self-loops", flags->remove_self_loops, "Drop edges i -> i");
  sub->add_flag("--remove-duplicates", flags->remove_duplicates, "Drop repeated (src, dst) pairs");
}

StatusOr<ReadOptions> MakeReadOptions(const ReadFlags& flags) {
  ReadOptions read;
  ASSIGN_OR_RETURN(read.format, ParseGraphFormat(flags.format));
  read.split = flags.split;
  read.add_reverse_edges = flags.undirected;
  read.remove_self_loops = flags.remove_self_loops;
  read.remove_duplicate_edges = flags.remove_duplicates;
  return read;
}

void AddPartitionFlags(CLI::App* sub, PartitionOptions* o, std::string* method,
                       const std::string& partitioner) {
  const bool metis = partitioner == "METIS";
  const std::string per_rank = metis ? "" : " per rank";
  const std::string memory = metis ? "METIS holds about 60 bytes per edge"
                                   : "PT-Scotch holds about 250 bytes per arc it gets";
  sub->add_option("--part-method,--part_method", *method, "metis (" + partitioner + ") or random")
      ->capture_default_str();
  sub->add_option("--num-hops,--num_hops", o->num_hops, "HALO hops (0 = no HALO)")
      ->capture_default_str();
  sub->add_option("--balance-ntypes,--balance_ntypes", o->balance_ntypes,
                  "Node array whose values are balanced across parts (e.g. train_mask)");
  sub->add_flag("--balance-edges,--balance_edges", o->balance_edges,
                "Balance edges (in-degree) across parts too");
  sub->add_flag("--return-mapping,--return_mapping", o->return_mapping,
                "Write orig_nids.npy and orig_eids.npy (new id -> original id)");
  sub->add_option("--num-trainers-per-machine,--num_trainers_per_machine",
                  o->num_trainers_per_machine,
                  "Split each part further for this many trainers (node array trainer_id)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  sub->add_option("--coarsening", o->coarsening,
                  "part_method metis: contract the graph by label propagation until it has this "
                  "many times fewer arcs before " +
                      partitioner +
                      " partitions it, then refine the projected parts (1: no contraction; " +
                      memory + "); another output than without")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  sub->add_option("--coarsen-min-arcs", o->coarsen_min_arcs,
                  "part_method metis: no contraction of graphs with at most this many arcs" +
                      per_rank + ", nor below it")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Random seed (of the partitioner and random assignment)")
      ->capture_default_str()
      ->check(Seed());
}

Command RegisterPartition(CLI::App& app) {
  struct Flags {
    std::string input, graph_name, out, part_method = "metis";
    int num_parts = 0;
    PartitionOptions options;
    ReadFlags read;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("partition", "Partition a graph for distributed training");
  sub->add_option("--input,-i", f->input,
                  "Graph: npy folder (src.npy, dst.npy, <name>.npy...), OGB folder, or CSV/TSV "
                  "edge list (.gz ok)")
      ->required();
  sub->add_option("--graph-name,--graph_name", f->graph_name, "Name of the graph")->required();
  sub->add_option("--num-parts,--num_parts", f->num_parts, "Number of partitions (machines)")
      ->required();
  sub->add_option("--out,--output,--out-path", f->out, "Output folder")->required();
  AddPartitionFlags(sub, &f->options, &f->part_method, "METIS");
  sub->add_option("--objtype", f->options.objtype, "METIS objective: cut or vol")
      ->capture_default_str();
  sub->add_option("--metis-iterations", f->options.metis_iterations,
                  "METIS refinement iterations per level (more: better cut, slower)")
      ->capture_default_str();
  sub->add_option("--metis-cuts", f->options.metis_cuts,
                  "Independent METIS partitionings, best kept (more: better cut, slower)")
      ->capture_default_str();
  AddReadFlags(sub, &f->read);
  return {sub, [f] {
            Stopwatch watch;
            auto read = MakeReadOptions(f->read);
            if (!read.ok()) return ReportError(read.status());
            PartitionOptions options = f->options;
            auto method = ParsePartMethod(f->part_method);
            if (!method.ok()) return ReportError(method.status());
            options.part_method = *method;
            auto graph = ReadGraph(f->input, *read);
            if (!graph.ok()) return ReportError(graph.status());
            auto result =
                PartitionGraph(std::move(*graph), f->graph_name, f->num_parts, f->out, options);
            if (!result.ok()) return ReportError(result.status());
            spdlog::info("wrote {}", result->config_path);
            ReportFinish("partition", watch.Seconds());
            return 0;
          }};
}

Command RegisterInspect(CLI::App& app) {
  struct Flags {
    std::string config;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("inspect", "Print statistics of a partitioned graph");
  sub->add_option("config", f->config, "Partition config (<out>/<graph_name>.json)")->required();
  sub->add_flag("--json", f->json, "Print JSON instead of a table");
  return {sub, [f] {
            auto inspection = InspectPartitions(f->config);
            if (!inspection.ok()) return ReportError(inspection.status());
            std::fputs((f->json ? inspection->ToJson() + "\n" : inspection->ToText()).c_str(),
                       stdout);
            return 0;
          }};
}

Command RegisterGenerate(CLI::App& app) {
  struct Flags {
    GenerateOptions options;
    TypedGenerateOptions hetero_options;
    std::string out;
    bool hetero = false;
    double test_fraction = 0;
  };
  auto f = std::make_shared<Flags>();
  GenerateOptions& o = f->options;
  CLI::App* sub = app.add_subcommand(
      "generate",
      "Write a synthetic node-classification graph (degree-corrected SBM, npy layout; with "
      "--hetero an ogbn-mag shaped heterograph, see docs/hetero-input.md)");
  sub->add_option("--out,-o", f->out, "Output folder")->required();
  sub->add_flag("--hetero", f->hetero,
                "Heterogeneous graph shaped like ogbn-mag (paper, author, institution, "
                "field_of_study; 4 relations and their reverses); the defaults below marked "
                "[hetero] apply");
  CLI::Option* nodes =
      sub->add_option("--nodes,--num-nodes", o.num_nodes,
                      "Number of nodes (all types; [hetero] default 1939743 = ogbn-mag)")
          ->capture_default_str();
  CLI::Option* edges = sub->add_option("--edges", o.num_undirected_edges,
                                       "Number of undirected edges (each is stored in both "
                                       "directions; not with --hetero: edges follow --num-nodes)")
                           ->capture_default_str();
  CLI::Option* feat_dim =
      sub->add_option("--feat-dim", o.feat_dim, "Feature dimension ([hetero] 128)")
          ->capture_default_str();
  CLI::Option* classes =
      sub->add_option("--classes,--num-classes", o.num_classes, "Number of classes ([hetero] 64)")
          ->capture_default_str();
  CLI::Option* homophily =
      sub->add_option("--homophily", o.homophily,
                      "Probability an edge stays inside its class ([hetero] 0.5, every relation)")
          ->capture_default_str();
  CLI::Option* noise =
      sub->add_option("--noise", o.noise, "Feature noise standard deviation ([hetero] 6)")
          ->capture_default_str();
  CLI::Option* power_law =
      sub->add_option("--power-law", o.power_law_exponent, "Pareto shape of node weights")
          ->capture_default_str();
  CLI::Option* train =
      sub->add_option("--train-frac", o.train_fraction, "Fraction of training nodes ([hetero] 0.6)")
          ->capture_default_str();
  CLI::Option* val =
      sub->add_option("--val-frac", o.val_fraction, "Fraction of validation nodes ([hetero] 0.1)")
          ->capture_default_str();
  CLI::Option* test = sub->add_option("--test-frac", f->test_fraction,
                                      "[hetero only] Fraction of test papers (default 0.1; "
                                      "without --hetero the test nodes are the rest)");
  CLI::Option* seed =
      sub->add_option("--seed", o.seed, "Random seed")->capture_default_str()->check(Seed());
  CLI::Option* threads =
      sub->add_option("--threads", o.num_threads, "Worker threads (0 = all cores)")
          ->capture_default_str()
          ->check(CLI::Range(0, 1024));
  return {sub, [=] {
            StatusOr<GenerateStats> stats;
            if (f->hetero) {
              if (edges->count() > 0) {
                return ReportError(absl::InvalidArgumentError(
                    "--edges does not apply with --hetero: each relation's edge count follows "
                    "--num-nodes (docs/hetero-input.md)"));
              }
              // Flags given override the heterogeneous defaults.
              const GenerateOptions& o = f->options;
              TypedGenerateOptions& h = f->hetero_options;
              if (nodes->count() > 0) h.num_nodes = o.num_nodes;
              if (feat_dim->count() > 0) h.feat_dim = o.feat_dim;
              if (classes->count() > 0) h.num_classes = o.num_classes;
              if (homophily->count() > 0) h.homophily = o.homophily;
              if (noise->count() > 0) h.noise = o.noise;
              if (power_law->count() > 0) h.power_law_exponent = o.power_law_exponent;
              if (train->count() > 0) h.train_fraction = o.train_fraction;
              if (val->count() > 0) h.val_fraction = o.val_fraction;
              if (test->count() > 0) h.test_fraction = f->test_fraction;
              if (seed->count() > 0) h.seed = o.seed;
              if (threads->count() > 0) h.num_threads = o.num_threads;
              stats = GenerateMagGraph(h, f->out);
            } else {
              if (test->count() > 0) {
                return ReportError(absl::InvalidArgumentError(
                    "--test-frac applies with --hetero only (without it the test nodes are the "
                    "rest)"));
              }
              stats = GenerateSbmGraph(f->options, f->out);
            }
            if (!stats.ok()) return ReportError(stats.status());
            spdlog::info("wrote {} nodes, {} edges, {} to {}", stats->num_nodes, stats->num_edges,
                         FormatBytes(stats->bytes_written), f->out);
            ReportFinish("generate", stats->seconds);
            return 0;
          }};
}

}  // namespace tessera::tools
