"""The loaders' batches as DGL 1.1.3 gives them (a tester's comparison with
DGL): a typed loader's seeds hold only the types of the batch, the positive
pair graph only the batch's relations, a DistDataLoader's collate_fn gets a
list of Python numbers, and ids of more than one dimension are an error
("Index data must be 1D"), never flattened. DGL's values are written as
literals. The DistGraph checks run standalone in a subprocess (this file run
as a script: ``test_loader_compat.py <folder> <check>``)."""
import os
import sys

import numpy as np
import pytest
import torch

from conftest import raises as _raises, run_check

CHECKS = ["typed_node_seeds", "typed_edge_pairs", "collate_items", "dist_2d_ids",
          "zero_fanout", "zero_fanout_typed"]


@pytest.mark.parametrize("check", CHECKS)
def test_standalone(tmp_path, check):
    run_check(os.path.basename(__file__), str(tmp_path), check)


def test_in_memory_2d_ids_are_errors():
    """DGL's in-memory graphs refuse them too ('Expect a 1-D tensor')."""
    import tessera
    from tessera._utils import as_ids
    ids = torch.tensor([[0, 1], [2, 3]])
    for x in (ids, ids.numpy(), [[0, 1], [2, 3]], torch.tensor([[1], [2]])):
        _raises(tessera.TesseraError, lambda: as_ids(x, "ids"), "ids", "1D",
                str(list(np.shape(x))))
    # One id in any 0-d form stays one id; only a Python / numpy int is a scalar.
    assert as_ids(torch.tensor(3), "ids")[0].tolist() == [3]
    assert as_ids(np.array(3), "ids")[0].tolist() == [3]
    assert as_ids(np.int64(3), "ids")[1] and as_ids(3, "ids")[1]
    assert as_ids(torch.empty(0, dtype=torch.int64), "ids")[0].numel() == 0
    g = tessera.graph((torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2])))
    for f in (g.find_edges, g.in_degrees, g.out_degrees, g.has_nodes, g.in_edges,
              g.subgraph, g.edge_subgraph, lambda x: tessera.graph((x, x)),
              lambda x: tessera.sampling.sample_neighbors(g, x, 2),
              lambda x: tessera.dataloading.negative_sampler.Uniform(1)(g, x)):
        _raises(tessera.TesseraError, lambda: f(ids), "1D", "[2, 2]")
    assert g.in_degrees(torch.tensor(2)).tolist() == [2]


# ------------------------------------------------------------------ the checks

NUM_NODES = {"user": 20, "item": 30, "shop": 5}


def _hetero(tessera, folder):
    """A DistGraph of three node types (shop only a source) in one part."""
    gen = torch.Generator().manual_seed(7)

    def rel(a, b, m):
        return (torch.randint(0, NUM_NODES[a], (m,), generator=gen),
                torch.randint(0, NUM_NODES[b], (m,), generator=gen))
    spec = {("user", "buys", "item"): rel("user", "item", 60),
            ("item", "bought-by", "user"): rel("item", "user", 60),
            ("user", "follows", "user"): rel("user", "user", 40),
            ("shop", "sells", "item"): rel("shop", "item", 10)}
    g = tessera.heterograph(spec, num_nodes_dict=NUM_NODES)
    g.nodes["user"].data["feat"] = torch.randn(20, 3, generator=gen)
    tessera.partition_graph(g, "h", 1, folder)
    return tessera.distributed.DistGraph("h", part_config=os.path.join(folder, "h.json"))


def check_typed_node_seeds(dist, g):
    """DGL: seeds {'item': ...} only (a dict comprehension over them reads
    labels of item alone); input_nodes and the blocks keep every type, an
    empty tensor for a type with no nodes."""
    ntypes = ["item", "shop", "user"]
    sampler = dist.NeighborSampler([2])
    loader = dist.DistNodeDataLoader(g, {"item": torch.arange(0, 30, 3)}, sampler, batch_size=4)
    labels = {"item": torch.arange(30)}
    for input_nodes, seeds, blocks in loader:
        assert list(seeds) == ["item"], list(seeds)
        assert {t: labels[t][i] for t, i in seeds.items()}["item"].numel() == len(seeds["item"])
        assert sorted(input_nodes) == ntypes, list(input_nodes)
        b = blocks[0]
        assert b.srctypes == ntypes and b.dsttypes == ntypes
        assert sorted(b.srcdata["_ID"]) == ntypes and sorted(b.dstdata["_ID"]) == ntypes
        assert b.dstdata["_ID"]["user"].numel() == 0 and b.num_dst_nodes("shop") == 0
        assert torch.equal(b.dstdata["_ID"]["item"], seeds["item"])
    # An empty type given is not a type of any batch (DGL groups the batch's pairs).
    loader = dist.DistNodeDataLoader(
        g, {"item": torch.arange(4), "user": torch.tensor([], dtype=torch.int64)}, sampler,
        batch_size=4)
    assert [list(s) for _, s, _ in loader] == [["item"]]
    # Keys in the order nids named them; a batch of one type has only that one.
    loader = dist.DistNodeDataLoader(g, {"user": torch.arange(3), "item": torch.arange(2)},
                                     sampler, batch_size=5)
    (_, seeds, _), = list(loader)
    assert list(seeds) == ["user", "item"], list(seeds)
    loader = dist.DistNodeDataLoader(g, {"user": torch.arange(3), "item": torch.arange(2)},
                                     sampler, batch_size=2)
    got = [s for _, s, _ in loader]
    assert all(s and all(ids.numel() for ids in s.values()) for s in got), got
    assert {t: sorted(torch.cat([s[t] for s in got if t in s]).tolist())
            for t in ("user", "item")} == {"user": [0, 1, 2], "item": [0, 1]}
    # Without shuffle, DGL's batches take the ids in the dict's order (not the
    # graph's type order), a batch ending one type and starting the next.
    assert [{t: ids.tolist() for t, ids in s.items()} for s in got] == [
        {"user": [0, 1]}, {"user": [2], "item": [0]}, {"item": [1]}], got


def check_typed_edge_pairs(dist, g):
    """DGL's positive pair graph is the edge subgraph of the batch's edges:
    every node type, the batch's relations only (one: edata untyped); the
    negative graph has every relation; input_nodes every node type."""
    ntypes = ["item", "shop", "user"]
    buys, follows = ("user", "buys", "item"), ("user", "follows", "user")
    uniform = dist.negative_sampler.Uniform(1)
    loader = dist.DistEdgeDataLoader(g, {"follows": torch.arange(3)}, dist.NeighborSampler([1]),
                                     batch_size=2, negative_sampler=uniform)
    for input_nodes, pos, neg, blocks in loader:
        assert sorted(input_nodes) == ntypes and input_nodes["shop"].numel() == 0
        assert pos.ntypes == ntypes and pos.canonical_etypes == [follows], pos.canonical_etypes
        assert sorted(pos.ndata["_ID"]) == ntypes and pos.num_nodes("item") == 0
        eid = pos.edata["_ID"]  # One relation: a tensor, as DGL's.
        assert isinstance(eid, torch.Tensor) and eid.numel() == pos.num_edges(follows)
        assert len(neg.canonical_etypes) == 4 and neg.num_edges(follows) == eid.numel()
    # Without shuffle, batches take the edges in the dict's order (DGL's).
    loader = dist.DistEdgeDataLoader(g, {"follows": torch.arange(2), "buys": torch.arange(3)},
                                     dist.NeighborSampler([1]), batch_size=3)
    assert [{c: e.tolist() for c, e in pos.edata["_ID"].items()}
            if isinstance(pos.edata["_ID"], dict) else {pos.canonical_etypes[0]:
                                                       pos.edata["_ID"].tolist()}
            for _, pos, _ in loader] == [{follows: [0, 1], buys: [0]}, {buys: [1, 2]}]
    loader = dist.DistEdgeDataLoader(g, {"buys": torch.arange(3), "follows": torch.arange(2)},
                                     dist.NeighborSampler([1]), batch_size=5)
    (input_nodes, pos, blocks), = list(loader)
    assert pos.canonical_etypes == [buys, follows]
    assert {c: e.tolist() for c, e in pos.edata["_ID"].items()} == {buys: [0, 1, 2],
                                                                    follows: [0, 1]}
    loader = dist.DistEdgeDataLoader(g, {"buys": torch.arange(3), "follows": torch.arange(2)},
                                     dist.NeighborSampler([1]), batch_size=2)
    rels = sorted(tuple(pos.canonical_etypes) for _, pos, _ in loader)
    assert rels == [(buys,), (buys,), (follows,)] or rels == [(buys,), (buys, follows),
                                                              (follows,)], rels


def check_collate_items(dist, g):
    """DGL's collate_fn argument: a list, each item's F.as_scalar (a Python
    number); of (type, id) pairs the id. Without a collate_fn (DGL has no
    default) a tensor's batch stays its rows."""
    def first(ds, **kw):
        return next(iter(dist.DistDataLoader(ds, batch_size=4, collate_fn=lambda s: s, **kw)))
    want = {"tensor": (torch.arange(10), [0, 1, 2, 3], int),
            "int32": (torch.arange(10, dtype=torch.int32), [0, 1, 2, 3], int),
            "numpy": (np.arange(10), [0, 1, 2, 3], int),
            "float": (torch.arange(10.0), [0.0, 1.0, 2.0, 3.0], float),
            "bool": (torch.ones(10, dtype=torch.bool), [True] * 4, bool),
            "tensors": ([torch.tensor(i) for i in range(10)], [0, 1, 2, 3], int),
            "numpy ints": (list(np.arange(10)), [0, 1, 2, 3], int),
            "ints": (list(range(10)), [0, 1, 2, 3], int)}
    for name, (ds, values, kind) in want.items():
        for workers in (0, 1):
            got = first(ds, num_workers=workers)
            assert type(got) is list and got == values, (name, got)
            assert all(type(x) is kind for x in got), (name, [type(x) for x in got])
    # Rows of several elements stay rows (DGL's as_scalar fails there); rows
    # of one element are numbers.
    rows = first(torch.arange(20).reshape(10, 2))
    assert type(rows) is list and [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [r.tolist() for r in first(np.arange(20).reshape(10, 2))][3] == [6, 7]
    assert first(torch.arange(10).reshape(10, 1)) == [0, 1, 2, 3]
    assert first(np.arange(10).reshape(10, 1, 1)) == [0, 1, 2, 3]
    pairs = first([("a", torch.tensor(i)) for i in range(10)])
    assert pairs == [("a", 0), ("a", 1), ("a", 2), ("a", 3)]
    assert all(type(p) is tuple and type(p[1]) is int for p in pairs)
    loader = dist.DistDataLoader(torch.arange(10), batch_size=4, collate_fn=lambda s: s + [-1])
    assert list(loader) == [[0, 1, 2, 3, -1], [4, 5, 6, 7, -1], [8, 9, -1]]
    assert list(dist.DistDataLoader(torch.arange(6), batch_size=4,
                                    collate_fn=sum)) == [6, 9]
    # The default: a tensor dataset's rows, a sequence through default_collate.
    rows = list(dist.DistDataLoader(torch.arange(10, dtype=torch.int32), batch_size=4))
    assert rows[0].dtype == torch.int32 and [r.tolist() for r in rows] == [[0, 1, 2, 3],
                                                                         [4, 5, 6, 7], [8, 9]]
    assert next(iter(dist.DistDataLoader(list(range(10)), batch_size=4))).tolist() == [0, 1, 2, 3]


def check_dist_2d_ids(dist, g):
    """DGL: "Index data must be 1D" for DistTensor reads and writes, degrees,
    the partition book, DistEmbedding and the loaders; 0-d is one id."""
    import tessera
    ids = torch.tensor([[1, 2], [3, 4]])
    feat = g.nodes["user"].data["feat"]
    before = feat[torch.arange(5)].clone()
    for f in (lambda: feat[ids], lambda: feat.__setitem__(ids, torch.zeros(4, 3)),
              lambda: g.in_degrees(ids, etype="follows"),
              lambda: g.find_edges(ids, etype="follows"),
              lambda: g.get_partition_book().nid2partid(ids),
              lambda: g.get_partition_book().map_to_per_ntype(ids),
              lambda: dist.DistEmbedding(20, 3, name="e2d")(ids),
              lambda: dist.DistNodeDataLoader(g, {"user": ids}, dist.NeighborSampler([2]),
                                              batch_size=2)):
        _raises(tessera.TesseraError, f, "1D", "[2, 2]")
    assert torch.equal(feat[torch.arange(5)], before)  # Nothing was written.
    assert feat[torch.tensor(3)].shape == (1, 3)


def _ring(tessera, folder):
    """A DistGraph of one type and one relation (in-degrees 1 and 2) in one part."""
    src = torch.tensor([0, 1, 2, 3, 4, 0, 2, 5, 6, 7, 8, 9])
    dst = torch.tensor([1, 2, 3, 4, 0, 2, 5, 6, 7, 8, 9, 0])
    tessera.partition_graph(tessera.graph((src, dst)), "ring", 1, folder)
    return tessera.distributed.DistGraph("ring", part_config=os.path.join(folder, "ring.json"))


def check_zero_fanout(dist, g):
    """DGL's NeighborSampler takes a fanout of 0: that layer samples no edges,
    its block's sources are its destinations (DGL 1.1.3's DistNodeDataLoader
    on the same graph and seeds gives the values below)."""
    def batch(fanouts):
        (input_nodes, seeds, blocks), = list(dist.DistNodeDataLoader(
            g, torch.tensor([1, 3, 5]), dist.NeighborSampler(fanouts), batch_size=3))
        out = []
        for b in blocks:
            ids = b.srcdata["_ID"]
            u, v = b.edges()
            out.append((b.num_src_nodes(), b.num_dst_nodes(), b.num_edges(), ids.tolist(),
                        b.dstdata["_ID"].tolist(), [ids[u].tolist(), ids[v].tolist()]))
        return input_nodes.tolist(), seeds.tolist(), out
    seeds, sampled = [1, 3, 5], [1, 3, 5, 0, 2]
    layer = (5, 3, 3, sampled, seeds, [[0, 2, 2], [1, 3, 5]])
    empty = (3, 3, 0, seeds, seeds, [[], []])
    want = {(0,): (seeds, seeds, [empty]),
            (0, 2): (sampled, seeds, [(5, 5, 0, sampled, sampled, [[], []]), layer]),
            (2, 0): (sampled, seeds, [layer, empty]),
            (-1, 0): (sampled, seeds, [layer, empty]),
            (2,): (sampled, seeds, [layer])}
    for fanouts, expected in want.items():
        got = batch(list(fanouts))
        assert got == expected, (fanouts, got)
    assert batch([{"_E": 0}]) == want[(0,)]
    (_, _, blocks), = list(dist.DistEdgeDataLoader(g, torch.tensor([0, 1]),
                                                   dist.NeighborSampler([0]), batch_size=2))
    assert blocks[0].num_edges() == 0
    assert blocks[0].srcdata["_ID"].tolist() == blocks[0].dstdata["_ID"].tolist()
    # Below -1 stays an error.
    _raises(ValueError, lambda: list(dist.DistNodeDataLoader(
        g, torch.tensor([1]), dist.NeighborSampler([-2]), batch_size=1)), "fanout -2")


def check_zero_fanout_typed(dist, g):
    """On a heterograph an int 0 is every relation's: every type stays, the
    seeds' type alone with nodes (DGL's)."""
    seeds = {"item": torch.tensor([0, 3, 6, 9])}
    (input_nodes, _, blocks), = list(dist.DistNodeDataLoader(
        g, seeds, dist.NeighborSampler([0]), batch_size=4))
    assert {t: v.tolist() for t, v in input_nodes.items()} == {
        "item": [0, 3, 6, 9], "shop": [], "user": []}
    b, = blocks
    assert {t: b.num_src_nodes(t) for t in b.srctypes} == {"item": 4, "shop": 0, "user": 0}
    assert {t: b.num_dst_nodes(t) for t in b.dsttypes} == {"item": 4, "shop": 0, "user": 0}
    assert b.num_edges() == 0 and len(b.canonical_etypes) == 4
    # A layer of 0 above a sampled one keeps its destinations as sources.
    (input_nodes, _, blocks), = list(dist.DistNodeDataLoader(
        g, seeds, dist.NeighborSampler([1, 0]), batch_size=4))
    assert blocks[1].num_edges() == 0 and blocks[0].num_edges() > 0
    assert {t: blocks[1].num_src_nodes(t) for t in blocks[1].srctypes} == {
        "item": 4, "shop": 0, "user": 0}
    assert {t: blocks[0].num_src_nodes(t) for t in blocks[0].srctypes} == {
        t: v.numel() for t, v in input_nodes.items()}


if __name__ == "__main__":
    import tessera
    import tessera.distributed as _dist
    _dist.initialize()
    _make = _ring if sys.argv[2] == "zero_fanout" else _hetero
    _g = _make(tessera, os.path.join(sys.argv[1], "parts"))
    globals()[f"check_{sys.argv[2]}"](_dist, _g)
    print(f"CHECK {sys.argv[2]} ok", flush=True)
