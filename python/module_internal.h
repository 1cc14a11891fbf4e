// File: python/module_internal.h
//
// What the translation units of tessera._C share. module.cc binds the
// context, the partition book, DistTensor, DistGraph, embeddings and
// partitioning, and owns the module's errors and Ctrl-C handling;
// loaders.cc binds the graph operations (find_edges, degrees, sampling) and
// the loaders. Both wait with the GIL released (Wait), hand out owners whose
// destruction releases the GIL (MakeReleasing) and turn a failed Status into
// tessera.TesseraError (ThrowIfError). Not a public header.
#ifndef TESSERA_PYTHON_MODULE_INTERNAL_H_
#define TESSERA_PYTHON_MODULE_INTERNAL_H_

#include <torch/extension.h>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tessera/base/status.h"
#include "tessera/dist.h"

namespace tessera::pyext {

namespace py = pybind11;
namespace dist = tessera::dist;

// While alive, the calling thread is waiting inside Wait(): only such waits
// may take a signal handler's exception (a wait elsewhere, e.g. a
// destructor's RPC, leaves it to the interpreter). Defined in module.cc.
class WaitScope {
 public:
  WaitScope();
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;
};

// With the GIL held: re-raises (as py::error_already_set) a signal handler's
// exception caught during a wait, if any.
void RaisePendingInterrupt();

// Runs `f` with the GIL released; a signal's exception raised meanwhile wins
// over whatever `f` returned or threw.
template <typename F>
auto Wait(F&& f) -> decltype(f()) {
  using R = decltype(f());
  std::exception_ptr error;
  WaitScope scope;
  if constexpr (std::is_void_v<R>) {
    {
      py::gil_scoped_release release;
      try {
        f();
      } catch (...) {
        error = std::current_exception();
      }
    }
    RaisePendingInterrupt();
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<R> out;
    {
      py::gil_scoped_release release;
      try {
        out.emplace(f());
      } catch (...) {
        error = std::current_exception();
      }
    }
    RaisePendingInterrupt();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
  }
}

// A binding of `method` that runs it inside Wait.
template <typename C, typename R, typename... Args>
auto Waiting(R (C::*method)(Args...) const) {
  return [method](const C& self, Args... args) {
    return Wait([&] { return (self.*method)(args...); });
  };
}

// A shared_ptr whose deleter releases the GIL: destroying a DistTensor that
// created its tensor deletes it cluster-wide (an RPC), destroying the last
// graph closes the connections, destroying a loader joins its sampler
// threads; none may wait holding the GIL.
template <typename T, typename... Args>
std::shared_ptr<T> MakeReleasing(Args&&... args) {
  return std::shared_ptr<T>(new T(std::forward<Args>(args)...), [](T* p) {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      delete p;
    } else {
      delete p;
    }
  });
}

// Throws dist::Error("<what>: <message>") (tessera.TesseraError in Python).
void ThrowIfError(const Status& status, const std::string& what);

using PyDistGraph = py::class_<dist::DistGraph, std::shared_ptr<dist::DistGraph>>;

// loaders.cc. DistGraph's find_edges / in_degrees / out_degrees (and their
// per-relation *_of forms) on `graph`; sample_neighbors_typed, in_subgraph
// and edge_subgraph on `m`.
void DefGraphOperations(py::module_& m, PyDistGraph& graph);
// The loaders (NodeLoader, EdgeLoader, DataLoader), their batches (Block,
// PairGraph, MiniBatch, EdgeMiniBatch) and their epoch iterators.
void DefLoaders(py::module_& m);
// At interpreter exit: joins the sampler threads of every dropped loader
// iterator; later drops stop their threads in place.
void ShutdownLoaders();

}  // namespace tessera::pyext

#endif  // TESSERA_PYTHON_MODULE_INTERNAL_H_
