// File: python/loaders.cc
//
// tessera._C, part two: the graph operations (find_edges, degrees,
// sampling, in/edge subgraphs) and the loaders (node, edge and generic),
// whose batches are the C++ objects bound here (Block, PairGraph,
// MiniBatch, EdgeMiniBatch). The Python package
// (python/tessera/distributed/loader.py) wraps them in DGL's blocks and
// pair graphs.
#include <torch/extension.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "python/module_internal.h"
#include "tessera/dist.h"

namespace tessera::pyext {
namespace {

// ------------------------------------------------------------ loaders

// A Python object owned from C++ threads: released under the GIL (not at
// all once the interpreter is finalizing).
using PyObjectPtr = std::shared_ptr<py::object>;
PyObjectPtr MakeObject(py::object o) {
  return PyObjectPtr(new py::object(std::move(o)), [](py::object* p) {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // Leaked, harmlessly.
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// A generic loader's batch: collate_fn's value, or the exception it raised
// (re-raised as it is when the batch is delivered, KeyboardInterrupt included).
struct PyItem {
  PyObjectPtr value, error;
};

// Stops loaders' sampler threads off the caller's path: dropping an iterator
// (e.g. while a KeyboardInterrupt unwinds a for loop) must not wait for the
// batches in flight. One thread destroys what it is handed, in order; it is
// joined at interpreter exit (Shutdown), after which handing over destroys
// in place.
class Reaper {
 public:
  void Add(std::shared_ptr<void> doomed) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stopped_ && !thread_.joinable()) {
        try {
          thread_ = std::thread([this] { Run(); });
        } catch (const std::system_error&) {
          // No thread to spare (a destructor must not throw): destroyed here.
        }
      }
      if (!stopped_ && thread_.joinable()) {
        queue_.push_back(std::move(doomed));
        doomed.reset();
      }
    }
    changed_.notify_one();
    doomed.reset();  // Stopped, or no thread: destroy here (the caller released the GIL).
  }
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopped_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::shared_ptr<void> next = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      next.reset();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<void>> queue_;
  std::thread thread_;
  bool stopped_ = false;
};

Reaper& TheReaper() {
  static Reaper* reaper = new Reaper();  // Joined by Shutdown(); never destroyed.
  return *reaper;
}

// Iterates one epoch of a BatchLoader<T>; `convert` makes the Python value.
template <typename Loader, typename T>
class EpochIterator {
 public:
  using Convert = py::object (*)(const T&);
  EpochIterator(std::shared_ptr<Loader> loader, Convert convert)
      : loader_(std::move(loader)), convert_(convert) {}
  // Python destroys iterators with the GIL held; stopping the pipeline joins
  // sampler threads that may be waiting for the GIL (a Python collate_fn).
  ~EpochIterator() {
    if (it_) {
      auto doomed = std::make_shared<typename Loader::Iterator>(std::move(*it_));
      it_.reset();
      py::gil_scoped_release release;
      TheReaper().Add(std::move(doomed));
    }
  }
  EpochIterator(const EpochIterator&) = delete;
  EpochIterator& operator=(const EpochIterator&) = delete;
  EpochIterator(EpochIterator&&) = default;
  py::object Next() {
    if (done_) throw py::stop_iteration();
    if (busy_) throw py::value_error("this loader iterator is already running in another thread");
    busy_ = true;
    struct Done {
      bool& flag;
      ~Done() { flag = false; }
    } done{busy_};
    if (!it_) it_.emplace(loader_->start());
    Wait([&] { ++*it_; });
    if (*it_ == loader_->end()) {
      done_ = true;
      it_.reset();
      throw py::stop_iteration();
    }
    return convert_(**it_);
  }

 private:
  std::shared_ptr<Loader> loader_;
  Convert convert_;
  std::optional<typename Loader::Iterator> it_;
  bool done_ = false;
  bool busy_ = false;  // A __next__ is waiting (with the GIL released).
};

template <typename Loader>
using PyLoader = py::class_<Loader, std::shared_ptr<Loader>>;

// Binds a loader's __len__, epoch and __iter__: an EpochIterator (bound as
// `iterator_name`) whose batches `convert` makes Python values.
template <typename Loader, typename T>
void DefEpochs(py::module_& m, PyLoader<Loader>& loader, const char* iterator_name,
               py::object (*convert)(const T&)) {
  using Iterator = EpochIterator<Loader, T>;
  py::class_<Iterator>(m, iterator_name)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Iterator::Next);
  loader.def("__len__", &Loader::size)
      .def("epoch", &Loader::epoch)
      .def("resume", &Loader::resume, py::arg("epoch"), py::arg("batch"))
      .def("__iter__",
           [convert](std::shared_ptr<Loader> self) { return Iterator(std::move(self), convert); });
}

// The batch objects, read-only (the Python package wraps them in DGL's
// classes); relations as (src type, relation, dst type) tuples.
void DefBatches(py::module_& m) {
  auto relations = [](const std::vector<EdgeType>& etypes) {
    py::list out;
    for (const EdgeType& e : etypes) out.append(py::make_tuple(e.src_type, e.relation, e.dst_type));
    return out;
  };
  using Block = dist::Block;
  py::class_<Block::Relation>(m, "BlockRelation")
      .def_readonly("src_type", &Block::Relation::src_type)
      .def_readonly("dst_type", &Block::Relation::dst_type)
      .def_readonly("indptr", &Block::Relation::indptr)
      .def_readonly("indices", &Block::Relation::indices)
      .def_readonly("eids", &Block::Relation::eids)
      .def("edge_dst", &Block::Relation::edge_dst);
  py::class_<Block>(m, "Block")
      .def_readonly("ntypes", &Block::ntypes)
      .def_property_readonly("canonical_etypes",
                             [relations](const Block& b) { return relations(b.canonical_etypes); })
      .def_readonly("src_nodes", &Block::src_nodes)
      .def_readonly("dst_counts", &Block::dst_counts)
      .def_readonly("homo_src_nodes", &Block::homo_src_nodes)
      .def_readonly("edges", &Block::edges)
      .def_readonly("srcdata", &Block::srcdata)
      .def_readonly("dstdata", &Block::dstdata);
  using PairGraph = dist::PairGraph;
  py::class_<PairGraph::Relation>(m, "PairRelation")
      .def_readonly("src", &PairGraph::Relation::src)
      .def_readonly("dst", &PairGraph::Relation::dst)
      .def_readonly("eids", &PairGraph::Relation::eids);
  py::class_<PairGraph>(m, "PairGraph")
      .def_readonly("ntypes", &PairGraph::ntypes)
      .def_property_readonly(
          "canonical_etypes",
          [relations](const PairGraph& p) { return relations(p.canonical_etypes); })
      .def_readonly("nodes", &PairGraph::nodes)
      .def_readonly("edges", &PairGraph::edges);
  py::class_<dist::MiniBatch>(m, "MiniBatch")
      .def_readonly("input_nodes", &dist::MiniBatch::input_nodes)
      .def_readonly("seeds", &dist::MiniBatch::seeds)
      .def_readonly("blocks", &dist::MiniBatch::blocks);
  py::class_<dist::EdgeMiniBatch>(m, "EdgeMiniBatch")
      .def_readonly("input_nodes", &dist::EdgeMiniBatch::input_nodes)
      .def_readonly("eids", &dist::EdgeMiniBatch::eids)
      .def_readonly("positive", &dist::EdgeMiniBatch::positive)
      .def_readonly("negative", &dist::EdgeMiniBatch::negative)
      .def_readonly("blocks", &dist::EdgeMiniBatch::blocks);
}

py::object ConvertNodeBatch(const dist::MiniBatch& b) { return py::cast(b); }

py::object ConvertEdgeBatch(const dist::EdgeMiniBatch& b) { return py::cast(b); }

py::list TypedSubgraphList(const dist::TypedSubgraph& s) {
  py::list out;
  for (const dist::Subgraph& e : s.edges) out.append(py::make_tuple(e.src, e.dst, e.eids));
  return out;
}

py::object ConvertItem(const PyItem& item) {
  if (item.error) {
    PyObject* e = item.error->ptr();
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e)), e);
    throw py::error_already_set();
  }
  return *item.value;
}

dist::LoaderOptions MakeLoaderOptions(int64_t batch_size, bool shuffle, bool drop_last,
                                      uint64_t seed, int num_workers, int prefetch,
                                      bool even_batches, double timeout_s) {
  return {.batch_size = batch_size,
          .shuffle = shuffle,
          .drop_last = drop_last,
          .seed = seed,
          .num_workers = num_workers,
          .prefetch = prefetch,
          .even_batches = even_batches,
          .timeout_s = timeout_s};
}

using PyDataLoader = dist::DistDataLoader<PyItem>;

// The generic loader: batches of dataset positions, collated in Python (under
// the GIL, in a sampler thread when num_workers > 0).
std::shared_ptr<PyDataLoader> MakeDataLoader(int64_t length, py::object collate,
                                             const dist::LoaderOptions& options) {
  torch::Tensor positions = torch::arange(length, torch::kInt64);
  auto shared_collate = MakeObject(std::move(collate));
  auto fn = [shared_collate](const torch::Tensor& rows) -> PyItem {
    py::gil_scoped_acquire gil;
    try {
      return {MakeObject((*shared_collate)(rows)), nullptr};
    } catch (py::error_already_set& e) {
      return {nullptr, MakeObject(e.value())};
    }
  };
  return Wait([&] { return MakeReleasing<PyDataLoader>(positions, fn, options); });
}

// A dict {type: ids} in its own order (DGL's loaders batch in it).
dist::TypedIds InOrder(const py::object& dict) {
  std::vector<dist::TypedIds::Item> items;
  for (auto [type, ids] : dict.cast<py::dict>()) {
    items.emplace_back(type.cast<std::string>(), ids.cast<torch::Tensor>());
  }
  return dist::TypedIds(std::move(items));
}

}  // namespace

void ShutdownLoaders() {
  py::gil_scoped_release release;
  TheReaper().Shutdown();
}

void DefGraphOperations(py::module_& m, PyDistGraph& graph) {
  graph
      .def("find_edges", Waiting(py::overload_cast<const torch::Tensor&>(
                             &dist::DistGraph::find_edges, py::const_)))
      .def("in_degrees",
           [](const dist::DistGraph& g, std::optional<torch::Tensor> nids) {
             return Wait([&] { return g.in_degrees(nids.value_or(torch::Tensor())); });
           })
      .def("out_degrees",
           [](const dist::DistGraph& g, std::optional<torch::Tensor> nids) {
             return Wait([&] { return g.out_degrees(nids.value_or(torch::Tensor())); });
           })
      .def("find_edges_of", Waiting(py::overload_cast<const torch::Tensor&, const std::string&>(
                                &dist::DistGraph::find_edges, py::const_)))
      .def("in_degrees_of",
           [](const dist::DistGraph& g, std::optional<torch::Tensor> nids,
              const std::string& etype) {
             return Wait([&] { return g.in_degrees(nids.value_or(torch::Tensor()), etype); });
           })
      .def("out_degrees_of", [](const dist::DistGraph& g, std::optional<torch::Tensor> nids,
                                const std::string& etype) {
        return Wait([&] { return g.out_degrees(nids.value_or(torch::Tensor()), etype); });
      });

  // ---------------------------------------------------------- graph operations
  // Typed sampling: `seeds` homogeneous ids (a tensor) or {ntype: per-type
  // ids}; `fanouts` per relation name, or None for `fanout` (per relation).
  // Typed seeds give one (src, dst, eids) per relation in per-type ids.
  m.def(
      "sample_neighbors_typed",
      [](const dist::DistGraph& g, py::object seeds, int64_t fanout,
         std::optional<dist::FanoutMap> fanouts, const std::string& edge_dir,
         const std::string& prob, std::optional<torch::Tensor> exclude, bool replace,
         std::optional<uint64_t> seed) -> py::object {
        dist::SampleOptions o;
        o.edge_dir = edge_dir;
        o.prob = prob;
        if (exclude) o.exclude_edges = *exclude;
        o.replace = replace;
        o.seed = seed;
        if (py::isinstance<py::dict>(seeds)) {
          auto typed = seeds.cast<std::map<std::string, torch::Tensor>>();
          dist::TypedSubgraph s = Wait([&] {
            return fanouts ? dist::sample_neighbors(g, typed, *fanouts, o)
                           : dist::sample_neighbors(g, typed, fanout, o);
          });
          return TypedSubgraphList(s);
        }
        auto ids = seeds.cast<torch::Tensor>();
        dist::Subgraph s = Wait([&] {
          return fanouts ? dist::sample_neighbors(g, ids, *fanouts, o)
                         : dist::sample_neighbors(g, ids, fanout, o);
        });
        return py::make_tuple(s.src, s.dst, s.eids);
      },
      py::arg("g"), py::arg("seeds"), py::arg("fanout"), py::arg("fanouts"),
      py::arg("edge_dir") = "in", py::arg("prob") = "", py::arg("exclude_edges") = py::none(),
      py::arg("replace") = false, py::arg("seed") = py::none());
  m.def("in_subgraph", [](const dist::DistGraph& g, const torch::Tensor& nodes) {
    dist::Subgraph s = Wait([&] { return dist::in_subgraph(g, nodes); });
    return py::make_tuple(s.src, s.dst, s.eids);
  });
  m.def("edge_subgraph", [](const dist::DistGraph& g, const torch::Tensor& eids) {
    dist::EdgeSubgraph s = Wait([&] { return dist::edge_subgraph(g, eids); });
    return py::make_tuple(s.src, s.dst, s.nodes, s.eids);
  });
}

void DefLoaders(py::module_& m) {
  auto sampler_of = [](std::vector<int64_t> fanouts, const std::string& edge_dir, bool replace,
                       const std::string& prob, std::vector<dist::FanoutMap> etype_fanouts = {},
                       std::vector<std::string> prefetch_node_feats = {},
                       std::vector<std::string> prefetch_labels = {}) {
    return dist::NeighborSampler{.fanouts = std::move(fanouts),
                                 .etype_fanouts = std::move(etype_fanouts),
                                 .edge_dir = edge_dir,
                                 .replace = replace,
                                 .prob = prob,
                                 .prefetch_node_feats = std::move(prefetch_node_feats),
                                 .prefetch_labels = std::move(prefetch_labels)};
  };
  DefBatches(m);
  // Seeds: global ids (a tensor: untyped blocks) or {ntype: per-type ids}
  // (typed blocks).
  PyLoader<dist::DistNodeDataLoader> node(m, "NodeLoader");
  node.def(py::init([sampler_of](const dist::DistGraph& g, py::object nids,
                                 std::vector<int64_t> fanouts, const std::string& edge_dir,
                                 bool replace, const std::string& prob, int64_t batch_size,
                                 bool shuffle, bool drop_last, uint64_t seed, int num_workers,
                                 int prefetch, bool even_batches, double timeout_s,
                                 std::vector<dist::FanoutMap> etype_fanouts,
                                 std::vector<std::string> prefetch_node_feats,
                                 std::vector<std::string> prefetch_labels) {
    auto sampler = sampler_of(std::move(fanouts), edge_dir, replace, prob, std::move(etype_fanouts),
                              std::move(prefetch_node_feats), std::move(prefetch_labels));
    auto o = MakeLoaderOptions(batch_size, shuffle, drop_last, seed, num_workers, prefetch,
                               even_batches, timeout_s);
    if (py::isinstance<py::dict>(nids)) {
      dist::TypedIds typed = InOrder(nids);
      return Wait([&] { return MakeReleasing<dist::DistNodeDataLoader>(g, typed, sampler, o); });
    }
    auto ids = nids.cast<torch::Tensor>();
    return Wait([&] { return MakeReleasing<dist::DistNodeDataLoader>(g, ids, sampler, o); });
  }));
  node.def("add_prefetch", [](dist::DistNodeDataLoader& l, const std::string& name, bool labels) {
    Wait([&] { l.add_prefetch(name, labels); });
  });
  node.def("remove_prefetch", &dist::DistNodeDataLoader::remove_prefetch);
  DefEpochs(m, node, "_NodeIterator", &ConvertNodeBatch);

  // Edges: global ids (untyped) or {etype: per-relation ids} (typed);
  // reverse_eids a global tensor or typed_reverse_eids per relation;
  // reverse_etypes {etype: reverse etype}.
  PyLoader<dist::DistEdgeDataLoader> edge(m, "EdgeLoader");
  edge.def(py::init(
      [sampler_of](
          const dist::DistGraph& g, py::object eids, std::vector<int64_t> fanouts,
          const std::string& edge_dir, bool replace, const std::string& prob, int64_t batch_size,
          bool shuffle, bool drop_last, uint64_t seed, int num_workers, int prefetch,
          bool even_batches, double timeout_s, int negatives, const std::string& exclude,
          std::optional<torch::Tensor> reverse_eids, std::vector<dist::FanoutMap> etype_fanouts,
          std::vector<std::string> prefetch_node_feats, std::vector<std::string> prefetch_labels,
          std::map<std::string, torch::Tensor> typed_reverse_eids,
          std::map<std::string, std::string> reverse_etypes) {
        auto sampler =
            sampler_of(std::move(fanouts), edge_dir, replace, prob, std::move(etype_fanouts),
                       std::move(prefetch_node_feats), std::move(prefetch_labels));
        auto o = MakeLoaderOptions(batch_size, shuffle, drop_last, seed, num_workers, prefetch,
                                   even_batches, timeout_s);
        dist::EdgeLoaderOptions e{.negatives = negatives,
                                  .exclude = exclude,
                                  .typed_reverse_eids = std::move(typed_reverse_eids),
                                  .reverse_etypes = std::move(reverse_etypes)};
        if (reverse_eids) e.reverse_eids = *reverse_eids;
        if (py::isinstance<py::dict>(eids)) {
          dist::TypedIds typed = InOrder(eids);
          return Wait(
              [&] { return MakeReleasing<dist::DistEdgeDataLoader>(g, typed, sampler, o, e); });
        }
        auto ids = eids.cast<torch::Tensor>();
        return Wait([&] { return MakeReleasing<dist::DistEdgeDataLoader>(g, ids, sampler, o, e); });
      }));
  DefEpochs(m, edge, "_EdgeIterator", &ConvertEdgeBatch);

  PyLoader<PyDataLoader> data(m, "DataLoader");
  data.def(py::init([](int64_t length, py::object collate, int64_t batch_size, bool shuffle,
                       bool drop_last, uint64_t seed, int num_workers, int prefetch,
                       bool even_batches, double timeout_s) {
    auto o = MakeLoaderOptions(batch_size, shuffle, drop_last, seed, num_workers, prefetch,
                               even_batches, timeout_s);
    return MakeDataLoader(length, std::move(collate), o);
  }));
  DefEpochs(m, data, "_DataIterator", &ConvertItem);
}

}  // namespace tessera::pyext
