#include "src/graph/typed_generator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/graph/generator_util.h"
#include "src/graph/npy.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

// Random streams; fixed forever so that outputs stay reproducible. Per node
// type, the index is the type id; per relation chunk, the chunk.
enum Stream : uint64_t {
  kCommunities = 101,
  kWeights,
  kCentroids,
  kFeatures,
  kSplit,
  kRelation0 = 200,  // + forward relation id.
};
constexpr int64_t kEdgeChunk = 1 << 20;

// ogbn-mag's node types, in our type-id order, and their counts.
enum NodeType { kPaper, kAuthor, kInstitution, kField, kNumNodeTypes };
constexpr const char* kNodeTypeNames[] = {"paper", "author", "institution", "field_of_study"};
constexpr int64_t kMagNodes[] = {736389, 1134649, 8740, 59965};
constexpr int64_t kMagTotal = 1939743;

// A forward relation: `anchor` nodes are picked uniformly, `target` nodes by
// weight within the anchor's community (see typed_generator.h). Its
// ogbn-mag edge count, halved, per ogbn-mag anchor gives its average degree.
struct RelationSpec {
  const char* canonical;
  const char* reverse;
  NodeType anchor, target;
  bool anchor_is_src;
  int64_t mag_edges;
};
constexpr RelationSpec kRelations[] = {
    {"author:writes:paper", "paper:rev-writes:author", kPaper, kAuthor, false, 7145660},
    {"paper:cites:paper", "paper:rev-cites:paper", kPaper, kPaper, true, 5416271},
    {"paper:has_topic:field_of_study", "field_of_study:rev-has_topic:paper", kPaper, kField, true,
     7505078},
    {"author:affiliated_with:institution", "institution:rev-affiliated_with:author", kAuthor,
     kInstitution, true, 1043998},
};
constexpr int kNumRelations = 4;

// "src:rel:dst" -> "src__rel__dst", the folder of the layout.
std::string FolderOf(const std::string& canonical) {
  std::string folder;
  for (char ch : canonical) {
    if (ch == ':') {
      folder += "__";
    } else {
      folder += ch;
    }
  }
  return folder;
}

Status CheckOptions(const TypedGenerateOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  if (o.num_nodes < 1000 || o.num_nodes > (int64_t{1} << 32) - 1) {
    return bad("--num-nodes must be in [1000, 2^32) with --hetero, got ", o.num_nodes);
  }
  if (o.feat_dim < 0 || o.feat_dim > (1 << 20)) {
    return bad("--feat-dim must be in [0, 2^20], got ", o.feat_dim);
  }
  if (o.num_classes < 1) return bad("--num-classes must be >= 1, got ", o.num_classes);
  if (!(o.homophily >= 0 && o.homophily <= 1)) return bad("--homophily must be in [0, 1]");
  if (!(o.noise >= 0) || !std::isfinite(o.noise)) return bad("--noise must be finite and >= 0");
  if (!(o.power_law_exponent > 0) || !std::isfinite(o.power_law_exponent)) {
    return bad("--power-law must be finite and > 0");
  }
  if (!(o.train_fraction >= 0 && o.val_fraction >= 0 && o.test_fraction >= 0 &&
        o.train_fraction + o.val_fraction + o.test_fraction <= 1 + 1e-9)) {
    return bad("--train-frac, --val-frac and --test-frac must be >= 0 and sum to at most 1");
  }
  return absl::OkStatus();
}

// Nodes of one type: communities, and the power-law weights as alias tables
// over all of them and over the members of each community.
struct TypeModel {
  std::vector<int32_t> community;
  std::unique_ptr<AliasTable> global;
  std::vector<std::vector<uint32_t>> members;  // Per community.
  std::vector<AliasTable> by_community;
};

TypeModel BuildTypeModel(int64_t n, int64_t num_classes, const TypedGenerateOptions& o, int type) {
  TypeModel m;
  m.community.resize(n);
  std::vector<double> weight(n);
  Rng community_rng(o.seed, kCommunities, type), weight_rng(o.seed, kWeights, type);
  for (int64_t i = 0; i < n; ++i) {
    m.community[i] = static_cast<int32_t>(community_rng.Below(num_classes));
    weight[i] = std::pow(1.0 - weight_rng.Uniform(), -1.0 / o.power_law_exponent);
  }
  m.global = std::make_unique<AliasTable>(weight);
  m.members.resize(num_classes);
  for (int64_t i = 0; i < n; ++i) m.members[m.community[i]].push_back(static_cast<uint32_t>(i));
  m.by_community.reserve(num_classes);
  for (int64_t k = 0; k < num_classes; ++k) {
    std::vector<double> w;
    w.reserve(m.members[k].size());
    for (uint32_t v : m.members[k]) w.push_back(weight[v]);
    if (w.empty()) w.push_back(1.0);  // Never sampled: the community has no such node.
    m.by_community.emplace_back(w);
  }
  return m;
}

// Writes the forward relation `r` and its reverse, chunk by chunk.
Status WriteRelation(int r, int64_t num_edges, const std::vector<TypeModel>& models,
                     const TypedGenerateOptions& o, const std::string& out_dir,
                     const PartialPath& partial, int threads) {
  const RelationSpec& spec = kRelations[r];
  struct Files {
    NpyWriter src, dst;
  };
  std::vector<Files> files;
  for (const char* canonical : {spec.canonical, spec.reverse}) {
    const std::string dir = StrCat("edges/", FolderOf(canonical));
    RETURN_IF_ERROR(MakeDirs(StrCat(out_dir, "/", dir)));
    ASSIGN_OR_RETURN(auto src, NpyWriter::Create(partial(dir + "/src.npy"), DType::kInt64,
                                                 {num_edges}, NpyWriter::Mode::kPositional));
    ASSIGN_OR_RETURN(auto dst, NpyWriter::Create(partial(dir + "/dst.npy"), DType::kInt64,
                                                 {num_edges}, NpyWriter::Mode::kPositional));
    files.push_back({std::move(src), std::move(dst)});
  }
  const TypeModel& anchors = models[spec.anchor];
  const TypeModel& targets = models[spec.target];
  const uint64_t num_anchors = anchors.community.size();
  const bool no_loops = spec.anchor == spec.target;
  const int64_t chunks = (num_edges + kEdgeChunk - 1) / kEdgeChunk;
  Progress progress(StrCat("generate ", spec.canonical), chunks, "chunks");
  RETURN_IF_ERROR(ParallelChunks(chunks, threads, &progress, [&](int64_t chunk) -> Status {
    Rng rng(o.seed, kRelation0 + r, static_cast<uint64_t>(chunk));
    const int64_t begin = chunk * kEdgeChunk, end = std::min(num_edges, begin + kEdgeChunk);
    std::vector<int64_t> a(end - begin), b(end - begin);
    for (int64_t i = 0; i < end - begin; ++i) {
      const int64_t u = static_cast<int64_t>(rng.Below(num_anchors));
      const int32_t k = anchors.community[u];
      const auto& members = targets.members[k];
      int64_t v = u;
      for (int attempt = 0; attempt == 0 || (no_loops && v == u); ++attempt) {
        const bool same =
            attempt < 16 && members.size() > (no_loops ? 1u : 0u) && rng.Uniform() < o.homophily;
        v = same ? members[targets.by_community[k].Sample(rng)] : targets.global->Sample(rng);
      }
      a[i] = u;
      b[i] = v;
    }
    const std::vector<int64_t>& s = spec.anchor_is_src ? a : b;
    const std::vector<int64_t>& d = spec.anchor_is_src ? b : a;
    RETURN_IF_ERROR(files[0].src.WriteRowsAt(begin, s.data(), end - begin));
    RETURN_IF_ERROR(files[0].dst.WriteRowsAt(begin, d.data(), end - begin));
    RETURN_IF_ERROR(files[1].src.WriteRowsAt(begin, d.data(), end - begin));
    return files[1].dst.WriteRowsAt(begin, s.data(), end - begin);
  }));
  for (Files& f : files) {
    RETURN_IF_ERROR(f.src.Close());
    RETURN_IF_ERROR(f.dst.Close());
  }
  progress.Done();
  return absl::OkStatus();
}

StatusOr<GenerateStats> GenerateMagInto(const TypedGenerateOptions& o, const TypedShape& shape,
                                        const std::string& out_dir, const PartialPath& partial);

}  // namespace

StatusOr<TypedShape> MagShape(const TypedGenerateOptions& o) {
  RETURN_IF_ERROR(CheckOptions(o));
  TypedShape shape;
  // Rounded shares of ogbn-mag's counts; papers take the rest. num_nodes <
  // 2^32 and every count < 2^21, so the products fit int64.
  int64_t rest = o.num_nodes;
  for (int t = 0; t < kNumNodeTypes; ++t) {
    shape.ntypes.push_back(kNodeTypeNames[t]);
    const int64_t share = (o.num_nodes * kMagNodes[t] + kMagTotal / 2) / kMagTotal;
    shape.num_nodes.push_back(t == kPaper ? 0 : std::max<int64_t>(1, share));
    rest -= shape.num_nodes.back();
  }
  shape.num_nodes[kPaper] = rest;
  if (rest < o.num_classes) {
    return absl::InvalidArgumentError(StrCat("--num-classes (", o.num_classes,
                                             ") must not exceed the number of papers (", rest,
                                             " of --num-nodes ", o.num_nodes, ")"));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const RelationSpec& spec : kRelations) {
      shape.etypes.push_back(pass == 0 ? spec.canonical : spec.reverse);
      const int64_t n = shape.num_nodes[spec.anchor], mag = kMagNodes[spec.anchor];
      // n * mag_edges / mag / 2, rounded; n < 2^32 and mag_edges < 2^23.
      shape.num_edges.push_back((n * spec.mag_edges + mag) / (2 * mag));
    }
  }
  return shape;
}

StatusOr<GenerateStats> GenerateMagGraph(const TypedGenerateOptions& o,
                                         const std::string& out_dir) {
  ASSIGN_OR_RETURN(TypedShape shape, MagShape(o));
  // Every relation's arrays, the papers', then meta.json, which marks a
  // complete folder.
  std::vector<std::string> files;
  for (const RelationSpec& spec : kRelations) {
    for (const char* canonical : {spec.canonical, spec.reverse}) {
      for (const char* end : {"src.npy", "dst.npy"}) {
        files.push_back(StrCat("edges/", FolderOf(canonical), "/", end));
      }
    }
  }
  for (const char* name : {"feat", "label", "train_mask", "val_mask", "test_mask"}) {
    files.push_back(StrCat("nodes/paper/", name, ".npy"));
  }
  files.push_back("meta.json");
  double need = shape.num_nodes[kPaper] * (4.0 * o.feat_dim + 11);  // In double: no overflow.
  for (int r = 0; r < kNumRelations; ++r) need += 32.0 * shape.num_edges[r];
  return WriteGeneratorOutputs(out_dir, files, need, [&](const PartialPath& partial) {
    return GenerateMagInto(o, shape, out_dir, partial);
  });
}

namespace {

StatusOr<GenerateStats> GenerateMagInto(const TypedGenerateOptions& o, const TypedShape& shape,
                                        const std::string& out_dir, const PartialPath& partial) {
  Stopwatch watch;
  const int threads = ResolveThreads(o.num_threads);
  int64_t total_edges = 0;
  for (int64_t m : shape.num_edges) total_edges += m;
  spdlog::info(
      "generate --hetero: {} nodes ({} papers), {} edges in {} relations, {} classes, "
      "{}-dim paper features into {}",
      o.num_nodes, shape.num_nodes[kPaper], total_edges, shape.etypes.size(), o.num_classes,
      o.feat_dim, out_dir);

  std::vector<TypeModel> models;
  for (int t = 0; t < kNumNodeTypes; ++t) {
    models.push_back(BuildTypeModel(shape.num_nodes[t], o.num_classes, o, t));
  }
  for (int r = 0; r < kNumRelations; ++r) {
    RETURN_IF_ERROR(WriteRelation(r, shape.num_edges[r], models, o, out_dir, partial, threads));
    spdlog::info("{}: {} edges (and its reverse)", kRelations[r].canonical, shape.num_edges[r]);
  }

  // Papers: labels (their communities), features, the split.
  const int64_t papers = shape.num_nodes[kPaper];
  RETURN_IF_ERROR(MakeDirs(out_dir + "/nodes/paper"));
  std::vector<int64_t> label(models[kPaper].community.begin(), models[kPaper].community.end());
  models.clear();  // The alias tables are no longer needed.
  if (o.feat_dim > 0) {
    RETURN_IF_ERROR(
        WriteClassFeatures(partial("nodes/paper/feat.npy"), label,
                           ClassCentroids(o.num_classes, o.feat_dim, o.seed, kCentroids),
                           o.feat_dim, o.noise, o.seed, kFeatures, threads));
  }
  RETURN_IF_ERROR(WriteNpy(partial("nodes/paper/label.npy"), Array::From(label)));
  const auto num_train = static_cast<int64_t>(papers * o.train_fraction);
  const auto num_val = static_cast<int64_t>(papers * o.val_fraction);
  const int64_t num_test =
      std::min(papers - num_train - num_val, static_cast<int64_t>(papers * o.test_fraction));
  SplitMasks masks = MakeSplitMasks(papers, num_train, num_val, num_test, o.seed, kSplit);
  RETURN_IF_ERROR(WriteNpy(partial("nodes/paper/train_mask.npy"), masks.train));
  RETURN_IF_ERROR(WriteNpy(partial("nodes/paper/val_mask.npy"), masks.val));
  RETURN_IF_ERROR(WriteNpy(partial("nodes/paper/test_mask.npy"), masks.test));

  nlohmann::ordered_json ntypes = nlohmann::ordered_json::object();
  for (size_t t = 0; t < shape.ntypes.size(); ++t) ntypes[shape.ntypes[t]] = shape.num_nodes[t];
  nlohmann::ordered_json edges = nlohmann::ordered_json::object();
  for (size_t r = 0; r < shape.etypes.size(); ++r) edges[shape.etypes[r]] = shape.num_edges[r];
  nlohmann::ordered_json meta = {{"ntypes", ntypes},
                                 {"etypes", shape.etypes},
                                 {"num_edges", edges},
                                 {"feat_dim", o.feat_dim},
                                 {"num_classes", o.num_classes},
                                 {"homophily", o.homophily},
                                 {"noise", o.noise},
                                 {"power_law", o.power_law_exponent},
                                 {"seed", o.seed},
                                 {"generator", "tessera generate --hetero (ogbn-mag shaped)"}};
  RETURN_IF_ERROR(WriteFileAtomic(partial("meta.json"), meta.dump(1) + "\n"));

  GenerateStats stats;
  stats.num_nodes = o.num_nodes;
  stats.num_edges = total_edges;
  stats.seconds = watch.Seconds();
  return stats;
}

}  // namespace

}  // namespace tessera
