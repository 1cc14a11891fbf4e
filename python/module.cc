// File: python/module.cc
//
// tessera._C: the Python face of the C++ trainer API (include/tessera/*.h).
// The Python package (python/tessera/) gives it DGL's names and argument
// conventions; this file and loaders.cc (graph operations and loaders) only
// convert types, release the GIL around every call that can wait, and turn
// C++ errors into tessera.TesseraError.
//
// Ctrl-C. While a call waits with the GIL released, tessera's waits poll
// CheckInterrupt() (src/base/interrupt.h). The check installed here asks the
// interpreter, from the main thread only, whether a signal handler raised
// (SIGINT's raises KeyboardInterrupt); the wait then ends and the Python
// exception is raised in place of tessera's "interrupted" error.
#include <torch/csrc/DynamicTypes.h>
#include <torch/extension.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "python/module_internal.h"
#include "src/base/logging.h"
#include "src/dist/torch_dtype.h"
#include "src/kvstore/services.h"
#include "tessera/base/interrupt.h"
#include "tessera/dist.h"
#include "tessera/dist/embedding.h"
#include "tessera/nn.h"
#include "tessera/nn/aggregate.h"
#include "tessera/partition.h"

namespace tessera::pyext {
namespace {

// ------------------------------------------------------------ errors and waits

PyObject* g_error_type = nullptr;  // tessera.TesseraError
std::thread::id g_main_thread;

// The Python exception a signal handler raised during a wait (main thread
// only), until the waiting call returns and re-raises it.
PyObject* g_pending_type = nullptr;
PyObject* g_pending_value = nullptr;
PyObject* g_pending_tb = nullptr;

// Calls of this thread inside Wait() (WaitScopes alive).
thread_local int t_wait_depth = 0;

tessera::Status PythonInterruptCheck() {
  if (t_wait_depth == 0 || std::this_thread::get_id() != g_main_thread || !Py_IsInitialized()) {
    return absl::OkStatus();
  }
  if (g_pending_type != nullptr) {
    return absl::CancelledError("interrupted by a signal (KeyboardInterrupt)");
  }
  // At most every 50 ms: each check takes the GIL from Python threads.
  thread_local std::chrono::steady_clock::time_point last;
  const auto now = std::chrono::steady_clock::now();
  if (now - last < std::chrono::milliseconds(50)) return absl::OkStatus();
  last = now;
  PyGILState_STATE state = PyGILState_Ensure();
  bool raised = g_pending_type != nullptr;
  if (!raised && PyErr_CheckSignals() != 0) {
    PyErr_Fetch(&g_pending_type, &g_pending_value, &g_pending_tb);
    raised = true;
  }
  PyGILState_Release(state);
  return raised ? absl::CancelledError("interrupted by a signal (KeyboardInterrupt)")
                : absl::OkStatus();
}

// ------------------------------------------------------------ conversions

dist::PartPolicy ParsePolicy(const std::string& policy) {
  if (policy.empty() || policy == "auto") return dist::PartPolicy::kAuto;
  if (policy == "node" || policy.rfind("node~", 0) == 0) return dist::PartPolicy::kNode;
  if (policy == "edge" || policy.rfind("edge~", 0) == 0) return dist::PartPolicy::kEdge;
  throw dist::Error(
      fmt::format("part_policy must be \"node\" or \"edge\" (or None), got \"{}\"", policy));
}

const char* PolicyName(dist::PartPolicy p) {
  return p == dist::PartPolicy::kEdge ? "edge" : "node";
}

dist::Init MakeInit(const std::string& kind, double a, double b, uint64_t seed) {
  if (kind == "zeros") return dist::Init::Zeros();
  if (kind == "uniform") return dist::Init::Uniform(a, b, seed);
  if (kind == "normal") return dist::Init::Normal(a, b, seed);
  throw dist::Error(fmt::format("unknown init \"{}\" (zeros, uniform, normal)", kind));
}

tessera::Array ToArray(const torch::Tensor& t, const std::string& what) {
  torch::Tensor c = t.contiguous().cpu();
  std::vector<int64_t> shape = c.sizes().vec();
  tessera::Array a = tessera::Array::Empty(dist::ToDType(c.scalar_type(), what), shape);
  if (c.nbytes() > 0) std::memcpy(a.mutable_data(), c.data_ptr(), c.nbytes());
  return a;
}

// A copy of `a` as a tensor (arrays may be memory-mapped files).
torch::Tensor ToTensor(const tessera::Array& a) {
  torch::Tensor t = torch::empty(a.shape(), torch::TensorOptions().dtype(dist::ToTorch(a.dtype())));
  if (a.nbytes() > 0) std::memcpy(t.data_ptr(), a.data(), a.nbytes());
  return t;
}

// ------------------------------------------------------------ partitioning

tessera::Graph GraphFrom(int64_t num_nodes, const torch::Tensor& src, const torch::Tensor& dst,
                         const std::map<std::string, torch::Tensor>& ndata,
                         const std::map<std::string, torch::Tensor>& edata) {
  tessera::Graph g;
  g.num_nodes = num_nodes;
  g.src = ToArray(src.to(torch::kInt64), "src");
  g.dst = ToArray(dst.to(torch::kInt64), "dst");
  for (const auto& [name, t] : ndata) g.node_data.emplace(name, ToArray(t, "ndata " + name));
  for (const auto& [name, t] : edata) g.edge_data.emplace(name, ToArray(t, "edata " + name));
  ThrowIfError(g.Validate("partition_graph input"), "partition_graph");
  return g;
}

py::dict ArraysDict(const std::map<std::string, tessera::Array>& arrays) {
  py::dict d;
  for (const auto& [name, a] : arrays) d[py::str(name)] = ToTensor(a);
  return d;
}

torch::Tensor Offsets(const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); }

// Binds node_split / edge_split over a local tensor or a DistTensor mask.
template <typename Items>
void DefSplit(py::module_& m, const char* name,
              torch::Tensor (*split)(const Items&, const tessera::PartitionBook&,
                                     const dist::SplitOptions&)) {
  m.def(
      name,
      [split](const Items& items, const tessera::PartitionBook& book, bool force_even,
              std::optional<torch::Tensor> trainer_ids, int rank, int num_trainers,
              const std::string& type) {
        dist::SplitOptions o;
        o.type = type;
        o.force_even = force_even;
        if (trainer_ids) o.trainer_ids = *trainer_ids;
        o.rank = rank;
        o.num_trainers = num_trainers;
        return Wait([&] { return split(items, book, o); });
      },
      py::arg("items"), py::arg("book"), py::arg("force_even"), py::arg("trainer_ids"),
      py::arg("rank"), py::arg("num_trainers"), py::arg("type") = "");
}

py::tuple EdgeTypeTuple(const tessera::EdgeType& e) {
  return py::make_tuple(e.src_type, e.relation, e.dst_type);
}

// Applies f(i) -> (type, per-type id) to every id, checking the range first.
template <typename F>
py::tuple MapToPerType(const torch::Tensor& ids, int64_t total, F f) {
  torch::Tensor in = ids.to(torch::kInt64).contiguous();
  torch::Tensor types = torch::empty_like(in), per = torch::empty_like(in);
  const int64_t* a = in.data_ptr<int64_t>();
  int64_t* t = types.data_ptr<int64_t>();
  int64_t* q = per.data_ptr<int64_t>();
  for (int64_t i = 0; i < in.numel(); ++i) {
    if (a[i] < 0 || a[i] >= total)
      throw dist::Error(fmt::format("id {} out of range [0, {})", a[i], total));
    auto [ty, id] = f(a[i]);
    t[i] = ty;
    q[i] = id;
  }
  return py::make_tuple(types, per);
}

template <typename F>
torch::Tensor MapToHomo(const torch::Tensor& ids, int64_t total, F f) {
  torch::Tensor in = ids.to(torch::kInt64).contiguous();
  torch::Tensor out = torch::empty_like(in);
  const int64_t* a = in.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < in.numel(); ++i) {
    if (a[i] < 0 || a[i] >= total)
      throw dist::Error(fmt::format("per-type id {} out of range [0, {})", a[i], total));
    o[i] = f(a[i]);
  }
  return out;
}

}  // namespace

WaitScope::WaitScope() { ++t_wait_depth; }
WaitScope::~WaitScope() { --t_wait_depth; }

void RaisePendingInterrupt() {
  // A signal that arrived during the call but after its last check (or that
  // made it fail, e.g. EINTR) wins over the call's own result too.
  if (g_pending_type == nullptr && std::this_thread::get_id() == g_main_thread &&
      PyErr_CheckSignals() != 0) {
    throw py::error_already_set();
  }
  if (g_pending_type == nullptr) return;
  PyErr_Restore(g_pending_type, g_pending_value, g_pending_tb);
  g_pending_type = g_pending_value = g_pending_tb = nullptr;
  throw py::error_already_set();
}

void ThrowIfError(const tessera::Status& status, const std::string& what) {
  if (!status.ok()) throw dist::Error(fmt::format("{}: {}", what, std::string(status.message())));
}

}  // namespace tessera::pyext

PYBIND11_MODULE(_C, m) {
  using namespace tessera::pyext;  // NOLINT: this module's helpers.
  m.doc() = "tessera's C++ core (use the tessera package, not this module)";
  g_main_thread = std::this_thread::get_id();
  tessera::SetInterruptCheck(&PythonInterruptCheck);

  static py::exception<dist::Error> error(m, "TesseraError", PyExc_RuntimeError);
  g_error_type = error.ptr();
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const c10::Error& e) {
      PyErr_SetString(g_error_type, e.what_without_backtrace());
    } catch (const py::builtin_exception& e) {
      e.set_error();
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError,
                      "out of memory (std::bad_alloc): the call needs more memory than this "
                      "process can get");
    } catch (const std::exception& e) {
      PyErr_SetString(g_error_type, e.what());
    }
  });

  // At interpreter exit (registered by the package): every sampler thread of
  // dropped loaders is joined.
  m.def("_shutdown", &ShutdownLoaders);

  // ---------------------------------------------------------- context
  m.def(
      "initialize",
      [](const std::string& ip_config, double call_timeout_s, double connect_timeout_s,
         double barrier_timeout_s) {
        dist::InitOptions o;
        o.call_timeout_s = call_timeout_s;
        o.connect_timeout_s = connect_timeout_s;
        o.barrier_timeout_s = barrier_timeout_s;
        auto ctx = Wait([&] { return dist::initialize(ip_config, o); });
        py::dict d;
        d["standalone"] = ctx->standalone();
        d["rank"] = ctx->rank();
        d["world_size"] = ctx->world_size();
        d["machine_id"] = ctx->machine_id();
        d["num_samplers"] = ctx->num_samplers();
        d["part_config"] = ctx->part_config();
        d["master_addr"] = ctx->master_addr();
        d["master_port"] = ctx->master_port();
        d["host_address"] = ctx->host_address();
        return d;
      },
      py::arg("ip_config") = "", py::arg("call_timeout_s") = 30.0,
      py::arg("connect_timeout_s") = 600.0, py::arg("barrier_timeout_s") = 1800.0);
  m.def("exit_client", [] { Wait([] { dist::exit_client(); }); });
  m.def("manual_seed", &dist::manual_seed, py::arg("seed"));

  // ---------------------------------------------------------- partition book
  py::class_<tessera::PartitionBook>(m, "PartitionBook")
      .def("num_partitions", &tessera::PartitionBook::num_partitions)
      .def_property_readonly("partid", &tessera::PartitionBook::part_id)
      .def("num_nodes", &tessera::PartitionBook::num_nodes)
      .def("num_edges", &tessera::PartitionBook::num_edges)
      .def("node_offsets",
           [](const tessera::PartitionBook& b) { return Offsets(b.node_offsets()); })
      .def("edge_offsets",
           [](const tessera::PartitionBook& b) { return Offsets(b.edge_offsets()); })
      .def("ntypes", [](const tessera::PartitionBook& b) { return b.ntypes(); })
      .def("etypes",
           [](const tessera::PartitionBook& b) {
             py::list l;
             for (const auto& e : b.etypes()) l.append(EdgeTypeTuple(e));
             return l;
           })
      .def("typed_node_offsets",
           [](const tessera::PartitionBook& b, int t) {
             if (t < 0 || t >= b.num_ntypes()) throw dist::Error("node type id out of range");
             return Offsets(b.TypedNodeOffsets(t));
           })
      .def("typed_edge_offsets",
           [](const tessera::PartitionBook& b, int r) {
             if (r < 0 || r >= b.num_etypes()) throw dist::Error("edge type id out of range");
             return Offsets(b.TypedEdgeOffsets(r));
           })
      .def("map_to_per_ntype",
           [](const tessera::PartitionBook& b, const torch::Tensor& ids) {
             return MapToPerType(ids, b.num_nodes(), [&](int64_t i) { return b.MapToPerNtype(i); });
           })
      .def("map_to_per_etype",
           [](const tessera::PartitionBook& b, const torch::Tensor& ids) {
             return MapToPerType(ids, b.num_edges(), [&](int64_t i) { return b.MapToPerEtype(i); });
           })
      .def("map_to_homo_nid",
           [](const tessera::PartitionBook& b, const torch::Tensor& ids, int t) {
             if (t < 0 || t >= b.num_ntypes()) throw dist::Error("node type id out of range");
             return MapToHomo(ids, b.NumNodesOfType(t),
                              [&](int64_t i) { return b.MapToHomoNid(t, i); });
           })
      .def("map_to_homo_eid", [](const tessera::PartitionBook& b, const torch::Tensor& ids, int r) {
        if (r < 0 || r >= b.num_etypes()) throw dist::Error("edge type id out of range");
        return MapToHomo(ids, b.NumEdgesOfType(r), [&](int64_t i) { return b.MapToHomoEid(r, i); });
      });

  // ---------------------------------------------------------- DistTensor
  py::class_<dist::DistTensor, std::shared_ptr<dist::DistTensor>>(m, "DistTensor")
      .def(py::init([](std::vector<int64_t> shape, py::object dtype, const std::string& name,
                       const std::string& init, double a, double b, uint64_t seed,
                       const std::string& policy, bool persistent, const std::string& type) {
             torch::Dtype t = torch::python::detail::py_object_to_dtype(dtype);
             return Wait([&] {
               return MakeReleasing<dist::DistTensor>(std::move(shape), t, name,
                                                      MakeInit(init, a, b, seed),
                                                      ParsePolicy(policy), persistent, type);
             });
           }),
           py::arg("shape"), py::arg("dtype"), py::arg("name") = "", py::arg("init") = "zeros",
           py::arg("a") = 0.0, py::arg("b") = 1.0, py::arg("seed") = 0, py::arg("policy") = "",
           py::arg("persistent") = false, py::arg("type") = "")
      .def_property_readonly("type_name", &dist::DistTensor::type_name)
      .def("pull", [](const dist::DistTensor& t,
                      const torch::Tensor& ids) { return Wait([&] { return t[ids]; }); })
      .def("set", [](const dist::DistTensor& t, const torch::Tensor& ids,
                     const torch::Tensor& rows) { Wait([&] { t.set(ids, rows); }); })
      .def("add", [](const dist::DistTensor& t, const torch::Tensor& ids,
                     const torch::Tensor& rows) { Wait([&] { t.add(ids, rows); }); })
      .def_property_readonly("shape", [](const dist::DistTensor& t) { return t.shape(); })
      .def_property_readonly("dtype",
                             [](const dist::DistTensor& t) {
                               return py::reinterpret_borrow<py::object>(
                                   reinterpret_cast<PyObject*>(torch::getTHPDtype(t.dtype())));
                             })
      .def_property_readonly("name", &dist::DistTensor::name)
      .def_property_readonly("key", &dist::DistTensor::key)
      .def_property_readonly("created", &dist::DistTensor::created)
      .def("delete", [](const dist::DistTensor& t) { Wait([&] { t.Delete(); }); })
      .def("id_range", &dist::DistTensor::id_range, py::arg("part"))
      .def("local_partition",
           [](const dist::DistTensor& t) { return Wait([&] { return t.local_partition(); }); })
      .def_property_readonly("policy",
                             [](const dist::DistTensor& t) { return PolicyName(t.part_policy()); })
      // Every trainer's flag in, whether any trainer raised one out: a
      // barrier that carries a failure to those who did not see it.
      .def("barrier_any",
           [](const dist::DistTensor& t, bool failed) {
             int64_t any = 0;
             Wait([&] {
               tessera::StatusOr<int64_t> max = t.store().job().BarrierMax(failed ? 1 : 0);
               ThrowIfError(max.status(), "barrier");
               any = *max;
             });
             return any != 0;
           })
      .def("book", [](const dist::DistTensor& t) { return t.store().book(); });

  // ---------------------------------------------------------- DistGraph
  auto schemes = [](const std::map<std::string, dist::AttrScheme>& s) {
    py::dict d;
    for (const auto& [name, scheme] : s) {
      d[py::str(name)] = py::make_tuple(
          scheme.shape, py::reinterpret_borrow<py::object>(
                            reinterpret_cast<PyObject*>(torch::getTHPDtype(scheme.dtype))));
    }
    return d;
  };
  PyDistGraph graph(m, "DistGraph");
  graph
      .def(py::init([](const std::string& name, const std::string& part_config) {
             return Wait([&] { return MakeReleasing<dist::DistGraph>(name, part_config); });
           }),
           py::arg("graph_name"), py::arg("part_config") = "")
      .def("num_nodes", [](const dist::DistGraph& g) { return g.num_nodes(); })
      .def("num_edges", [](const dist::DistGraph& g) { return g.num_edges(); })
      .def("graph_name", &dist::DistGraph::graph_name)
      .def("ndata", Waiting(&dist::DistGraph::ndata))
      .def("edata", Waiting(&dist::DistGraph::edata))
      .def("node_attr_schemes",
           [schemes](const dist::DistGraph& g) {
             return schemes(Wait([&] { return g.node_attr_schemes(); }));
           })
      .def("partition_book", &dist::DistGraph::partition_book)
      .def("ntypes", &dist::DistGraph::ntypes)
      .def("canonical_etypes",
           [](const dist::DistGraph& g) {
             py::list l;
             for (const auto& e : g.canonical_etypes()) l.append(EdgeTypeTuple(e));
             return l;
           })
      .def("num_nodes_of",
           Waiting(py::overload_cast<const std::string&>(&dist::DistGraph::num_nodes, py::const_)))
      .def("num_edges_of",
           Waiting(py::overload_cast<const std::string&>(&dist::DistGraph::num_edges, py::const_)))
      .def("get_ntype_id", Waiting(&dist::DistGraph::get_ntype_id))
      .def("get_etype_id", Waiting(&dist::DistGraph::get_etype_id))
      .def("to_canonical_etype",
           [](const dist::DistGraph& g, const std::string& t) {
             return EdgeTypeTuple(Wait([&] { return g.to_canonical_etype(t); }));
           })
      .def(
          "type_data",
          [](const dist::DistGraph& g, bool node, const std::string& type,
             const std::string& name) {
            return Wait([&] { return node ? g.nodes(type).data(name) : g.edges(type).data(name); });
          })
      .def("type_schemes",
           [schemes](const dist::DistGraph& g, bool node, const std::string& type) {
             return schemes(
                 Wait([&] { return node ? g.nodes(type).schemes() : g.edges(type).schemes(); }));
           })
      .def("type_name_of",
           [](const dist::DistGraph& g, bool node, const std::string& type) {
             return Wait(
                 [&] { return node ? g.nodes(type).type_name() : g.edges(type).type_name(); });
           })
      .def("rank", &dist::DistGraph::rank)
      .def("barrier", [](const dist::DistGraph& g) { Wait([&] { g.barrier(); }); });
  DefGraphOperations(m, graph);

  // ---------------------------------------------------------- splitting work
  DefSplit<torch::Tensor>(m, "node_split", &dist::node_split);
  DefSplit<dist::DistTensor>(m, "node_split_dist", &dist::node_split);
  DefSplit<torch::Tensor>(m, "edge_split", &dist::edge_split);
  DefSplit<dist::DistTensor>(m, "edge_split_dist", &dist::edge_split);

  // ---------------------------------------------------------- loaders
  DefLoaders(m);

  // ---------------------------------------------------------- nn kernels
  // Index tensors as the kernels take them: contiguous int64.
  auto ids = [](const torch::Tensor& t) { return t.to(torch::kInt64).contiguous(); };
  // (Without aggregate()'s `transpose` argument, whose contents it trusts.)
  m.def(
      "aggregate",
      [ids](const torch::Tensor& indptr, const torch::Tensor& indices, const torch::Tensor& h,
            const std::string& reduce, std::optional<torch::Tensor> edge_weight) {
        return tessera::nn::aggregate(ids(indptr), ids(indices), h,
                                      tessera::nn::ParseReduce(reduce),
                                      edge_weight.value_or(torch::Tensor()));
      },
      py::arg("indptr"), py::arg("indices"), py::arg("h"), py::arg("reduce"),
      py::arg("edge_weight") = py::none());
  m.def(
      "narrow_linear",
      [](const torch::Tensor& x, const torch::Tensor& weight, std::optional<torch::Tensor> bias) {
        return tessera::nn::narrow_linear(x, weight, bias.value_or(torch::Tensor()));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none());
  m.def(
      "u_add_v",
      [ids](const torch::Tensor& indptr, const torch::Tensor& indices, const torch::Tensor& u,
            const torch::Tensor& v) {
        return tessera::nn::u_add_v(ids(indptr), ids(indices), u, v);
      },
      py::arg("indptr"), py::arg("indices"), py::arg("u"), py::arg("v"));
  m.def("edge_softmax", [ids](const torch::Tensor& indptr, const torch::Tensor& scores) {
    return tessera::nn::edge_softmax(ids(indptr), scores);
  });
  py::class_<tessera::nn::RelationGroups>(m, "RelationGroups")
      .def_readonly("pair_indptr", &tessera::nn::RelationGroups::pair_indptr)
      .def_readonly("pair_src", &tessera::nn::RelationGroups::pair_src)
      .def_readonly("pair_eid", &tessera::nn::RelationGroups::pair_eid)
      .def_readonly("rel_pairs", &tessera::nn::RelationGroups::rel_pairs)
      .def_readonly("dst_indptr", &tessera::nn::RelationGroups::dst_indptr)
      .def_readonly("dst_pairs", &tessera::nn::RelationGroups::dst_pairs);
  m.def("group_by_relation",
        [ids](const torch::Tensor& src, const torch::Tensor& dst, const torch::Tensor& etypes,
              int64_t num_src, int64_t num_dst, int64_t num_rels) {
          return tessera::nn::GroupByRelation(ids(src), ids(dst), ids(etypes), num_src, num_dst,
                                              num_rels);
        });
  m.def(
      "relation_aggregate",
      [](const tessera::nn::RelationGroups& groups, const torch::Tensor& h,
         const std::vector<torch::Tensor>& weights, std::optional<torch::Tensor> norm) {
        return tessera::nn::relation_aggregate(groups, h, weights, norm.value_or(torch::Tensor()));
      },
      py::arg("groups"), py::arg("h"), py::arg("weights"), py::arg("norm") = py::none());
  m.def("dropout", &tessera::nn::dropout, py::arg("x"), py::arg("p"), py::arg("training") = true);

  // ---------------------------------------------------------- embeddings
  py::class_<dist::DistEmbedding>(m, "DistEmbedding")
      .def(py::init([](int64_t num, int64_t dim, const std::string& name, const std::string& init,
                       double a, double b, uint64_t seed, const std::string& policy,
                       const std::string& type) {
             return Wait([&] {
               return dist::DistEmbedding(num, dim, name, MakeInit(init, a, b, seed),
                                          ParsePolicy(policy), type);
             });
           }),
           py::arg("num"), py::arg("dim"), py::arg("name"), py::arg("init"), py::arg("a"),
           py::arg("b"), py::arg("seed"), py::arg("policy"), py::arg("type") = "")
      .def("forward", [](dist::DistEmbedding& e,
                         const torch::Tensor& ids) { return Wait([&] { return e.forward(ids); }); })
      .def("train", &dist::DistEmbedding::train)
      .def_property_readonly("weight", &dist::DistEmbedding::weight)
      .def_property_readonly("num_embeddings", &dist::DistEmbedding::num_embeddings)
      .def_property_readonly("embedding_dim", &dist::DistEmbedding::embedding_dim)
      .def_property_readonly("name", &dist::DistEmbedding::name)
      .def("save", [](const dist::DistEmbedding& e,
                      const std::string& path) { Wait([&] { e.save(path); }); })
      .def("load", [](const dist::DistEmbedding& e, const std::string& path) {
        Wait([&] { e.load(path); });
      });
  py::class_<dist::SparseOptimizer>(m, "SparseOptimizer")
      .def("step", [](dist::SparseOptimizer& o) { Wait([&] { o.step(); }); })
      .def("zero_grad", &dist::SparseOptimizer::zero_grad)
      .def("save", [](const dist::SparseOptimizer& o,
                      const std::string& prefix) { Wait([&] { o.save(prefix); }); })
      .def("load", [](const dist::SparseOptimizer& o,
                      const std::string& prefix) { Wait([&] { o.load(prefix); }); })
      .def("tensors", [](const dist::SparseOptimizer& o) {
        std::vector<std::shared_ptr<dist::DistTensor>> out;
        for (const dist::DistTensor& t : o.tensors()) {
          out.push_back(MakeReleasing<dist::DistTensor>(t));
        }
        return out;
      });
  // ---------------------------------------------------------- checkpoints
  // A Python function writing files into a checkpoint folder, called with
  // the GIL (the save runs without it); its error becomes the save's.
  auto writer = [](py::object fn) -> std::function<std::vector<std::string>(const std::string&)> {
    if (fn.is_none()) return {};
    return [fn](const std::string& folder) {
      py::gil_scoped_acquire gil;
      try {
        return fn(folder).cast<std::vector<std::string>>();
      } catch (py::error_already_set& e) {
        throw dist::Error(e.what());
      }
    };
  };
  m.def(
      "save_checkpoint",
      [writer](const dist::DistGraph& g, const std::string& path, int64_t step,
               std::vector<std::shared_ptr<dist::DistTensor>> tensors, bool persistent_tensors,
               const std::string& extra, py::object write_dense, py::object write_trainer,
               int keep) {
        dist::CheckpointContents contents{.persistent_tensors = persistent_tensors,
                                          .extra = extra,
                                          .write_dense = writer(write_dense),
                                          .write_trainer = writer(write_trainer)};
        for (const auto& t : tensors) contents.tensors.push_back(*t);
        Wait([&] { dist::SaveCheckpoint(g, path, step, contents, keep); });
      },
      py::arg("g"), py::arg("path"), py::arg("step"), py::arg("tensors"),
      py::arg("persistent_tensors"), py::arg("extra"), py::arg("write_dense"),
      py::arg("write_trainer"), py::arg("keep"));
  using Restored = dist::RestoredCheckpoint;
  py::class_<Restored>(m, "RestoredCheckpoint")
      .def_readonly("path", &Restored::path)
      .def_readonly("step", &Restored::step)
      .def_readonly("extra", &Restored::extra)
      .def_readonly("num_trainers", &Restored::num_trainers)
      .def_readonly("same_partitioning", &Restored::same_partitioning)
      .def_readonly("tensors", &Restored::tensors)
      .def_readonly("trainer_files", &Restored::trainer_files)
      .def_readonly("dense_files", &Restored::dense_files)
      // The verified bytes of the program's own files, as bytes (not str).
      .def_property_readonly("file_bytes", [](const Restored& r) {
        py::dict out;
        for (const auto& [name, bytes] : r.file_bytes) out[py::str(name)] = py::bytes(bytes);
        return out;
      });
  m.def("restore_checkpoint", [](const dist::DistGraph& g, const std::string& path) {
    return Wait([&] { return dist::RestoreCheckpoint(g, path); });
  });
  m.def("latest_checkpoint", &dist::Checkpoint::latest, py::arg("dir"));

  py::class_<dist::SparseAdagrad, dist::SparseOptimizer>(m, "SparseAdagrad")
      .def(py::init([](std::vector<dist::DistEmbedding> params, double lr, double eps) {
        return Wait([&] { return std::make_unique<dist::SparseAdagrad>(params, lr, eps); });
      }));
  py::class_<dist::SparseAdam, dist::SparseOptimizer>(m, "SparseAdam")
      .def(py::init([](std::vector<dist::DistEmbedding> params, double lr, double beta1,
                       double beta2, double eps) {
        return Wait([&] {
          return std::make_unique<dist::SparseAdam>(params, lr, std::make_pair(beta1, beta2), eps);
        });
      }));

  // ---------------------------------------------------------- partitioning
  py::class_<tessera::PartitionOptions>(m, "PartitionOptions")
      .def(py::init<>())
      .def_property(
          "part_method",
          [](const tessera::PartitionOptions& o) {
            return o.part_method == tessera::PartMethod::kMetis ? "metis" : "random";
          },
          [](tessera::PartitionOptions& o, const std::string& name) {
            auto method = tessera::ParsePartMethod(name);
            ThrowIfError(method.status(), "partition_graph");
            o.part_method = *method;
          })
      .def_readwrite("num_hops", &tessera::PartitionOptions::num_hops)
      .def_readwrite("balance_ntypes", &tessera::PartitionOptions::balance_ntypes)
      .def_readwrite("write_balance_array", &tessera::PartitionOptions::write_balance_array)
      .def_readwrite("balance_edges", &tessera::PartitionOptions::balance_edges)
      .def_readwrite("return_mapping", &tessera::PartitionOptions::return_mapping)
      .def_readwrite("num_trainers_per_machine",
                     &tessera::PartitionOptions::num_trainers_per_machine)
      .def_readwrite("objtype", &tessera::PartitionOptions::objtype)
      .def_readwrite("seed", &tessera::PartitionOptions::seed)
      .def_readwrite("coarsening", &tessera::PartitionOptions::coarsening)
      .def_readwrite("coarsen_min_arcs", &tessera::PartitionOptions::coarsen_min_arcs);
  m.def("partition_graph_path", [](const std::string& input, const std::string& graph_name,
                                   int num_parts, const std::string& out_path,
                                   const tessera::PartitionOptions& o) {
    Wait([&] {
      auto graph = tessera::read_graph(input);
      ThrowIfError(graph.status(), "partition_graph: reading " + input);
      ThrowIfError(tessera::partition_graph(*graph, graph_name, num_parts, out_path, o).status(),
                   "partition_graph");
    });
  });
  m.def("partition_graph_arrays",
        [](int64_t num_nodes, const torch::Tensor& src, const torch::Tensor& dst,
           const std::map<std::string, torch::Tensor>& ndata,
           const std::map<std::string, torch::Tensor>& edata, const std::string& graph_name,
           int num_parts, const std::string& out_path, const tessera::PartitionOptions& o) {
          tessera::Graph graph = GraphFrom(num_nodes, src, dst, ndata, edata);
          Wait([&] {
            ThrowIfError(
                tessera::partition_graph(graph, graph_name, num_parts, out_path, o).status(),
                "partition_graph");
          });
        });
  m.def("load_partition", [](const std::string& config, int part_id, bool load_node_feats,
                             bool load_edge_feats, bool load_graph) {
    tessera::LoadOptions o{load_graph, load_node_feats, load_edge_feats};
    auto p = Wait([&] {
      auto part = tessera::load_partition(config, part_id, o);
      ThrowIfError(part.status(), "load_partition");
      return *std::move(part);
    });
    py::dict d;
    d["part_id"] = p.part_id;
    d["graph_name"] = p.config.graph_name;
    d["typed"] = p.config.typed();
    d["node_feats"] = ArraysDict(p.node_data);
    d["edge_feats"] = ArraysDict(p.edge_data);
    d["book"] = py::cast(std::move(p.book));
    if (!load_graph) return d;
    d["nid"] = ToTensor(p.nid);
    d["inner_node"] = ToTensor(p.inner_node);
    d["indptr"] = ToTensor(p.indptr);
    d["indices"] = ToTensor(p.indices);
    d["eid"] = ToTensor(p.eid);
    d["inner_edge"] = ToTensor(p.inner_edge);
    if (p.config.typed()) {  // DGL's _TYPE arrays of the local graph.
      d["ntype"] = ToTensor(p.ntype);
      d["etype"] = ToTensor(p.etype);
    }
    return d;
  });
  // The partition's node and edge arrays, as its config lists them (None
  // for a config tessera did not write).
  m.def("partition_array_names", [](const std::string& config) -> py::object {
    auto cfg = Wait([&] {
      auto c = tessera::ReadPartitionConfig(config);
      ThrowIfError(c.status(), "partition config");
      return *std::move(c);
    });
    if (!cfg.has_tessera_section) return py::none();
    return py::make_tuple(cfg.node_feat_names, cfg.edge_feat_names);
  });
  m.def("load_partition_book", [](const std::string& config, int part_id) {
    auto [book, name] = Wait([&] {
      auto cfg = tessera::ReadPartitionConfig(config);
      ThrowIfError(cfg.status(), "load_partition_book");
      auto b = cfg->Book(part_id);
      ThrowIfError(b.status(), "load_partition_book");
      return std::make_pair(*std::move(b), cfg->graph_name);
    });
    return py::make_tuple(py::cast(std::move(book)), name);
  });
}
