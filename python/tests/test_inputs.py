"""Hostile inputs to the Python API (a tester's report, sections 3-5): each
is refused with a Python exception naming the argument and its value, or
handled as DGL does; never a pybind11 signature dump, a silent cast or a
leak. The DistGraph checks run standalone in a subprocess (this file run as
a script: ``test_inputs.py <part config> <check>``)."""
import os
import sys

import pytest
import torch

from conftest import raises as _raises, run_check

CHECKS = ["collate_error_leak", "collate_recursion", "unknown_types", "dtype_casts",
          "int_ranges", "nul_names", "sparse_adam_betas"]


@pytest.mark.parametrize("check", CHECKS)
def test_standalone(cora_parts, check):
    run_check(os.path.basename(__file__), cora_parts[1], check)


EDGES = {"edges": (torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0])), "num_nodes": 3}


def test_partition_graph_refuses_float_ids(tmp_path):
    """As tessera.graph: float endpoints are an error, never truncated."""
    import tessera
    g = {"edges": (torch.tensor([0.5, 2.9]), torch.tensor([1, 0])), "num_nodes": 3}
    _raises(TypeError, lambda: tessera.partition_graph(g, "s", 1, str(tmp_path)),
            "src", "integer dtype", "float32")
    g = {"edges": (torch.tensor([0, 2]), torch.tensor([1.7, 0.2])), "num_nodes": 3}
    _raises(TypeError, lambda: tessera.partition_graph(g, "s", 1, str(tmp_path)),
            "dst", "integer dtype")
    assert not os.path.exists(tmp_path / "s.json")


def test_partition_graph_refuses_unsafe_array_names(tmp_path):
    """A typed graph's array names become file names: a '/' is refused by
    name (it was a FileNotFoundError naming a temporary path)."""
    import tessera
    for name in ("x/y", "..", "ünï"):
        g = tessera.heterograph({("a", "r", "b"): ([0, 1], [1, 0])})
        g.nodes["a"].data[name] = torch.ones(2)
        _raises(tessera.TesseraError, lambda: tessera.partition_graph(g, "s", 1, str(tmp_path)),
                repr(name) if name != "ünï" else name, "not a safe file name")
    assert not os.path.exists(tmp_path / "s.json")


def test_partition_graph_integer_arguments(tmp_path):
    import tessera
    out = str(tmp_path / "o")
    _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", 2**40, out),
            "num_parts", str(2**40), "2147483647")
    _raises(TypeError, lambda: tessera.partition_graph(EDGES, "s", 1.5, out), "num_parts", "1.5")
    _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", 1, out, num_hops=2**40),
            "num_hops", str(2**40))
    _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", 1, out, seed=2**64), "seed")
    _raises(TypeError, lambda: tessera.partition_graph(dict(EDGES, num_nodes=2.5), "s", 1, out),
            "num_nodes", "2.5")
    _raises(ValueError, lambda: tessera.partition_graph(dict(EDGES, num_nodes=-5), "s", 1, out),
            "num_nodes", "-5")
    # A negative seed is taken modulo 2**64, as torch.manual_seed (and dgl.seed) take it.
    a = tessera.partition_graph(EDGES, "s", 2, str(tmp_path / "a"), seed=-1,
                                part_method="random", return_mapping=True)
    b = tessera.partition_graph(EDGES, "s", 2, str(tmp_path / "b"), seed=2**64 - 1,
                                part_method="random", return_mapping=True)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    cfg = str(tmp_path / "a" / "s.json")
    _raises(ValueError, lambda: tessera.load_partition(cfg, 2**40), "part_id", str(2**40))
    _raises(ValueError, lambda: tessera.load_partition_book(cfg, 2**40), "part_id")
    # Negative values below the C++ int32 / int64 too, and any that cannot be valid.
    for kw, low, value in (("num_hops", 0, -2**40), ("num_trainers_per_machine", 1, -2**33),
                           ("coarsen_min_arcs", 0, -2**70), ("num_hops", 0, -1)):
        _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", 1, out, **{kw: value}),
                kw, str(value), f"[{low}, ")
    for n in (-2**40, 0):
        _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", n, out), "num_parts",
                str(n), "[1, 2147483647]")
    for part_id in (-2**40, -1):
        _raises(ValueError, lambda: tessera.load_partition(cfg, part_id), "part_id",
                str(part_id), "[0, 2147483647]")
        _raises(ValueError, lambda: tessera.load_partition_book(cfg, part_id), "part_id",
                str(part_id), "[0, 2147483647]")
    assert not os.path.exists(out)


def test_builtin_initialisers_refuse_bad_parameters():
    from tessera.distributed import init
    _raises(ValueError, lambda: init.normal(0, -1), "std", "-1")
    _raises(ValueError, lambda: init.normal(float("nan"), 1), "mean", "nan")
    _raises(ValueError, lambda: init.uniform(float("nan"), 1), "low", "nan")
    _raises(ValueError, lambda: init.uniform(1, 0), "low", "high")
    _raises(ValueError, lambda: init.uniform(0, float("inf")), "high", "inf")
    _raises(TypeError, lambda: init.uniform(0, 1, seed=1.5), "seed")
    assert init.uniform(0, 1, seed=-1).seed == 2**64 - 1
    init.normal(0, 0)  # torch's normal_ takes std 0 too.


# ------------------------------------------------------------------ the checks


def _small_block():
    import tessera
    u = torch.tensor([4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0])
    v = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 1, 2, 0])
    return tessera.to_block(tessera.graph((u, v), num_nodes=7), dst_nodes=torch.arange(4))


def test_kernels_refuse_a_csr_changed_between_forward_and_backward():
    """The backward reads the CSR the forward was given: an in-place change
    is autograd's error, a write autograd cannot see (numpy) the kernel's
    (both were a SIGSEGV: a tester's report)."""
    import tessera
    import tessera.nn as dglnn
    conv = dglnn.GraphConv(5, 8, norm="none")
    for where, value, how in (("indptr", 10**8, "inplace"), ("indices", 10**12, "inplace"),
                              ("indptr", 10**8, "numpy"), ("indices", 10**12, "numpy"),
                              ("indices", -1, "numpy")):
        block = _small_block()
        w = torch.rand(11, requires_grad=True)
        out = conv(block, torch.randn(7, 5, requires_grad=True), edge_weight=w)
        csr = block.indptr if where == "indptr" else block.csr_indices
        if how == "inplace":
            csr[-1] = value
            _raises(RuntimeError, lambda: out.sum().backward(), "modified by an inplace")
        else:
            csr.numpy()[-1] = value  # (Errors inside autograd's engine are RuntimeErrors.)
            _raises(RuntimeError, lambda: out.sum().backward(), "aggregate", str(value))
    block = _small_block()
    scores = torch.randn(11, 2, requires_grad=True)
    a = tessera.nn.edge_softmax(block, scores)
    block.indptr.numpy()[2] = 10**7
    _raises(RuntimeError, lambda: a.sum().backward(), "indptr", str(10**7))


def test_block_constructor_checks_its_csr():
    """tessera.Block(src_nodes, indptr, indices, eids) trusted its CSR: float
    indices were truncated, more destinations than sources were accepted, and
    a short indptr dropped edges in message passing (a tester's report)."""
    import tessera
    n = torch.arange(3)
    ok = tessera.Block(n, torch.tensor([0, 2, 3], dtype=torch.int32), torch.tensor([0, 2, 1]),
                       None)
    assert ok.num_edges() == 3 and ok.indptr.dtype == torch.int64
    for indptr, indices, eids, words in (
            ([0, 2, 3], [0, 7, 1], None, ("outside [0, 3)", "7")),
            ([0, 2, 3], [0, -1, 1], None, ("outside [0, 3)", "-1")),
            ([0, 2, 2], [0, 2, 1], None, ("indptr", "3 edges")),
            ([0, 2, 5], [0, 2, 1], None, ("indptr", "3 edges")),
            ([0, 3, 1, 3], [0, 2, 1], None, ("indptr", "[0, 3, 1, 3]")),
            ([-1, 2, 3], [0, 2, 1], None, ("indptr",)),
            ([0, 1, 2, 3, 3], [0, 1, 1], None, ("4 destinations", "3 sources")),
            ([], [], None, ("indptr", "-1 destinations")),
            ([0, 2, 3], [0, 2, 1], [5, 6], ("2 edge ids", "3 edges"))):
        _raises(tessera.TesseraError,
                lambda: tessera.Block(n, torch.tensor(indptr, dtype=torch.int64),
                                      torch.tensor(indices, dtype=torch.int64),
                                      None if eids is None else torch.tensor(eids)), *words)
    _raises(TypeError, lambda: tessera.Block(n, torch.tensor([0, 2, 3]),
                                             torch.tensor([0., 2.7, 1.]), None), "float32")
    _raises(tessera.TesseraError, lambda: tessera.Block(n, torch.tensor([[0, 2, 3]]),
                                                        torch.tensor([0, 2, 1]), None), "1D")


def test_kernels_refuse_meta_tensors():
    """A 'meta' weight gave uninitialised memory as RelGraphConv's output."""
    import tessera
    import tessera.nn as dglnn
    from tessera import _C
    block = _small_block()
    conv = dglnn.RelGraphConv(5, 3, 2, regularizer="basis", num_bases=2).to("meta")
    etypes = torch.zeros(11, dtype=torch.int64)
    _raises(tessera.TesseraError, lambda: conv(block, torch.randn(7, 5), etypes), "meta", "CPU")
    indptr, indices = block.indptr, block.csr_indices
    _raises(tessera.TesseraError,
            lambda: _C.aggregate(indptr, indices, torch.empty(7, 3, device="meta"), "sum"),
            "meta")
    _raises(tessera.TesseraError,
            lambda: _C.edge_softmax(indptr, torch.empty(11, 1, device="meta")), "meta")


def test_second_derivatives_through_the_kernels():
    """backward(create_graph=True) (gradient penalties) gave wrong second
    derivatives, silently: the kernels' backwards recorded nothing."""
    import tessera.nn as dglnn
    from tessera import _C
    torch.manual_seed(0)
    block = _small_block()
    indptr, indices = block.indptr, block.csr_indices
    h = torch.randn(7, 4, dtype=torch.float64, requires_grad=True)
    for reduce in ("sum", "mean", "max"):
        for w in (None, torch.rand(11, dtype=torch.float64, requires_grad=True),
                  torch.rand(11, 2, dtype=torch.float64, requires_grad=True)):
            args = (h,) if w is None else (h, w)
            f = (lambda h, w=None, r=reduce: _C.aggregate(indptr, indices, h, r, w))
            assert torch.autograd.gradgradcheck(f, args), (reduce, w is None)
    # No edges, weighted (GATConv's attention on an edgeless graph).
    none, w0 = torch.zeros(5, dtype=torch.int64), torch.rand(0, 2, dtype=torch.float64,
                                                            requires_grad=True)
    for reduce in ("sum", "mean", "max"):
        f = (lambda h, w, r=reduce: _C.aggregate(none, none[:0], h, r, w))
        assert torch.autograd.gradgradcheck(f, (h, w0)), reduce
    scores = torch.randn(11, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda s: _C.edge_softmax(indptr, s), (scores,))
    x = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    etypes = torch.tensor([0, 1] * 5 + [0])
    for layer in (dglnn.SAGEConv(3, 2, "pool"), dglnn.SAGEConv(3, 2, "mean"),
                  dglnn.GATConv(3, 2, num_heads=2), dglnn.GraphConv(3, 2),
                  dglnn.RelGraphConv(3, 2, 2, regularizer="basis", num_bases=2)):
        layer = layer.double()
        run = (lambda x: layer(block, x, etypes)) if isinstance(layer, dglnn.RelGraphConv) \
            else (lambda x: layer(block, x))
        assert torch.autograd.gradgradcheck(run, (x,)), type(layer).__name__
    drop = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    seeded = (lambda x: (torch.manual_seed(3), _C.dropout(x, 0.5, True))[1] ** 2)  # One mask.
    assert torch.autograd.gradgradcheck(seeded, (drop,))


def test_lazy_csr_publishes_indptr_after_its_permutation(monkeypatch):
    """Two threads on a fresh graph: one saw indptr while the permutation
    was still being computed, and treated unsorted edges as sorted (wrong
    layer outputs). The argsort now runs before indptr is published."""
    import tessera
    g = tessera.graph((torch.tensor([0, 1, 2]), torch.tensor([2, 0, 1])), num_nodes=3)
    rel = g._relation(None)
    seen = []
    argsort = torch.argsort

    def watching(*args, **kwargs):
        seen.append(rel._indptr)
        return argsort(*args, **kwargs)

    monkeypatch.setattr(torch, "argsort", watching)
    rel.indptr  # noqa: B018
    assert seen == [None] and rel.csr_perm is not None


def _threads():
    return len(os.listdir("/proc/self/task"))


def check_collate_error_leak(dist, g):
    """An epoch ended by a collate_fn's exception joins its sampler threads
    (the iterator, kept by the exception's traceback, was a cycle through
    C++ that the GC cannot see)."""
    import gc
    import time

    def bad(rows):
        if int(rows[0]) == 4:
            raise ValueError("bad batch")
        return rows

    for _ in range(2):  # Starts what stays (the reaper thread).
        try:
            list(dist.DistDataLoader(torch.arange(10), batch_size=2, collate_fn=bad,
                                     num_workers=2))
        except ValueError:
            pass
    gc.collect()
    time.sleep(0.5)
    before = _threads()
    for _ in range(40):
        try:
            for _ in dist.DistDataLoader(torch.arange(40), batch_size=2, collate_fn=bad,
                                         num_workers=2):
                pass
            raise AssertionError("no error")
        except ValueError as e:
            assert "bad batch" in str(e)
    gc.collect()
    end = time.time() + 10
    while _threads() > before + 2 and time.time() < end:
        time.sleep(0.1)
    assert _threads() <= before + 2, (before, _threads())
    # The node loader's iterator too.
    loader = dist.DistNodeDataLoader(g, torch.arange(40), dist.NeighborSampler([2]),
                                     batch_size=4, num_workers=2)
    for b in loader:
        break
    del loader, b
    gc.collect()


def check_collate_recursion(dist, g):
    """A collate_fn iterating its own loader is refused at once (it started
    sampler threads without bound until none could start, and kept them)."""
    import resource
    with open("/proc/self/status") as f:
        vm = [int(line.split()[1]) for line in f if line.startswith("VmSize")][0] * 1024
    limit = vm + (3 << 30)  # Room for a few hundred thread stacks, not for 32k.
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    box = {}
    box["l"] = dist.DistDataLoader(torch.arange(4), batch_size=2,
                                   collate_fn=lambda r: len(list(box["l"])), num_workers=1)
    _raises(dist.TesseraError, lambda: list(box["l"]), "collate_fn iterates the same loader")
    # Batches of a loader iterating another loader are fine, and the process is sound.
    inner = dist.DistDataLoader(torch.arange(4), batch_size=2, num_workers=1)
    outer = dist.DistDataLoader(torch.arange(4), batch_size=2, num_workers=1,
                                collate_fn=lambda r: len(list(inner)))
    assert list(outer) == [2, 2]
    assert [b.tolist() for b in dist.DistDataLoader(torch.arange(4), batch_size=2,
                                                    num_workers=1)] == [[0, 1], [2, 3]]


def check_unknown_types(dist, g):
    """On a homogeneous DistGraph a type or relation name must be the graph's
    (as on a heterograph), not ignored."""
    ids, S = torch.arange(10), dist.NeighborSampler
    E = dist.TesseraError
    _raises(E, lambda: dist.sample_neighbors(g, {"foo": ids}, 3), "foo", "'_N'")
    _raises(E, lambda: dist.sample_neighbors(g, torch.tensor([1]), {"nope": 5}), "nope",
            "('_N', '_E', '_N')")
    _raises(E, lambda: dist.DistNodeDataLoader(g, ids, S([{"nope": 2}]), batch_size=4), "nope")
    _raises(E, lambda: dist.DistNodeDataLoader(g, {"foo": ids}, S([2]), batch_size=4), "foo",
            "'_N'")
    _raises(E, lambda: dist.DistEdgeDataLoader(g, {"bogus": ids}, S([2]), batch_size=4),
            "bogus", "('_N', '_E', '_N')")
    _raises(E, lambda: dist.DistEdgeDataLoader(g, ids, S([2]), batch_size=4, exclude="reverse_id",
                                               reverse_eids={"bogus": ids}), "bogus")
    # The graph's own names work.
    assert len(list(dist.DistNodeDataLoader(g, {"_N": ids}, S([{"_E": 2}]), batch_size=4))) == 3
    assert len(list(dist.DistEdgeDataLoader(g, {"_E": ids}, S([{("_N", "_E", "_N"): 2}]),
                                            batch_size=4))) == 3
    for key in ("_E", "_N:_E:_N", ("_N", "_E", "_N")):
        assert dist.sample_neighbors(g, {"_N": torch.tensor([1])}, {key: -1}).num_edges() == \
            int(g.in_degrees(1))


def check_dtype_casts(dist, g):
    N = g.num_nodes()
    t = dist.DistTensor((N, 2), torch.int64, "casts_int")
    _raises(dist.TesseraError, lambda: t.add_(torch.tensor([1]), torch.tensor([[0.7, 1.9]])),
            "torch.float32", "torch.int64")
    t.add_(torch.tensor([1]), torch.tensor([[3, 4]]))
    t.add_(torch.tensor([1]), [[1, 1]])
    assert t[1].tolist() == [[4, 5]]
    m = dist.DistTensor((N,), torch.float32, "casts_mask")
    m[torch.arange(4)] = torch.tensor([0.5, 1.0, 2.0, -1.0])
    _raises(dist.TesseraError, lambda: dist.node_split(m), "casts_mask", "float32")
    _raises(dist.TesseraError, lambda: dist.edge_split(dist.DistTensor(
        (g.num_edges(),), torch.float64, "casts_emask")), "float64")
    # Floats where DGL wants ints: refused, never cut short (2.5 -> 2).
    S = dist.NeighborSampler
    _raises(TypeError, lambda: dist.sample_neighbors(g, torch.tensor([1]), 2.5), "fanout", "2.5")
    _raises(TypeError, lambda: dist.sample_neighbors(g, torch.tensor([1]), {"_E": 2.5}),
            "fanout", "2.5")
    _raises(TypeError, lambda: S([{"_E": 2.5}]), "fanout", "2.5")
    _raises(TypeError, lambda: dist.DistNodeDataLoader(g, torch.arange(10), S([2]),
                                                       batch_size=2.5), "batch_size", "2.5")
    _raises(TypeError, lambda: dist.DistDataLoader(torch.arange(10), batch_size=2,
                                                   num_workers=1.5), "num_workers", "1.5")
    _raises(TypeError, lambda: dist.DistTensor((N, 2.5), torch.float32, "casts_shape"),
            "shape[1]", "2.5")
    _raises(TypeError, lambda: dist.negative_sampler.Uniform(2.5), "k", "2.5")


def check_int_ranges(dist, g):
    """Integers beyond the C++ types: the argument, its value and the range."""
    import tessera
    ids, S = torch.arange(10), dist.NeighborSampler

    def nodes(**kw):
        return list(dist.DistNodeDataLoader(g, ids, S(kw.pop("fanouts", [2])), **kw))
    _raises(ValueError, lambda: nodes(batch_size=4, num_workers=2**40), "num_workers",
            str(2**40), "2147483647")
    _raises(ValueError, lambda: nodes(batch_size=2**64), "batch_size", str(2**64))
    _raises(ValueError, lambda: nodes(batch_size=0), "batch_size", "got 0")
    _raises(ValueError, lambda: nodes(batch_size=4, seed=2**64), "seed", str(2**64))
    _raises(ValueError, lambda: nodes(batch_size=4, fanouts=[2**64]), "fanout", str(2**64))
    _raises(ValueError, lambda: dist.sample_neighbors(g, torch.tensor([1]), 2**64), "fanout")
    _raises(ValueError, lambda: dist.sample_neighbors(g, torch.tensor([1]), 3, seed=2**64),
            "seed")
    _raises(ValueError, lambda: dist.DistTensor((2**64, 2), torch.float32, "r"), "shape[0]",
            str(2**64))
    _raises(ValueError, lambda: dist.DistEmbedding(g.num_nodes(), 2**64, "r"), "embedding_dim")
    _raises(ValueError, lambda: dist.DistTensor((-2**70, 2), torch.float32, "r"), "shape[0]",
            str(-2**70), "[0, ")
    _raises(ValueError, lambda: dist.DistTensor((4, -1), torch.float32, "r"), "shape[1]", "-1")
    _raises(ValueError, lambda: dist.DistEmbedding(-2**40, 2, "r"), "num_embeddings",
            str(-2**40), "[0, ")
    _raises(ValueError, lambda: dist.DistEmbedding(4, -2**70, "r"), "embedding_dim")
    _raises(ValueError, lambda: dist.sample_neighbors(g, torch.tensor([1]), -2**64), "fanout",
            str(-2**64))
    _raises(ValueError, lambda: nodes(batch_size=4, fanouts=[-2**70]), "fanout", str(-2**70))
    _raises(ValueError, lambda: nodes(batch_size=4, fanouts=[-2]), "fanout -2",
            "-1 (all neighbours), 0 (none) or positive")
    _raises(ValueError, lambda: nodes(batch_size=4, num_workers=-2**40), "num_workers",
            str(-2**40))
    _raises(ValueError, lambda: dist.manual_seed(2**64), "manual_seed", "seed")
    _raises(ValueError, lambda: dist.negative_sampler.Uniform(2**40), "k", str(2**40))
    _raises(tessera.TesseraError, lambda: g.ndata["feat"][2**70], "feat", str(2**70), "int64")
    _raises(tessera.TesseraError, lambda: g.ndata["feat"][[1, 2**70]], str(2**70))
    # seed=-1 is accepted (as torch.manual_seed and dgl.seed take it): 2**64 - 1.
    dist.manual_seed(-1)
    nodes(batch_size=4, seed=-1)
    assert dist.sample_neighbors(g, torch.tensor([1]), 3, seed=-1).num_edges() >= 1

    def order(seed):
        return [b.tolist() for b in dist.DistDataLoader(torch.arange(20), batch_size=5,
                                                        shuffle=True, seed=seed)]
    assert order(-1) == order(2**64 - 1) != order(0)
    dist.DistTensor((g.num_nodes(), 2), torch.float32, "r_init",
                    init_func=dist.init.uniform(0, 1, seed=-1))


def check_nul_names(dist, g):
    """A NUL would cut the C++ text (and its message) short."""
    import tessera
    N = g.num_nodes()
    _raises(ValueError, lambda: dist.DistTensor((N, 2), torch.float32, "a\x00b"), "name",
            "'a\\x00b'", "NUL")
    _raises(ValueError, lambda: dist.DistEmbedding(N, 2, "a\x00b"), "name", "'a\\x00b'")
    _raises(ValueError, lambda: tessera.partition_graph(EDGES, "a\x00b", 1, "/nonexistent"),
            "graph_name", "'a\\x00b'")
    _raises(ValueError, lambda: tessera.partition_graph(EDGES, "s", 1, "/tmp/x\x00y"),
            "out_path")


def check_sparse_adam_betas(dist, g):
    e = dist.DistEmbedding(g.num_nodes(), 4, "betas_emb")
    for betas in ((0.9,), 0.9, (0.9, 0.99, 0.999)):
        _raises(ValueError, lambda: dist.optim.SparseAdam([e], lr=0.1, betas=betas), "betas",
                repr(betas))
    assert dist.optim.SparseAdam([e], lr=0.1, betas=[0.8, 0.9]).betas == (0.8, 0.9)


if __name__ == "__main__":
    import tessera.distributed as _dist
    _dist.initialize()
    _g = _dist.DistGraph("cora", part_config=sys.argv[1])
    globals()[f"check_{sys.argv[2]}"](_dist, _g)
    print(f"CHECK {sys.argv[2]} ok", flush=True)
