"""DGL's to_homogeneous / to_heterogeneous, compact_graphs, the DGLGraph((u,
v)) constructor and dgl.sampling's sample_neighbors / select_topk on
in-memory graphs. Expected values are DGL 1.1.3's, written out."""
import time

import pytest
import torch

import tessera as dgl
from tessera import TesseraError


def _hg():
    return dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]),
                            ("user", "plays", "game"): ([0, 2, 1], [1, 0, 1])})


def eq(a, b):
    return torch.equal(a, torch.tensor(b, dtype=a.dtype))


# ------------------------------------------------------------ to_homogeneous


def test_to_homogeneous_order_and_fields():
    h = dgl.to_homogeneous(_hg())
    assert h.ntypes == ["_N"] and h.canonical_etypes == [("_N", "_E", "_N")]
    u, v = h.edges()
    assert eq(u, [2, 3, 2, 4, 3]) and eq(v, [3, 4, 1, 0, 1])
    assert eq(h.ndata[dgl.NID], [0, 1, 0, 1, 2]) and eq(h.ndata[dgl.NTYPE], [0, 0, 1, 1, 1])
    assert eq(h.edata[dgl.EID], [0, 1, 0, 1, 2]) and eq(h.edata[dgl.ETYPE], [0, 0, 1, 1, 1])
    assert h.ndata[dgl.NTYPE].dtype == torch.int64
    assert sorted(dgl.to_homogeneous(_hg(), store_type=False).ndata) == ["_ID"]


def test_to_homogeneous_features_and_counts():
    hg = dgl.heterograph({("user", "follows", "user"): ([5, 1], [1, 4]),
                          ("user", "plays", "game"): ([3, 2, 1], [6, 0, 6])},
                         {"user": 7, "game": 8})
    hg.nodes["user"].data["x"] = torch.arange(7.)
    hg.nodes["game"].data["x"] = torch.arange(8.) + 100
    hg.nodes["game"].data["only_game"] = torch.ones(8)
    hg.edges["plays"].data["e"] = torch.arange(3.)
    hg.edges["follows"].data["e"] = torch.arange(2.) - 5
    h, nc, ec = dgl.to_homogeneous(hg, ndata=["x"], edata=["e"], return_count=True)
    assert nc == [8, 7] and ec == [2, 3]
    assert eq(h.ndata["x"], [100., 101, 102, 103, 104, 105, 106, 107, 0, 1, 2, 3, 4, 5, 6])
    assert eq(h.edata["e"], [-5., -4, 0, 1, 2])
    assert "only_game" not in h.ndata
    # Not named: not copied (DGL's default copies no feature).
    assert sorted(dgl.to_homogeneous(hg).ndata) == ["_ID", "_TYPE"]
    # A later type without the feature drops it; the first must have it.
    assert "only_game" not in dgl.to_homogeneous(hg, ndata=["only_game"]).ndata
    del hg.nodes["game"].data["x"]
    with pytest.raises(KeyError):
        dgl.to_homogeneous(hg, ndata=["x"])


def test_to_homogeneous_scheme_mismatch():
    hg = _hg()
    hg.nodes["user"].data["x"] = torch.ones(3, 2)
    hg.nodes["game"].data["x"] = torch.ones(2, 3)
    with pytest.raises(TesseraError, match=r"Cannot concatenate column x with shape "
                       r"Scheme\(shape=\(2,\), dtype=torch.float32\) and shape "
                       r"Scheme\(shape=\(3,\), dtype=torch.float32\)"):
        dgl.to_homogeneous(hg, ndata=["x"])
    hg.nodes["game"].data["x"] = torch.ones(2, 2, dtype=torch.float64)
    with pytest.raises(TesseraError, match="Cannot concatenate column x"):
        dgl.to_homogeneous(hg, ndata=["x"])


# ------------------------------------------------------------ to_heterogeneous


def test_to_heterogeneous():
    h = dgl.graph(([0, 3, 1, 4, 2, 0], [1, 2, 4, 0, 3, 3]), num_nodes=5)
    h.ndata["_TYPE"] = torch.tensor([1, 0, 1, 0, 1])
    h.ndata["f"] = torch.arange(5.)
    h.edata["_TYPE"] = torch.tensor([0, 1, 0, 1, 0, 2])
    h.edata["w"] = torch.arange(6.) + 10
    b = dgl.to_heterogeneous(h, ["z", "a"], ["r", "s", "t"])
    assert b.ntypes == ["a", "z"]
    rels = [("a", "r", "z"), ("a", "s", "a"), ("a", "t", "z"), ("z", "r", "a"), ("z", "s", "a")]
    assert b.canonical_etypes == rels
    assert eq(b.ndata["_ID"]["a"], [0, 2, 4]) and eq(b.ndata["_ID"]["z"], [1, 3])
    assert eq(b.ndata["f"]["a"], [0., 2, 4]) and "_TYPE" not in b.ndata
    ends = {("a", "r", "z"): ([0, 1], [0, 1], [0, 4], [10., 14]),
            ("a", "s", "a"): ([2], [0], [3], [13.]), ("a", "t", "z"): ([0], [1], [5], [15.]),
            ("z", "r", "a"): ([0], [2], [2], [12.]), ("z", "s", "a"): ([1], [1], [1], [11.])}
    for c, (u, v, e, w) in ends.items():
        uu, vv = b.edges(etype=c)
        assert eq(uu, u) and eq(vv, v), c
        assert eq(b.edges[c].data["_ID"], e) and eq(b.edges[c].data["w"], w), c


def test_to_heterogeneous_round_trip_and_errors():
    hg = _hg()
    b = dgl.to_heterogeneous(dgl.to_homogeneous(hg), hg.ntypes, hg.etypes)
    assert b.canonical_etypes == hg.canonical_etypes
    assert eq(b.ndata["_ID"]["user"], [2, 3, 4])  # Their ids in the homogeneous graph.
    for c in hg.canonical_etypes:
        assert all(torch.equal(x, y) for x, y in zip(b.edges(etype=c), hg.edges(etype=c)))
    with pytest.raises(TesseraError, match="should be homogeneous"):
        dgl.to_heterogeneous(hg, ["a"], ["b"])
    with pytest.raises(KeyError):
        dgl.to_heterogeneous(dgl.graph(([0, 1], [1, 2])), ["a"], ["b"])
    # A metagraph keeps its relations even without edges.
    b = dgl.to_heterogeneous(dgl.to_homogeneous(hg), hg.ntypes, hg.etypes + ["x"],
                             metagraph=hg.canonical_etypes + [("game", "x", "user")])
    assert b.num_edges(("game", "x", "user")) == 0 and b.num_edges("plays") == 3
    # DGL's own metagraph (a networkx MultiDiGraph) gives the same relations.
    meta = hg.metagraph()
    b = dgl.to_heterogeneous(dgl.to_homogeneous(hg), hg.ntypes, hg.etypes, metagraph=meta)
    assert b.canonical_etypes == hg.canonical_etypes


def test_metagraph():
    g = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]),
                         ("user", "follows", "game"): ([0, 1, 2], [1, 2, 3]),
                         ("user", "plays", "game"): ([1, 3], [2, 3])})
    meta = g.metagraph()  # DGL 1.1.3's docstring example; DGL 1.1.3's output.
    assert list(meta.nodes()) == ["user", "game"]
    assert list(meta.edges(keys=True)) == [("user", "game", "follows"),
                                           ("user", "game", "plays"),
                                           ("user", "user", "follows")]


# ------------------------------------------------------------ compact_graphs


def test_compact_graphs():
    g = dgl.graph(([1, 5], [5, 8]), num_nodes=10)
    g.ndata["x"] = torch.arange(10.) * 10
    g.edata["w"] = torch.tensor([1., 2])
    c = dgl.compact_graphs(g)
    assert eq(c.ndata["_ID"], [1, 5, 8]) and eq(c.ndata["x"], [10., 50, 80])
    assert eq(c.edata["w"], [1., 2]) and "_ID" not in c.edata
    assert eq(c.edges()[0], [0, 1]) and eq(c.edges()[1], [1, 2])
    c = dgl.compact_graphs(g, always_preserve=torch.tensor([9, 5, 9, 0]))
    assert eq(c.ndata["_ID"], [9, 5, 0, 1, 8])
    assert eq(c.edges()[0], [3, 1]) and eq(c.edges()[1], [1, 4])
    g2 = dgl.graph(([7, 3, 7], [2, 1, 3]), num_nodes=10)
    cs = dgl.compact_graphs([g, g2], always_preserve=[4])
    assert all(eq(x.ndata["_ID"], [4, 1, 5, 8, 7, 3, 2]) for x in cs)
    assert eq(cs[1].edges()[0], [4, 5, 4]) and eq(cs[1].edges()[1], [6, 1, 5])
    assert eq(dgl.compact_graphs(dgl.graph(([8, 6, 2], [3, 1, 0]))).ndata["_ID"],
              [8, 6, 2, 3, 1, 0])
    c = dgl.compact_graphs(g, copy_ndata=False, copy_edata=False)
    assert len(c.ndata) == 0 and len(c.edata) == 0
    assert dgl.compact_graphs([]) == []
    with pytest.raises(TesseraError, match="block"):
        dgl.compact_graphs(dgl.to_block(g))


def test_compact_graphs_typed():
    hg = dgl.heterograph({("user", "follows", "user"): ([5, 1], [1, 4]),
                          ("user", "plays", "game"): ([3, 2, 1], [6, 0, 6])},
                         {"user": 7, "game": 8})
    c = dgl.compact_graphs(hg)
    assert eq(c.ndata["_ID"]["user"], [5, 1, 4, 3, 2]) and eq(c.ndata["_ID"]["game"], [6, 0])
    assert eq(c.edges(etype="plays")[0], [3, 4, 1]) and eq(c.edges(etype="plays")[1], [0, 1, 0])
    c = dgl.compact_graphs(hg, always_preserve={"game": torch.tensor([7, 2])})
    assert eq(c.ndata["_ID"]["game"], [7, 2, 6, 0])
    with pytest.raises(ValueError, match="Node type must be given"):
        dgl.compact_graphs(hg, always_preserve=torch.tensor([1]))


def test_dglgraph_constructor():
    g = dgl.DGLGraph((torch.tensor([0, 1]), torch.tensor([1, 4])))
    assert isinstance(g, dgl.DGLGraph) and g.num_nodes() == 5 and g.ntypes == ["_N"]
    assert eq(g.edges()[1], [1, 4])
    assert dgl.DGLGraph().num_nodes() == 0 and dgl.DGLGraph().num_edges() == 0
    with pytest.raises(TesseraError, match="Unsupported graph data type"):
        dgl.DGLGraph({("a", "r", "b"): ([0], [1])})
    with pytest.raises(TesseraError, match="already a DGLGraph"):
        dgl.DGLGraph(g)
    with pytest.warns(UserWarning, match=r"Keyword arguments \['readonly'\] are deprecated"):
        assert dgl.DGLGraph(([0], [2]), readonly=True).num_nodes() == 3
    # dgl.graph's sorting hints are accepted; a misspelt argument is an error.
    assert dgl.graph(([0, 1], [1, 2]), row_sorted=True, col_sorted=True).num_edges() == 2
    with pytest.raises(TypeError):
        dgl.graph(([0, 1], [1, 2]), num_node=3)


# ------------------------------------------------------------ sampling


def _g():
    g = dgl.graph((torch.tensor([0, 1, 2, 3, 4, 1, 2]), torch.tensor([1, 2, 0, 1, 1, 0, 1])),
                  num_nodes=5)
    g.edata["p"] = torch.tensor([5., 2., 3., 1, 9, 6, 2])
    g.ndata["x"] = torch.arange(5.)
    return g


def test_sampling_is_a_module():
    import tessera.sampling as s
    assert dgl.sampling is s and s.sample_neighbors is dgl.sampling.sample_neighbors


def test_sample_neighbors_all():
    g = _g()
    s = dgl.sampling.sample_neighbors(g, torch.tensor([1, 0]), -1)
    assert s.num_nodes() == 5 and s.num_edges() == 6
    eid = s.edata["_ID"]
    # Grouped by seed in the order given (DGL's order within a seed varies).
    assert sorted(eid[:4].tolist()) == [0, 3, 4, 6] and sorted(eid[4:].tolist()) == [2, 5]
    assert torch.equal(s.edata["p"], g.edata["p"][eid])
    assert torch.equal(s.edges()[0], g.edges()[0][eid])
    assert eq(s.edges()[1], [1, 1, 1, 1, 0, 0]) and torch.equal(s.ndata["x"], g.ndata["x"])
    s = dgl.sampling.sample_neighbors(g, torch.tensor([1, 0]), -1, copy_ndata=False,
                                      copy_edata=False)
    assert len(s.edata) == 0 and len(s.ndata) == 0 and s.num_nodes() == 5
    s = dgl.sampling.sample_neighbors(g, torch.tensor([1, 1]), -1)
    assert sorted(s.edata["_ID"].tolist()) == [0, 0, 3, 3, 4, 4, 6, 6]
    s = dgl.sampling.sample_neighbors(g, torch.tensor([1, 2]), -1, edge_dir="out")
    assert sorted(s.edata["_ID"][:2].tolist()) == [1, 5] and eq(s.edges()[0], [1, 1, 2, 2])
    assert dgl.sampling.sample_neighbors(g, [1], 0).num_edges() == 0
    assert g.sample_neighbors([1], -1).num_edges() == 4  # Also a method, as DGL's.
    s = dgl.sampling.sample_neighbors(g, 1, -1, exclude_edges=torch.tensor([0, 6]))
    assert sorted(s.edata["_ID"].tolist()) == [3, 4]


def _random_graph(n=300, e=3000):
    torch.manual_seed(1)
    return dgl.graph((torch.randint(0, n, (e,)), torch.randint(0, n, (e,))), num_nodes=n)


def test_sample_neighbors_counts():
    g = _random_graph()
    seeds = torch.randperm(300)[:200]
    deg = g.in_degrees(seeds)
    for replace in (False, True):
        s = dgl.sampling.sample_neighbors(g, seeds, 4, replace=replace)
        eid = s.edata["_ID"]
        u, v = s.edges()
        assert torch.equal(v, g.edges()[1][eid]) and torch.equal(u, g.edges()[0][eid])
        # Grouped by seed, in the order given.
        place = torch.repeat_interleave(torch.arange(200),
                                        torch.where(deg > 0, 4, 0) if replace
                                        else deg.clamp(max=4))
        assert torch.equal(v, seeds[place])
        if not replace:
            assert torch.unique(eid).numel() == eid.numel()


def test_sample_neighbors_prob():
    g = _g()
    g.edata["z"] = torch.tensor([1., 0, 1, 0, 0, 1, 1])
    g.edata["b"] = g.edata["z"] > 0
    for name in ("z", "b"):
        s = dgl.sampling.sample_neighbors(g, torch.tensor([1]), -1, prob=name)
        assert sorted(s.edata["_ID"].tolist()) == [0, 6]
        s = dgl.sampling.sample_neighbors(g, torch.tensor([1]), 3, prob=name)
        assert sorted(s.edata["_ID"].tolist()) == [0, 6]
        s = dgl.sampling.sample_neighbors(g, torch.tensor([1] * 100), 3, prob=name, replace=True)
        assert s.num_edges() == 300 and set(s.edata["_ID"].tolist()) == {0, 6}
    g.edata["zero"] = torch.zeros(7)
    for replace in (False, True):
        assert dgl.sampling.sample_neighbors(g, [1], 3, prob="zero",
                                             replace=replace).num_edges() == 0
    # An absent prob is uniform (DGL); an integer one is refused.
    assert dgl.sampling.sample_neighbors(g, [1], -1, prob="nothing").num_edges() == 4
    g.edata["i"] = torch.ones(7, dtype=torch.int64)
    with pytest.raises(TesseraError, match="probability or mask"):
        dgl.sampling.sample_neighbors(g, [1], 2, prob="i")


def test_sample_neighbors_distribution():
    # Seed 0's in-edges 0..3 weigh 1, 2, 3, 4: one draw picks edge i with
    # probability w_i / 10; two draws without replacement miss edge 0 with
    # probability sum over first j != 0 of w_j/10 * (1 - 1/(10 - w_j)).
    g = dgl.graph(([1, 2, 3, 4], [0, 0, 0, 0]))
    g.edata["w"] = torch.tensor([1., 2, 3, 4])
    torch.manual_seed(0)
    n = 20000
    for replace in (False, True):
        s = dgl.sampling.sample_neighbors(g, torch.zeros(n, dtype=torch.int64), 1, prob="w",
                                          replace=replace)
        freq = torch.bincount(s.edata["_ID"], minlength=4) / n
        assert torch.allclose(freq, torch.tensor([.1, .2, .3, .4]), atol=0.015), freq
    s = dgl.sampling.sample_neighbors(g, torch.zeros(n, dtype=torch.int64), 2, prob="w")
    pairs = s.edata["_ID"].reshape(n, 2)
    assert bool((pairs[:, 0] != pairs[:, 1]).all())
    miss0 = sum(w / 10 * (1 - 1 / (10 - w)) for w in (2, 3, 4))
    assert abs(float((pairs != 0).all(1).float().mean()) - miss0) < 0.015
    s = dgl.sampling.sample_neighbors(g, torch.zeros(n, dtype=torch.int64), 1)
    assert torch.allclose(torch.bincount(s.edata["_ID"], minlength=4) / n,
                          torch.full((4,), .25), atol=0.015)


def test_sample_neighbors_seeded():
    g = _random_graph()
    torch.manual_seed(7)
    a = dgl.sampling.sample_neighbors(g, torch.arange(300), 2).edata["_ID"]
    torch.manual_seed(7)
    b = dgl.sampling.sample_neighbors(g, torch.arange(300), 2).edata["_ID"]
    c = dgl.sampling.sample_neighbors(g, torch.arange(300), 2).edata["_ID"]
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_sample_neighbors_typed():
    hg = dgl.heterograph({("user", "follows", "user"): ([0, 1, 2], [1, 2, 1]),
                          ("user", "plays", "game"): ([0, 2, 1, 1], [1, 0, 1, 0]),
                          ("game", "by", "user"): ([0, 1], [2, 2])})
    hg.edges["plays"].data["w"] = torch.tensor([1., 2, 3, 4])
    hg.nodes["user"].data["h"] = torch.arange(3.)
    s = dgl.sampling.sample_neighbors(hg, {"user": [2]}, -1)
    assert s.ntypes == ["game", "user"] and s.canonical_etypes == hg.canonical_etypes
    assert eq(s.edges["by"].data["_ID"], [0, 1]) and eq(s.edges["follows"].data["_ID"], [1])
    assert s.num_edges("plays") == 0 and eq(s.edges["plays"].data["w"], [])
    assert eq(s.nodes["user"].data["h"], [0., 1, 2])
    s = dgl.sampling.sample_neighbors(hg, {"user": [1, 2], "game": [0]},
                                      {"follows": 1, "plays": -1, "by": 0})
    assert s.num_edges("by") == 0 and s.num_edges("follows") == 2
    assert sorted(s.edges["plays"].data["_ID"].tolist()) == [1, 3]
    assert eq(s.edges["plays"].data["w"], [2., 4])
    s = dgl.sampling.sample_neighbors(hg, {"user": [1, 2]}, -1,
                                      exclude_edges={"follows": torch.tensor([0])})
    assert sorted(s.edges["follows"].data["_ID"].tolist()) == [1, 2]
    with pytest.raises(TesseraError, match="Must specify node type"):
        dgl.sampling.sample_neighbors(hg, torch.tensor([1]), -1)
    with pytest.raises(TesseraError, match="Fan-out must be specified for each edge type"):
        dgl.sampling.sample_neighbors(hg, {"user": [1]}, {"follows": 1})
    with pytest.raises(TesseraError, match="Must specify etype"):
        dgl.sampling.sample_neighbors(hg, {"user": [1]}, -1, exclude_edges=torch.tensor([0]))
    with pytest.raises(ValueError, match="empty dictionary"):
        dgl.sampling.sample_neighbors(hg, {}, -1)


def test_sample_neighbors_bad_input():
    g = _g()
    with pytest.raises(TesseraError, match="does not exist"):
        dgl.sampling.sample_neighbors(g, torch.tensor([7]), -1)
    with pytest.raises(TesseraError, match="does not exist"):
        dgl.sampling.sample_neighbors(g, torch.tensor([-1]), -1)
    with pytest.raises(TypeError):
        dgl.sampling.sample_neighbors(g, [1.0], -1)
    with pytest.raises(TesseraError, match="Invalid edge direction"):
        dgl.sampling.sample_neighbors(g, [1], -1, edge_dir="x")
    with pytest.raises(ValueError, match="fanout"):
        dgl.sampling.sample_neighbors(g, [1], -2)


def test_select_topk():
    g = _g()
    topk = dgl.sampling.select_topk
    assert eq(topk(g, 2, "p", torch.tensor([1, 0])).edata["_ID"], [4, 0, 5, 2])
    assert eq(topk(g, 2, "p", torch.tensor([1, 0]), ascending=True).edata["_ID"], [3, 6, 2, 5])
    assert eq(topk(g, 2, "p").edata["_ID"], [5, 2, 4, 0, 1])
    assert eq(topk(g, -1, "p", torch.tensor([1])).edata["_ID"], [4, 0, 6, 3])
    assert eq(topk(g, 10, "p", torch.tensor([1])).edata["_ID"], [4, 0, 6, 3])
    assert eq(topk(g, 1, "p", torch.tensor([1, 2]), edge_dir="out").edata["_ID"], [5, 2])
    assert eq(topk(g, 1, "p", torch.tensor([1, 1])).edata["_ID"], [4, 4])
    s = topk(g, 2, "p", torch.tensor([1, 0]))
    assert eq(s.edges()[0], [4, 0, 1, 2]) and eq(s.edata["p"], [9., 5, 6, 3])
    g.edata["t"] = torch.ones(7)
    assert eq(topk(g, 2, "t", torch.tensor([1])).edata["_ID"], [0, 3])
    assert topk(g, 0, "p", torch.tensor([1])).num_edges() == 0
    assert eq(g.select_topk(1, "p", [0]).edata["_ID"], [5])  # Also a method, as DGL's.
    g.edata["b"] = g.edata["p"] > 4
    with pytest.raises(TesseraError, match="weight can only be int32, int64, float32 or "
                       "float64"):
        topk(g, 1, "b", torch.tensor([1]))
    with pytest.raises(TesseraError, match='Edge weights "q" do not exist for relation graph '
                       r"\"\('_N', '_E', '_N'\)\""):
        topk(g, 1, "q", torch.tensor([1]))
    hg = dgl.heterograph({("user", "plays", "game"): ([0, 2, 1, 1], [1, 0, 1, 0]),
                          ("game", "by", "user"): ([0, 1], [2, 2])})
    with pytest.raises(TesseraError, match="K value must be specified"):
        topk(hg, {"plays": 1}, "w", {"game": [1, 0]})
    hg.edges["plays"].data["w"] = torch.tensor([1., 2, 3, 4])
    hg.edges["by"].data["w"] = torch.tensor([1., 2])
    s = topk(hg, {"plays": 1, "by": 1}, "w", {"game": [1, 0]})
    assert eq(s.edges["plays"].data["_ID"], [2, 3]) and s.num_edges("by") == 0


def test_sampling_is_vectorised():
    torch.manual_seed(0)
    n, e = 200000, 1000000
    g = dgl.graph((torch.randint(0, n, (e,)), torch.randint(0, n, (e,))), num_nodes=n)
    g.edata["p"] = torch.rand(e)
    seeds = torch.randperm(n)[:100000]
    for f in (lambda: dgl.sampling.sample_neighbors(g, seeds, 3),
              lambda: dgl.sampling.sample_neighbors(g, seeds, 3, prob="p"),
              lambda: dgl.sampling.sample_neighbors(g, seeds, 3, replace=True, prob="p"),
              lambda: dgl.sampling.select_topk(g, 3, "p")):
        t = time.time()
        f()
        assert time.time() - t < 3.0  # A Python loop over the seeds takes far longer.
