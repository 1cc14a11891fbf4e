"""tessera.nn over heterogeneous blocks: RelGraphConv / RGCN with per-type
features (against the homogeneous layer on the equivalent homogeneous
block), RelationBlock, and HeteroGraphConv with SAGEConv / GraphConv /
GATConv per relation (against dense hand computations).

A hand-drawn block of 2 node types and 3 relations (per-type block-local
ids; destinations are the first sources of their type):

    users  (src u0 u1 u2 u3; dst u0 u1)    items (src i0 i1 i2 i3; dst i0 i1 i2)

    follows   (user -> user):  u2 -> u0   u3 -> u1   u1 -> u0   (not in dst order)
    buys      (user -> item):  u0 -> i1   u2 -> i0   u3 -> i1   u2 -> i1
    bought-by (item -> user):  i0 -> u0   i3 -> u0   i1 -> u1
    (i2 has no in-edges)

The equivalent homogeneous block lists the sources as [u0 u1 | i0 i1 i2 |
u2 u3 | i3] (destinations first): users map to USER_HOMO, items to ITEM_HOMO.
"""
import pytest
import torch
import torch.nn.functional as F

import tessera
import tessera.nn as tnn
from tessera.distributed import Block

NTYPES = ["user", "item"]
FOLLOWS = ("user", "follows", "user")
BUYS = ("user", "buys", "item")
BOUGHT = ("item", "bought-by", "user")
RELS = [FOLLOWS, BUYS, BOUGHT]
EDGES = {FOLLOWS: ([2, 3, 1], [0, 1, 0]),
         BUYS: ([0, 2, 3, 2], [1, 0, 1, 1]),
         BOUGHT: ([0, 3, 1], [0, 0, 1])}
NUM_SRC = {"user": 4, "item": 4}
NUM_DST = {"user": 2, "item": 3}
USER_HOMO = [0, 1, 5, 6]
ITEM_HOMO = [2, 3, 4, 7]
HOMO = {"user": USER_HOMO, "item": ITEM_HOMO}

# Dense adjacency [dst, src] of each relation, drawn from the picture.
ADJ = {FOLLOWS: [[0, 1, 1, 0],
                 [0, 0, 0, 1]],
       BUYS: [[0, 0, 1, 0],
              [1, 0, 1, 1],
              [0, 0, 0, 0]],
       BOUGHT: [[1, 0, 0, 1],
                [0, 1, 0, 0]]}


class FakeGraph:
    """The graph side of a typed Block: types and relation names."""

    def __init__(self, rels):
        self.ntypes = NTYPES
        self.canonical_etypes = rels
        self.etypes = [c[1] for c in rels]

    def to_canonical_etype(self, etype):
        return etype if isinstance(etype, tuple) else next(
            c for c in self.canonical_etypes if c[1] == etype)


def hetero_block(edges=None, num_src=None, num_dst=None):
    edges = EDGES if edges is None else edges
    num_src, num_dst = num_src or NUM_SRC, num_dst or NUM_DST
    base = {"user": 10, "item": 20}
    raw = {"src_nodes": [torch.arange(base[t], base[t] + num_src[t]) for t in NTYPES],
           "dst_nodes": [torch.arange(base[t], base[t] + num_dst[t]) for t in NTYPES],
           "homo_src_nodes": [torch.arange(num_src[t]) for t in NTYPES],
           "edges": []}
    for r, c in enumerate(RELS):
        src, dst = edges[c]
        n = len(src)
        raw["edges"].append((torch.tensor(src, dtype=torch.int64),
                             torch.tensor(dst, dtype=torch.int64),
                             torch.arange(100 * r, 100 * r + n)))
    return Block.typed(FakeGraph(RELS), raw["src_nodes"], raw["dst_nodes"], raw["homo_src_nodes"],
                       raw["edges"])


def homo_equivalent(norms=None):
    """(Block, etypes, norms) of the homogeneous block with the same edges;
    norms: per relation, per edge values (in the relation's order)."""
    rows = []  # (dst, src, relation, norm)
    for r, c in enumerate(RELS):
        src, dst = EDGES[c]
        for e in range(len(src)):
            rows.append((HOMO[c[2]][dst[e]], HOMO[c[0]][src[e]], r,
                         1.0 if norms is None else float(norms[r][e])))
    rows.sort(key=lambda row: row[0])  # stable: CSR over destinations
    deg = torch.bincount(torch.tensor([row[0] for row in rows]), minlength=5)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    block = Block(torch.arange(8), indptr, torch.tensor([row[1] for row in rows]),
                  torch.arange(len(rows)))
    return (block, torch.tensor([row[2] for row in rows]),
            torch.tensor([row[3] for row in rows]).unsqueeze(1))


def homo_features(h):
    """[u0 u1 | i0 i1 i2 | u2 u3 | i3] from per-type rows."""
    u, i = h["user"], h["item"]
    return torch.cat([u[:2], i[:3], u[2:], i[3:]])


def features(width=4, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return {t: torch.randn(NUM_SRC[t], width, generator=g).requires_grad_(requires_grad)
            for t in NTYPES}


# ---------------------------------------------------------------- RelGraphConv


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 2)])
def test_relgraphconv_hetero_equals_homogeneous(regularizer, num_bases):
    torch.manual_seed(0)
    conv = tnn.RelGraphConv(4, 6, 3, regularizer, num_bases, activation=torch.tanh,
                            layer_norm=True)
    torch.nn.init.normal_(conv.h_bias)
    h = features()
    homo, etypes, _ = homo_equivalent()
    # Default norm ("right") = the per-relation in-degree norm, rel_norm.
    out = conv(hetero_block(), h)
    assert set(out) == {"user", "item"}
    assert out["user"].shape == (2, 6) and out["item"].shape == (3, 6)
    want = conv(homo, homo_features(h), etypes, tnn.rel_norm(homo, etypes))
    assert torch.allclose(torch.cat([out["user"], out["item"]]), want, atol=1e-5)
    assert torch.allclose(torch.cat(list(conv(hetero_block(), h, norm="right").values())),
                          want, atol=1e-5)
    # "none": sums.
    out = conv(hetero_block(), h, norm="none")
    assert torch.allclose(torch.cat([out["user"], out["item"]]),
                          conv(homo, homo_features(h), etypes), atol=1e-5)
    # i2 has no in-edges: layer norm of zeros, bias and self loop only.
    ln = F.layer_norm(torch.zeros(6), (6,), conv.layer_norm_weight.weight,
                      conv.layer_norm_weight.bias)
    assert torch.allclose(out["item"][2],
                          torch.tanh(ln + conv.h_bias + h["item"][2] @ conv.loop_weight),
                          atol=1e-6)


def test_relgraphconv_hetero_per_edge_norms():
    torch.manual_seed(1)
    conv = tnn.RelGraphConv(4, 3, 3, "basis", 2)
    h = features(seed=1)
    norms = [torch.rand(len(EDGES[c][0])) for c in RELS]
    homo, etypes, homo_norm = homo_equivalent(norms)
    want = conv(homo, homo_features(h), etypes, homo_norm)
    # Keyed by name, by triple and by "src:rel:dst"; [E] or [E, 1].
    given = {"follows": norms[0], BUYS: norms[1].unsqueeze(1), "item:bought-by:user": norms[2]}
    out = conv(hetero_block(), h, norm=given)
    assert torch.allclose(torch.cat([out["user"], out["item"]]), want, atol=1e-5)


def test_relgraphconv_hetero_gradients_reach_every_parameter():
    torch.manual_seed(2)
    conv = tnn.RelGraphConv(4, 6, 3, "basis", 2, activation=torch.tanh, layer_norm=True)
    h = features(seed=2, requires_grad=True)
    target = torch.randn(5, 6)
    out = conv(hetero_block(), h)
    ((torch.cat([out["user"], out["item"]]) - target) ** 2).sum().backward()
    names = dict(conv.named_parameters())
    assert set(names) == {"linear_r.W", "linear_r.coeff", "h_bias", "loop_weight",
                          "layer_norm_weight.weight", "layer_norm_weight.bias"}
    got = {n: p.grad.clone() for n, p in names.items()}
    got_in = {t: h[t].grad.clone() for t in NTYPES}
    for p in conv.parameters():
        p.grad = None
    homo, etypes, _ = homo_equivalent()
    x = homo_features({t: h[t].detach() for t in NTYPES}).requires_grad_(True)
    ((conv(homo, x, etypes, tnn.rel_norm(homo, etypes)) - target) ** 2).sum().backward()
    for n, p in names.items():
        assert got[n].abs().sum() > 0, n
        assert torch.allclose(got[n], p.grad, atol=1e-5), n
    for t in NTYPES:
        assert torch.allclose(got_in[t], x.grad[HOMO[t]], atol=1e-5), t
    # u3 is a source of follows and buys; i2 (no in-edges) reaches the
    # output through its self loop.
    assert got_in["user"][3].abs().sum() > 0 and got_in["item"][2].abs().sum() > 0


def test_relgraphconv_hetero_relation_without_edges_and_missing_type():
    torch.manual_seed(3)
    conv = tnn.RelGraphConv(4, 4, 3, "basis", 2)
    edges = {**EDGES, BOUGHT: ([], [])}
    out = conv(hetero_block(edges), features(seed=3))
    out["user"].sum().backward()
    assert all(p.grad is not None for p in conv.parameters())
    # A type without source nodes may be left out; it gets zero rows.
    edges = {FOLLOWS: EDGES[FOLLOWS], BUYS: ([], []), BOUGHT: ([], [])}
    block = hetero_block(edges, {"user": 4, "item": 0}, {"user": 2, "item": 0})
    out = conv(block, {"user": features(seed=3)["user"]})
    assert out["user"].shape == (2, 4) and out["item"].shape == (0, 4)


def test_relgraphconv_hetero_bad_input_is_a_clear_error():
    conv = tnn.RelGraphConv(4, 4, 3)
    h = features()
    with pytest.raises(tessera.TesseraError, match="pass no etypes"):
        conv(hetero_block(), h, torch.zeros(10, dtype=torch.int64))
    with pytest.raises(tessera.TesseraError, match="a block of 3 relations, the layer has 2"):
        tnn.RelGraphConv(4, 4, 2)(hetero_block(), h)
    with pytest.raises(tessera.TesseraError, match="no features for node type 'item'"):
        conv(hetero_block(), {"user": h["user"]})
    with pytest.raises(tessera.TesseraError, match=r"expected \[4, 4\]"):
        conv(hetero_block(), {"user": h["user"], "item": h["item"][:3]})
    with pytest.raises(tessera.TesseraError, match="unknown node types"):
        conv(hetero_block(), dict(h, shop=h["user"]))
    with pytest.raises(tessera.TesseraError, match=r"\{ntype: source rows\}"):
        conv(hetero_block(), h["user"])
    with pytest.raises(tessera.TesseraError, match="no values for relation"):
        conv(hetero_block(), h, norm={"follows": torch.ones(3)})
    with pytest.raises(tessera.TesseraError, match="norm"):
        conv(hetero_block(), h, norm="both")
    with pytest.raises(tessera.TesseraError, match="needs etypes"):
        conv(homo_equivalent()[0], homo_features(h))


def test_rgcn_over_two_hetero_blocks():
    """Layer 2 over the destinations of the first block:

        follows u1 -> u0;  buys u0 -> i1, u1 -> i0;  bought-by i2 -> u0, i1 -> u0
        (destinations u0 and i0, i1)
    """
    torch.manual_seed(4)
    top = hetero_block({FOLLOWS: ([1], [0]), BUYS: ([0, 1], [1, 0]), BOUGHT: ([2, 1], [0, 0])},
                       NUM_DST, {"user": 1, "item": 2})
    model = tnn.RGCN(4, 3, num_rels=3, num_bases=2, num_hidden_layers=0, use_self_loop=True)
    h = features(seed=4)
    out = model([hetero_block(), top], h)
    hidden = model.layers[0](hetero_block(), h)
    want = model.layers[1](top, hidden)
    assert set(out) == {"user", "item"} and out["user"].shape == (1, 3)
    for t in NTYPES:
        assert torch.allclose(out[t], want[t]), t
    # Per-layer norms; "none" sums.
    summed = model([hetero_block(), top], h, norms=["none", "none"])
    assert not torch.allclose(summed["item"], out["item"])
    F.cross_entropy(out["item"], torch.tensor([0, 2])).backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(tessera.TesseraError, match="2 layers, got 1 blocks"):
        model([hetero_block()], h)


# ---------------------------------------------------------------- RelationBlock


def test_relation_block_views():
    rb = tnn.RelationBlock(hetero_block(), "follows")
    assert rb.canonical_etype == FOLLOWS and rb.num_src_nodes() == 4 and rb.num_dst_nodes() == 2
    s, d = rb.edges()
    assert s.tolist() == [2, 3, 1] and d.tolist() == [0, 1, 0]  # the relation's edge order
    assert rb.in_degrees().tolist() == [2, 1] and rb.out_degrees().tolist() == [0, 1, 1, 1]
    assert rb.indptr.tolist() == [0, 2, 3] and rb.csr_indices.tolist() == [2, 1, 3]
    assert rb.edata[tessera.EID].tolist() == [0, 1, 2]
    rb = tnn.RelationBlock(hetero_block(), BUYS)
    assert rb.srcdata[tessera.NID].tolist() == [10, 11, 12, 13]
    assert rb.dstdata[tessera.NID].tolist() == [20, 21, 22]
    assert rb.in_degrees().tolist() == [1, 3, 0]
    assert rb.edata[tessera.EID].tolist() == [100, 101, 102, 103]
    h = torch.arange(8, dtype=torch.float32).view(4, 2)
    assert torch.allclose(tnn.mean_aggregate(tnn.RelationBlock(hetero_block(), FOLLOWS), h),
                          torch.stack([(h[2] + h[1]) / 2, h[3]]))
    with pytest.raises(tessera.TesseraError, match="unknown relation"):
        tnn.RelationBlock(hetero_block(), "sells")


# ---------------------------------------------------------------- HeteroGraphConv


def adj(c):
    return torch.tensor(ADJ[c], dtype=torch.float32)


def sage_reference(conv, a, h_src, h_dst):
    mean = (a / a.sum(1, keepdim=True).clamp(min=1)) @ h_src
    return h_dst @ conv.fc_self.weight.T + mean @ conv.fc_neigh.weight.T + conv.fc_self.bias


def sage_mods():
    mods = {"follows": tnn.SAGEConv(3, 5), "buys": tnn.SAGEConv((3, 2), 5),
            "bought-by": tnn.SAGEConv((2, 3), 5)}
    for m in mods.values():
        torch.nn.init.normal_(m.fc_self.bias)
    return mods


def hetero_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"user": torch.randn(4, 3, generator=g), "item": torch.randn(4, 2, generator=g)}


def sage_by_relation(mods, h):
    return {c: sage_reference(mods[c[1]], adj(c), h[c[0]], h[c[2]][:NUM_DST[c[2]]])
            for c in RELS}


@pytest.mark.parametrize("aggregate", ["sum", "mean", "max", "min", "stack"])
def test_heterographconv_sage_against_dense(aggregate):
    torch.manual_seed(5)
    mods = sage_mods()
    conv = tnn.HeteroGraphConv(mods, aggregate=aggregate)
    h = hetero_inputs()
    out = conv(hetero_block(), h)
    per = sage_by_relation(mods, h)
    user = torch.stack([per[FOLLOWS], per[BOUGHT]])  # relations in canonical_etypes order
    want_user = {"sum": user.sum(0), "mean": user.mean(0), "max": user.max(0)[0],
                 "min": user.min(0)[0], "stack": user.transpose(0, 1)}[aggregate]
    want_item = per[BUYS].unsqueeze(1) if aggregate == "stack" else per[BUYS]
    assert set(out) == {"user", "item"}
    assert torch.allclose(out["user"], want_user, atol=1e-5)
    assert torch.allclose(out["item"], want_item, atol=1e-5)


def test_heterographconv_callable_aggregate_tuple_inputs_and_gradients():
    torch.manual_seed(6)
    mods = sage_mods()
    seen = []

    def weighted(tensors, dsttype):
        seen.append((dsttype, len(tensors)))
        return sum((k + 1) * t for k, t in enumerate(tensors))

    conv = tnn.HeteroGraphConv(mods, aggregate=weighted)
    h = {t: x.requires_grad_(True) for t, x in hetero_inputs(1).items()}
    out = conv(hetero_block(), ({t: h[t] for t in NTYPES},
                                {t: h[t][:NUM_DST[t]] for t in NTYPES}))
    per = sage_by_relation(mods, h)
    assert sorted(seen) == [("item", 1), ("user", 2)]
    assert torch.allclose(out["user"], per[FOLLOWS] + 2 * per[BOUGHT], atol=1e-5)
    (out["user"].sum() + out["item"].sum()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in conv.parameters())
    assert h["item"].grad[3].abs().sum() > 0  # i3 -> u0 (bought-by)
    assert [n for n, _ in conv.named_parameters()][0].startswith("mods.follows.")


def test_heterographconv_skips_relations_without_inputs_and_computes_empty_ones():
    torch.manual_seed(7)
    mods = sage_mods()
    conv = tnn.HeteroGraphConv(mods)
    h = hetero_inputs(2)
    # Only users: buys (to items) and bought-by (from items) are skipped.
    out = conv(hetero_block(), {"user": h["user"]})
    assert set(out) == {"user"}
    assert torch.allclose(out["user"], sage_by_relation(mods, h)[FOLLOWS], atol=1e-5)
    # bought-by without edges still runs (DGL >= 0.7.2): its self term and bias.
    edges = {**EDGES, BOUGHT: ([], [])}
    out = conv(hetero_block(edges), h)
    per = sage_by_relation(mods, h)
    empty = h["user"][:2] @ mods["bought-by"].fc_self.weight.T + mods["bought-by"].fc_self.bias
    assert torch.allclose(out["user"], per[FOLLOWS] + empty, atol=1e-5)
    assert torch.allclose(out["item"], per[BUYS], atol=1e-5)


def test_heterographconv_graphconv_edge_weights_and_keys():
    """GraphConv(norm="both") per relation, a per-edge weight through
    mod_kwargs (in the relation's edge order), modules keyed by triple."""
    torch.manual_seed(8)
    mods = {FOLLOWS: tnn.GraphConv(3, 4), BUYS: tnn.GraphConv(3, 4),
            "bought-by": tnn.GraphConv(2, 4)}
    for m in mods.values():
        torch.nn.init.normal_(m.bias)
        assert not m._allow_zero_in_degree
    conv = tnn.HeteroGraphConv(mods)
    assert all(m._allow_zero_in_degree for m in mods.values())  # i2 has no in-edges
    h = hetero_inputs(3)
    w = torch.tensor([0.5, 2.0, 3.0])  # follows: u2->u0, u3->u1, u1->u0
    out = conv(hetero_block(), h, mod_kwargs={"follows": {"edge_weight": w}})

    def gcn(m, a, weighted, x):
        d_in = a.sum(1).clamp(min=1).pow(-0.5).unsqueeze(1)
        d_out = a.sum(0).clamp(min=1).pow(-0.5).unsqueeze(1)
        return d_in * (weighted @ (d_out * x)) @ m.weight + m.bias

    a_f = adj(FOLLOWS)
    w_f = torch.tensor([[0, 3.0, 0.5, 0], [0, 0, 0, 2.0]])  # the weights drawn into ADJ
    want_user = (gcn(mods[FOLLOWS], a_f, w_f, h["user"]) +
                 gcn(mods["bought-by"], adj(BOUGHT), adj(BOUGHT), h["item"]))
    assert torch.allclose(out["user"], want_user, atol=1e-5)
    want_item = gcn(mods[BUYS], adj(BUYS), adj(BUYS), h["user"])
    assert torch.allclose(out["item"], want_item, atol=1e-5)
    assert torch.allclose(out["item"][2], mods[BUYS].bias)
    # mod_args by name: GraphConv's third positional argument is `weight`.
    bare = tnn.HeteroGraphConv({"follows": tnn.GraphConv(3, 4, weight=False, bias=False),
                                "buys": tnn.GraphConv(3, 4), "bought-by": tnn.GraphConv(2, 4)})
    ext = torch.randn(3, 4)
    got = bare(hetero_block(), h, mod_args={"follows": (ext,)})
    want = gcn(type("W", (), {"weight": ext, "bias": 0})(), a_f, a_f, h["user"])
    want = want + gcn(bare.mods["bought-by"], adj(BOUGHT), adj(BOUGHT), h["item"])
    assert torch.allclose(got["user"], want, atol=1e-5)


def test_heterographconv_gat_against_dense():
    torch.manual_seed(9)
    mods = {"follows": tnn.GATConv(3, 2, num_heads=2), "buys": tnn.GATConv((3, 2), 2, 2),
            "bought-by": tnn.GATConv((2, 3), 2, 2, residual=True)}
    conv = tnn.HeteroGraphConv(mods, aggregate="sum")
    h = hetero_inputs(4)
    out = conv(hetero_block(), h)

    def gat(m, a, x_src, x_dst):
        fc_src, fc_dst = (m.fc, m.fc) if hasattr(m, "fc") else (m.fc_src, m.fc_dst)
        fs, fd = fc_src(x_src).view(-1, 2, 2), fc_dst(x_dst).view(-1, 2, 2)
        el, er = (fs * m.attn_l).sum(-1), (fd * m.attn_r).sum(-1)  # [src, H], [dst, H]
        e = F.leaky_relu(er.unsqueeze(1) + el.unsqueeze(0), 0.2)  # [dst, src, H]
        e = e.masked_fill(a.unsqueeze(-1) == 0, float("-inf"))
        att = torch.nan_to_num(torch.softmax(e, dim=1))  # rows without edges: 0
        rst = torch.einsum("dsh,shf->dhf", att, fs)
        if m.bias is not None:  # DGL keeps a residual Linear's bias in res_fc.bias instead.
            rst = rst + m.bias.view(1, 2, 2)
        if m.res_fc is not None:
            rst = rst + m.res_fc(x_dst).view(-1, 2, 2)
        return rst

    per = {c: gat(mods[c[1]], adj(c), h[c[0]], h[c[2]][:NUM_DST[c[2]]]) for c in RELS}
    assert out["user"].shape == (2, 2, 2)
    assert torch.allclose(out["user"], per[FOLLOWS] + per[BOUGHT], atol=1e-5)
    assert torch.allclose(out["item"], per[BUYS], atol=1e-5)
    assert set(dict(mods["buys"].named_parameters())) >= {"fc_src.weight", "fc_dst.weight"}


def test_heterographconv_errors():
    conv = tnn.HeteroGraphConv(sage_mods())
    with pytest.raises(tessera.TesseraError, match="expected a typed graph or block"):
        conv(homo_equivalent()[0], hetero_inputs())
    with pytest.raises(KeyError, match="bought-by"):
        tnn.HeteroGraphConv({"follows": tnn.SAGEConv(3, 5), "buys": tnn.SAGEConv((3, 2), 5)})(
            hetero_block(), hetero_inputs())
    with pytest.raises(tessera.TesseraError, match="aggregate"):
        tnn.HeteroGraphConv(sage_mods(), aggregate="prod")
    with pytest.raises(tessera.TesseraError, match="feature pair"):
        tnn.GATConv((3, 3), 2, 2)(tnn.RelationBlock(hetero_block(), FOLLOWS), torch.randn(4, 3))
    with pytest.raises(tessera.TesseraError, match="destination rows"):
        conv(hetero_block(), (hetero_inputs(), {"user": torch.randn(3, 3),
                                                "item": torch.randn(3, 2)}))
