"""tessera.nn layers on a hand-drawn block, against their formulas.

Block (destinations are the first 3 sources):

    src 0 -> dst 0      src 3 -> dst 0
    src 1 -> dst 0      src 0 -> dst 1
    src 4 -> dst 1      (dst 2: no in-edges)
"""
import os

import pytest
import torch

import tessera
from tessera.distributed import Block
import tessera.nn as tnn

SRC = torch.tensor([0, 1, 3, 0, 4])  # CSR over destinations: dst 0 has 3 edges, dst 1 has 2
INDPTR = torch.tensor([0, 3, 5, 5])


def block():
    return Block(torch.arange(10, 15), INDPTR, SRC, torch.arange(100, 105))


def test_block_views():
    b = block()
    assert b.num_src_nodes() == 5 and b.num_dst_nodes() == 3 and b.num_edges() == 5
    s, d = b.edges()
    assert s.tolist() == [0, 1, 3, 0, 4] and d.tolist() == [0, 0, 0, 1, 1]
    assert b.in_degrees().tolist() == [3, 2, 0]
    assert b.out_degrees().tolist() == [2, 1, 0, 1, 1]
    assert b.dstdata[tessera.NID].tolist() == [10, 11, 12]
    assert b.edata[tessera.EID].tolist() == [100, 101, 102, 103, 104]


def test_mean_and_sum_aggregate():
    h = torch.arange(10, dtype=torch.float32).view(5, 2)
    mean = tnn.mean_aggregate(block(), h)
    assert torch.allclose(mean[0], (h[0] + h[1] + h[3]) / 3)
    assert torch.allclose(mean[1], (h[0] + h[4]) / 2)
    assert torch.equal(mean[2], torch.zeros(2))
    total = tnn.sum_aggregate(block(), h)
    assert torch.allclose(total[1], h[0] + h[4])


@pytest.mark.parametrize("in_feats,out_feats", [(4, 3), (2, 6)])
def test_sageconv_formula_and_gradients(in_feats, out_feats):
    torch.manual_seed(0)
    conv = tnn.SAGEConv(in_feats, out_feats, "mean")
    # DGL 1.1.3's parameters: the bias lives in fc_self.
    assert sorted(n for n, _ in conv.named_parameters()) == [
        "fc_neigh.weight", "fc_self.bias", "fc_self.weight"]
    torch.nn.init.normal_(conv.fc_self.bias)
    h = torch.randn(5, in_feats, requires_grad=True)
    out = conv(block(), h)
    neigh = torch.stack([(h[0] + h[1] + h[3]) / 3, (h[0] + h[4]) / 2, torch.zeros(in_feats)])
    want = h[:3] @ conv.fc_self.weight.T + neigh @ conv.fc_neigh.weight.T + conv.fc_self.bias
    assert torch.allclose(out, want, atol=1e-5)
    out.sum().backward()
    assert h.grad is not None and h.grad[2].abs().sum() > 0 and h.grad[4].abs().sum() > 0
    assert conv.fc_neigh.weight.grad.abs().sum() > 0


def test_graphconv_both_norm():
    torch.manual_seed(0)
    conv = tnn.GraphConv(2, 3, norm="both", allow_zero_in_degree=True)
    h = torch.randn(5, 2)
    out = conv(block(), h)
    out_deg = torch.tensor([2, 1, 0, 1, 1.0]).clamp(min=1)
    in_deg = torch.tensor([3, 2, 0.0]).clamp(min=1)
    hs = h / out_deg.sqrt().unsqueeze(1)
    agg = torch.stack([hs[0] + hs[1] + hs[3], hs[0] + hs[4], torch.zeros(2)])
    want = (agg / in_deg.sqrt().unsqueeze(1)) @ conv.weight + conv.bias
    assert torch.allclose(out, want, atol=1e-5)


def test_zero_in_degree_is_an_error():
    with pytest.raises(tessera.TesseraError, match="no in-edges"):
        tnn.GraphConv(2, 3)(block(), torch.randn(5, 2))
    with pytest.raises(tessera.TesseraError, match="no in-edges"):
        tnn.GATConv(2, 3, num_heads=2)(block(), torch.randn(5, 2))


@pytest.mark.parametrize("in_feats,out_feats,pair,fc_bias", [
    (2, 3, False, False), (8, 1, False, False), (2, 3, True, False), (8, 1, True, False),
    (2, 3, False, True), (8, 1, False, True)])
def test_gatconv_attention_is_a_softmax_per_destination(in_feats, out_feats, pair, fc_bias):
    """DGL's formula, outputs and gradients, with the sources' logits from the
    folded weights (an input at most twice heads * out wide) and from the
    projected rows (wider); (src, dst) layers with fc_src / fc_dst; and a
    projection of the user's own with a bias, which reaches the logits."""
    torch.manual_seed(0)
    conv = tnn.GATConv((in_feats, in_feats) if pair else in_feats, out_feats, num_heads=2,
                       allow_zero_in_degree=True)
    if fc_bias:
        conv.fc = torch.nn.Linear(in_feats, 2 * out_feats, bias=True)
        torch.nn.init.normal_(conv.fc.bias)
    h = torch.randn(5, in_feats, requires_grad=True)
    h_dst = torch.randn(3, in_feats, requires_grad=True)
    out, att = conv(block(), (h, h_dst) if pair else h, get_attention=True)
    assert out.shape == (3, 2, out_feats) and att.shape == (5, 2, 1)  # DGL's [E, heads, 1]
    att = att.squeeze(-1)
    assert torch.allclose(att[:3].sum(0), torch.ones(2)) and torch.allclose(att[3:].sum(0),
                                                                            torch.ones(2))
    fc_src, fc_dst = (conv.fc_src, conv.fc_dst) if pair else (conv.fc, conv.fc)
    f = fc_src(h).view(5, 2, out_feats)
    el = (f * conv.attn_l).sum(-1)
    er = (fc_dst(h_dst if pair else h[:3]).view(3, 2, out_feats) * conv.attn_r).sum(-1)
    # Every destination by hand: a softmax over its in-edges (one without
    # in-edges gets 0 + bias, as DGL's).
    src, dst = block().edges()
    rows = []
    for d in range(3):
        srcs = src[dst == d].tolist()
        if not srcs:
            rows.append(torch.zeros(2, out_feats))
            continue
        w = torch.softmax(torch.nn.functional.leaky_relu(
            torch.stack([el[s] + er[d] for s in srcs]), 0.2), 0)
        rows.append(sum(w[i].unsqueeze(-1) * f[s] for i, s in enumerate(srcs)))
    ref = torch.stack(rows) + conv.bias.view(2, out_feats)
    assert torch.allclose(out, ref, atol=1e-5)
    params = [h, h_dst] + list(conv.parameters()) if pair else [h] + list(conv.parameters())
    got = torch.autograd.grad((out * out).sum(), params)
    want = torch.autograd.grad((ref * ref).sum(), params)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, atol=1e-5), (g, w)


def test_feat_drop_is_one_mask_for_sources_and_destinations():
    """DGL's feat_drop: one tensor is dropped once and the destinations are
    the first num_dst rows of the dropped sources; a (src, dst) pair's two
    tensors are dropped separately, sources first. Dropout's masks repeat
    with torch.manual_seed, so the training output equals the eval output
    on the features dropped by hand."""
    torch.manual_seed(0)
    layers = [tnn.SAGEConv(4, 4, "mean", feat_drop=0.5),
              tnn.SAGEConv(4, 4, "gcn", feat_drop=0.5),
              tnn.SAGEConv(4, 4, "pool", feat_drop=0.5),
              tnn.GATConv(4, 2, num_heads=2, feat_drop=0.5, residual=True,
                          allow_zero_in_degree=True)]  # The residual reads the destinations.
    h, h_dst = torch.randn(5, 4), torch.randn(3, 4)
    for conv in layers:
        torch.manual_seed(7)
        got = conv.train()(block(), h)
        torch.manual_seed(7)
        dropped = conv.feat_drop(h)
        assert torch.allclose(got, conv.eval()(block(), dropped), atol=1e-6), conv
        torch.manual_seed(7)
        got = conv.train()(block(), (h, h_dst))
        torch.manual_seed(7)
        pair = (conv.feat_drop(h), conv.feat_drop(h_dst))
        assert torch.allclose(got, conv.eval()(block(), pair), atol=1e-6), conv


@pytest.mark.parametrize("in_feats,residual,bias,keys", [
    (6, False, True, ["attn_l", "attn_r", "bias", "fc.weight"]),
    (6, True, True, ["attn_l", "attn_r", "bias", "fc.weight"]),
    (6, True, False, ["attn_l", "attn_r", "fc.weight"]),
    (5, True, True, ["attn_l", "attn_r", "fc.weight", "res_fc.weight", "res_fc.bias"]),
    (5, True, False, ["attn_l", "attn_r", "fc.weight", "res_fc.weight"]),
    ((5, 6), True, True, ["attn_l", "attn_r", "bias", "fc_src.weight", "fc_dst.weight"]),
    ((6, 5), True, True, ["attn_l", "attn_r", "fc_src.weight", "fc_dst.weight",
                          "res_fc.weight", "res_fc.bias"]),
])
def test_gatconv_residual_parameters_are_dgls(in_feats, residual, bias, keys):
    """DGL 1.1.3's GATConv: a residual from a destination width other than
    heads * out is res_fc = Linear(bias=bias), which then holds the bias
    (zeros) and there is no `bias`; otherwise the bias is `bias`."""
    torch.manual_seed(0)
    conv = tnn.GATConv(in_feats, 3, num_heads=2, residual=residual, bias=bias,
                       allow_zero_in_degree=True)
    state = conv.state_dict()
    assert list(state) == keys
    assert all(v.shape == (6,) for k, v in state.items() if k.endswith("bias"))
    assert conv.has_linear_res == ("res_fc.weight" in keys)
    assert conv.has_explicit_bias == ("bias" in keys)
    if "res_fc.bias" in keys:
        assert torch.equal(conv.res_fc.bias, torch.zeros(6))
    conv.load_state_dict({k: torch.randn_like(v) for k, v in state.items()})
    # The residual term (with res_fc's bias) on top of the attention alone.
    plain = tnn.GATConv(in_feats, 3, num_heads=2, bias=False, allow_zero_in_degree=True)
    plain.load_state_dict({k: v for k, v in conv.state_dict().items()
                           if not k.startswith("res_fc") and k != "bias"})
    src_in, dst_in = in_feats if isinstance(in_feats, tuple) else (in_feats, in_feats)
    h_src, h_dst = torch.randn(5, src_in), torch.randn(3, dst_in)
    feat = (h_src, h_dst) if isinstance(in_feats, tuple) else h_src
    if not isinstance(in_feats, tuple):
        h_dst = h_src[:3]
    extra = torch.zeros(3, 6)
    if conv.has_linear_res:
        extra = extra + h_dst @ conv.res_fc.weight.T
        if bias:
            extra = extra + conv.res_fc.bias
    elif residual:
        extra = extra + h_dst
    if conv.has_explicit_bias:
        extra = extra + conv.bias
    assert torch.allclose(conv(block(), feat) - plain(block(), feat), extra.view(3, 2, 3),
                          atol=1e-5)


def test_middle_feature_dimensions_are_independent():
    """DGL's [N, *, in] features: GATConv returns [num_dst, *, heads, out]
    (attention [E, *, heads, 1]); each middle slice is the layer on that
    slice alone. The same for SAGEConv and GraphConv ([num_dst, *, out])."""
    torch.manual_seed(0)
    h = torch.randn(5, 2, 3, 4)
    for conv in (tnn.GATConv(4, 3, num_heads=2, allow_zero_in_degree=True),
                 tnn.GATConv(4, 1, num_heads=2, allow_zero_in_degree=True),  # Wider input.
                 tnn.GATConv(4, 3, num_heads=2, residual=True, allow_zero_in_degree=True),
                 tnn.GATConv((4, 4), 3, num_heads=2, residual=True,
                             allow_zero_in_degree=True)):
        pair = isinstance(conv._in_feats, tuple)
        feat = (h, h[1:4]) if pair else h
        out, att = conv(block(), feat, get_attention=True)
        assert out.shape == (3, 2, 3, 2, conv._out_feats) and att.shape == (5, 2, 3, 2, 1)
        for i in range(2):
            for j in range(3):
                one = (h[:, i, j], h[1:4, i, j]) if pair else h[:, i, j]
                o, a = conv(block(), one, get_attention=True)
                assert torch.allclose(out[:, i, j], o, atol=1e-5)
                assert torch.allclose(att[:, i, j], a, atol=1e-6)
    for conv in (tnn.SAGEConv(4, 3, "mean"), tnn.SAGEConv(4, 5, "mean"),
                 tnn.SAGEConv(4, 3, "pool"), tnn.GraphConv(4, 3, allow_zero_in_degree=True),
                 tnn.GraphConv(4, 5, allow_zero_in_degree=True)):
        out = conv(block(), h)
        assert out.shape == (3, 2, 3, conv._out_feats)
        for i in range(2):
            for j in range(3):
                assert torch.allclose(out[:, i, j], conv(block(), h[:, i, j]), atol=1e-5)


def test_wrong_input_shapes():
    with pytest.raises(tessera.TesseraError, match="source rows"):
        tnn.SAGEConv(2, 3)(block(), torch.randn(4, 2))
    with pytest.raises(tessera.TesseraError, match="features"):
        tnn.SAGEConv(2, 3)(block(), torch.randn(5, 7))
    with pytest.raises(tessera.TesseraError, match="aggregator_type"):
        tnn.SAGEConv(2, 3, "attention")


def test_partition_graph_from_arrays_round_trip(tmp_path):
    """partition_graph on an in-memory graph (as DGL takes a DGLGraph): with the
    returned mappings, every edge is in exactly one part, with its endpoints,
    and node data follows its nodes.

        0 -> 1 -> 2 -> 3 -> 4 -> 5, 5 -> 0, 2 -> 5, 3 -> 0
    """
    src = torch.tensor([0, 1, 2, 3, 4, 5, 2, 3])
    dst = torch.tensor([1, 2, 3, 4, 5, 0, 5, 0])
    feat = torch.arange(12, dtype=torch.float32).view(6, 2)
    graph = {"edges": (src, dst), "num_nodes": 6, "ndata": {"feat": feat},
             "edata": {"w": torch.arange(8, dtype=torch.float32)}}
    orig_nids, orig_eids = tessera.partition_graph(graph, "tiny", 2, str(tmp_path),
                                                   part_method="random",
                                                   return_mapping=True)
    assert sorted(orig_nids.tolist()) == list(range(6))
    assert sorted(orig_eids.tolist()) == list(range(8))
    seen = []
    for p in range(2):
        part, node_feats, edge_feats, gpb, name, ntypes, etypes = tessera.load_partition(
            str(tmp_path / "tiny.json"), p)
        assert name == "tiny" and ntypes == ["_N"] and gpb.num_partitions() == 2
        nid = part.ndata[tessera.NID]
        inner_nodes = gpb.partid2nids(p)
        assert torch.equal(node_feats["_N/feat"], feat[orig_nids[inner_nodes]])
        s_local, d_local = part.edges()
        inner = part.edata["inner_edge"].bool()
        for s_, d_, e in zip(nid[s_local][inner].tolist(), nid[d_local][inner].tolist(),
                             part.edata[tessera.EID][inner].tolist()):
            o = int(orig_eids[e])
            assert (int(orig_nids[s_]), int(orig_nids[d_])) == (int(src[o]), int(dst[o]))
            seen.append(o)
        assert torch.equal(edge_feats["_N:_E:_N/w"],
                           torch.arange(8, dtype=torch.float32)[orig_eids[gpb.partid2eids(p)]])
    assert sorted(seen) == list(range(8)), "every edge exactly once"


def test_partition_graph_bad_input(tmp_path):
    with pytest.raises(tessera.TesseraError):
        tessera.partition_graph({"edges": (torch.tensor([0]), torch.tensor([9])),
                                 "num_nodes": 3}, "bad", 1, str(tmp_path))
    with pytest.raises(TypeError):
        tessera.partition_graph(42, "bad", 1, str(tmp_path))


def test_partition_graph_with_coarsening_keeps_the_communities_apart(tmp_path, capfd):
    """coarsening (tessera's): METIS on the contracted graph, refined back.
    Two communities of 300 nodes (8 random neighbours each, inside its own)
    joined by one edge 299 -> 300 make the two parts."""
    gen = torch.Generator().manual_seed(1)
    src, dst = [], []
    for base in (0, 300):
        u = torch.arange(base, base + 300).repeat_interleave(8)
        v = base + torch.randint(0, 300, (2400,), generator=gen)
        keep = u != v
        src.append(u[keep])
        dst.append(v[keep])
    src = torch.cat(src + [torch.tensor([299])])
    dst = torch.cat(dst + [torch.tensor([300])])
    graph = {"edges": (src, dst), "num_nodes": 600}
    orig_nids, _ = tessera.partition_graph(graph, "two", 2, str(tmp_path),
                                           return_mapping=True, coarsening=8,
                                           coarsen_min_arcs=0)
    assert "coarsening level 1" in capfd.readouterr().out, "the graph was not contracted"
    parts = []
    for p in range(2):
        _, _, _, gpb, _, _, _ = tessera.load_partition(str(tmp_path / "two.json"), p)
        parts.append(sorted(orig_nids[gpb.partid2nids(p)].tolist()))
    assert sorted(parts) == [list(range(300)), list(range(300, 600))]
    with pytest.raises(tessera.TesseraError, match="coarsening must be >= 1"):
        tessera.partition_graph(graph, "two", 2, str(tmp_path / "bad"), coarsening=0.5)


def test_ops_aggregate_against_per_edge_reference():
    """tessera.ops.aggregate (the C++ kernels) equals index_add / scatter_reduce
    over per-edge messages, forward and backward, with per-head weights."""
    from tessera import ops
    torch.manual_seed(3)
    b = block()
    dst = b.edge_dst
    for reduce in ("sum", "mean", "max"):
        h = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
        w = torch.rand(5, 2, dtype=torch.float64, requires_grad=True)
        got = ops.aggregate(b, h, reduce, w)
        msg = h[SRC] * w.unsqueeze(-1)
        if reduce == "max":
            want = torch.zeros(3, 6, dtype=torch.float64).scatter_reduce(
                0, dst.view(-1, 1).expand(5, 6), msg.reshape(5, 6), "amax",
                include_self=False).view(3, 2, 3)
        else:
            want = torch.zeros(3, 2, 3, dtype=torch.float64).index_add(0, dst, msg)
            if reduce == "mean":
                want = want / b.in_degrees().clamp(min=1).view(3, 1, 1)
        assert torch.allclose(got, want), reduce
        g = torch.randn_like(want)
        a1 = torch.autograd.grad(got, [h, w], g)
        a2 = torch.autograd.grad(want, [h, w], g)
        assert all(torch.allclose(x, y) for x, y in zip(a1, a2)), reduce
    with pytest.raises(tessera.TesseraError, match="edge_weight"):
        ops.aggregate(b, torch.randn(5, 2), "sum", torch.ones(4))
    with pytest.raises(tessera.TesseraError, match="reduce"):
        ops.aggregate(b, torch.randn(5, 2), "min")


def test_ops_dropout_is_torch_dropout_with_a_hashed_mask():
    """tessera.ops.Dropout (what tessera.nn's layers use) is a torch Dropout:
    same p and modes, the rate and scale of torch's, the forward's mask in the
    backward, repeated by torch.manual_seed."""
    from tessera import ops
    d = ops.Dropout(0.25)
    assert isinstance(d, torch.nn.Dropout) and d.p == 0.25
    x = torch.randn(500, 400, requires_grad=True)
    torch.manual_seed(5)
    y = d(x)
    kept = y != 0
    assert abs(1 - kept.double().mean().item() - 0.25) < 0.005
    assert torch.allclose(y[kept], x[kept] / 0.75)
    y.sum().backward()
    assert torch.allclose(x.grad, kept.float() / 0.75)
    torch.manual_seed(5)
    assert torch.equal(d(x.detach()) != 0, kept)
    d.eval()
    assert d(x) is x
    assert isinstance(tnn.RelGraphConv(4, 4, 2, dropout=0.5).dropout, ops.Dropout)
    with pytest.raises(tessera.TesseraError, match="probability"):
        ops.dropout(x, 2.0)


def test_halo_of_any_depth_is_dgls(tmp_path):
    """The local graph of every part holds DGL's GetSubgraphWithHalo nodes
    and edges for 1 to 4 hops: the in-edge hops first, then the inner nodes'
    out-edges (a node found both ways is expanded by the next hop)."""
    n, m = 400, 600
    gen = torch.Generator().manual_seed(1)
    src, dst = torch.randint(0, n, (m,), generator=gen), torch.randint(0, n, (m,), generator=gen)
    S, D = src.tolist(), dst.tolist()
    for hops in (1, 2, 3, 4):
        out = tmp_path / f"h{hops}"
        orig_nids, orig_eids = tessera.partition_graph(
            {"edges": (src, dst), "num_nodes": n}, "h", 3, str(out), num_hops=hops,
            part_method="random", return_mapping=True)
        for p in range(3):
            part = tessera.load_partition(str(out / "h.json"), p, load_feats=False)[0]
            nid = part.ndata[tessera.NID]
            inner = set(orig_nids[nid[part.ndata["inner_node"].bool()]].tolist())
            nodes = set(inner)
            edges = {e for e in range(m) if D[e] in inner}
            frontier = {S[e] for e in edges} - inner
            nodes |= frontier
            for _ in range(2, hops + 1):
                hop = {e for e in range(m) if D[e] in frontier and S[e] not in inner}
                edges |= hop
                frontier = {S[e] for e in hop} - nodes
                nodes |= frontier
            out_edges = {e for e in range(m) if S[e] in inner and D[e] not in inner}
            edges |= out_edges
            nodes |= {D[e] for e in out_edges}
            assert set(orig_nids[nid].tolist()) == nodes, (hops, p)
            assert set(orig_eids[part.edata[tessera.EID]].tolist()) == edges, (hops, p)


def test_load_partition_of_typed_graphs_as_dgl(tmp_path):
    """load_partition of a typed partition: DGL's "<ntype>/<name>" and
    "<src>:<rel>:<dst>/<name>" keys, the typed partition book, the types,
    a local graph with _TYPE and part_id; load_partition_book; a graph of
    one named type keeps its names."""
    gen = torch.Generator().manual_seed(0)
    counts = {"user": 40, "item": 30, "tag": 10}

    def rel(a, b, k):
        return (torch.randint(0, counts[a], (k,), generator=gen),
                torch.randint(0, counts[b], (k,), generator=gen))
    hg = tessera.heterograph({("user", "follows", "user"): rel("user", "user", 100),
                              ("user", "buys", "item"): rel("user", "item", 120),
                              ("item", "has", "tag"): rel("item", "tag", 50)},
                             num_nodes_dict=counts)
    feat = torch.randn(40, 4, generator=gen)
    hg.nodes["user"].data["feat"] = feat
    hg.edges["buys"].data["w"] = torch.arange(120.0)
    nmap, emap = tessera.partition_graph(hg, "hg", 2, str(tmp_path / "t"), part_method="random",
                                         return_mapping=True)
    config = str(tmp_path / "t" / "hg.json")
    canonical = [("item", "has", "tag"), ("user", "buys", "item"), ("user", "follows", "user")]
    for p in range(2):
        part, nf, ef, gpb, name, ntypes, etypes = tessera.load_partition(config, p)
        assert (name, ntypes, etypes) == ("hg", ["item", "tag", "user"], canonical)
        assert sorted(nf) == ["user/feat"] and sorted(ef) == ["user:buys:item/w"]
        assert gpb.ntypes == ntypes and gpb.canonical_etypes == canonical and gpb.partid == p
        assert torch.equal(nf["user/feat"], feat[nmap["user"][gpb.partid2nids(p, "user")]])
        buys = gpb.partid2eids(p, ("user", "buys", "item"))
        assert torch.equal(ef["user:buys:item/w"], emap[("user", "buys", "item")][buys].float())
        nid = part.ndata[tessera.NID]
        types, per_type = gpb.map_to_per_ntype(nid)
        assert torch.equal(part.ndata["_TYPE"], types.to(torch.int32))
        assert torch.equal(gpb.map_to_homo_nid(per_type[types == 2], "user"), nid[types == 2])
        assert torch.equal(part.edata["_TYPE"], gpb.map_to_per_etype(
            part.edata[tessera.EID])[0].to(torch.int32))
        assert torch.equal(part.ndata["part_id"], gpb.nid2partid(nid))
        assert isinstance(part, tessera.Graph) and part.in_degrees().numel() == nid.numel()
        nf2, ef2 = tessera.distributed.load_partition_feats(config, p)
        assert torch.equal(nf2["user/feat"], nf["user/feat"]) and sorted(ef2) == sorted(ef)
        assert tessera.distributed.load_partition_feats(config, p, False, False) == (None, None)
        with pytest.raises(tessera.TesseraError, match=r"part 2 does not exist \(2 parts\)"):
            tessera.distributed.load_partition_feats(config, 2, False, False)
        with pytest.raises(TypeError, match="part_config must be a path, got NoneType"):
            tessera.distributed.load_partition_feats(None, p)
        # Only the arrays asked for are read: not the graph, not the other kind.
        part_dir = tmp_path / "t" / f"part{p}"
        os.rename(part_dir / "graph" / "indptr.npy", tmp_path / "indptr.npy")
        os.rename(part_dir / "edge_feat" / "user:buys:item" / "w.npy", tmp_path / "w.npy")
        nf3, ef3 = tessera.distributed.load_partition_feats(config, p, True, False)
        assert torch.equal(nf3["user/feat"], nf["user/feat"]) and ef3 is None
        with pytest.raises(tessera.TesseraError, match="w.npy"):
            tessera.distributed.load_partition_feats(config, p, False, True)
        with pytest.raises(tessera.TesseraError, match="indptr.npy"):
            tessera.load_partition(config, p)
        os.rename(tmp_path / "indptr.npy", part_dir / "graph" / "indptr.npy")
        os.rename(tmp_path / "w.npy", part_dir / "edge_feat" / "user:buys:item" / "w.npy")
        book, name, nt, et = tessera.distributed.load_partition_book(config, p)
        assert (book.partid, name, nt) == (p, "hg", {"item": 0, "tag": 1, "user": 2})
        assert et == {c: i for i, c in enumerate(canonical)}
        outside = gpb.partid2nids(1 - p)[:1]
        with pytest.raises(tessera.TesseraError, match=f"not in partition {p}"):
            gpb.nid2localnid(outside, p)
        with pytest.raises(tessera.TesseraError, match="foo"):
            gpb.map_to_homo_nid(torch.tensor([0]), "foo")
    one = tessera.heterograph({("user", "follows", "user"): rel("user", "user", 60)})
    one.nodes["user"].data["feat"] = torch.randn(one.num_nodes(), 3, generator=gen)
    nids, eids = tessera.partition_graph(one, "one", 2, str(tmp_path / "o"),
                                         part_method="random", return_mapping=True)
    assert isinstance(nids, torch.Tensor) and isinstance(eids, torch.Tensor)  # As DGL's.
    part, nf, ef, gpb, _, ntypes, etypes = tessera.load_partition(str(tmp_path / "o" / "one.json"),
                                                                  0)
    assert ntypes == ["user"] and etypes == [("user", "follows", "user")]
    assert list(nf) == ["user/feat"] and "_TYPE" not in part.ndata


@pytest.mark.parametrize("aggregator", ["mean", "gcn", "pool", "lstm"])
@pytest.mark.parametrize("in_feats", [3, (3, 4)])
def test_sageconv_initialises_as_dgl_under_a_seed(aggregator, in_feats):
    """DGL 1.1.3 creates fc_pool / lstm, fc_neigh, fc_self, then initialises
    fc_pool / lstm, fc_self and fc_neigh in that order: the same seed gives
    the same parameters (values checked side by side)."""
    torch.manual_seed(0)
    conv = tnn.SAGEConv(in_feats, 2, aggregator)
    src, dst = in_feats if isinstance(in_feats, tuple) else (in_feats, in_feats)
    torch.manual_seed(0)  # The same draws in plain torch, in DGL's order.
    gain = torch.nn.init.calculate_gain("relu")
    want = {}
    if aggregator == "pool":
        pool = torch.nn.Linear(src, src)
    if aggregator == "lstm":
        lstm = torch.nn.LSTM(src, src, batch_first=True)
    neigh = torch.nn.Linear(src, 2, bias=False)
    if aggregator != "gcn":
        self_ = torch.nn.Linear(dst, 2)
    if aggregator == "pool":
        torch.nn.init.xavier_uniform_(pool.weight, gain=gain)
        want.update({"fc_pool.weight": pool.weight, "fc_pool.bias": pool.bias})
    if aggregator == "lstm":
        lstm.reset_parameters()
        want.update({f"lstm.{k}": v for k, v in lstm.state_dict().items()})
    if aggregator != "gcn":
        torch.nn.init.xavier_uniform_(self_.weight, gain=gain)
        want.update({"fc_self.weight": self_.weight, "fc_self.bias": self_.bias})
    else:
        want["bias"] = torch.zeros(2)
    torch.nn.init.xavier_uniform_(neigh.weight, gain=gain)
    want["fc_neigh.weight"] = neigh.weight
    got = conv.state_dict()
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert torch.equal(got[k], v.detach()), k
    if aggregator == "mean" and in_feats == 3:  # DGL's values, printed to 4 places.
        assert got["fc_self.weight"].flatten().tolist() == pytest.approx(
            [-0.6386, 0.0574, 0.6125, 0.9296, -1.0503, -0.6746], abs=1e-4)
        assert got["fc_neigh.weight"].flatten().tolist() == pytest.approx(
            [0.5627, 1.2864, -0.3188, 1.1593, -0.2497, 0.1639], abs=1e-4)


def test_rel_norm_with_huge_relation_ids_keeps_pairs_apart():
    """rel_norm takes relation ids up to 2**62: its (destination, relation)
    key must not wrap int64 (dst 4 * 2**62 did, merging (4, 0) with (0, 0))."""
    b = Block(torch.arange(6), torch.tensor([0, 1, 2, 2, 2, 3]), torch.tensor([1, 3, 2]), None)
    big = 2**62 - 1
    assert tnn.rel_norm(b, torch.tensor([0, big, 0])).flatten().tolist() == [1.0, 1.0, 1.0]
    assert tnn.rel_norm(b, torch.tensor([big, big, 0])).flatten().tolist() == [1.0, 1.0, 1.0]
    b = Block(torch.arange(6), torch.tensor([0, 2, 2, 2, 2, 3]), torch.tensor([1, 3, 2]), None)
    assert tnn.rel_norm(b, torch.tensor([big, big, 0])).flatten().tolist() == [0.5, 0.5, 1.0]
    assert tnn.rel_norm(b, torch.tensor([big, big - 1, 0])).flatten().tolist() == [1.0] * 3


@pytest.mark.parametrize("aggregator,want", [
    ("mean", [0.5911, 0.4051, 0.6365, 0.6807, 0.6819, 0.9563]),
    ("gcn", [-0.1315, -0.1945, -0.3141, -1.3218, -0.4968, -2.4491]),
    ("pool", [-0.6514, 0.6553, -0.9383, 0.4545, -1.2253, 0.2537]),
    ("lstm", [-0.1619, 0.0673, 0.4428, 1.0169, 1.0475, 1.9665])])
def test_sageconv_without_edges_gives_the_self_term_as_dgl(aggregator, want):
    """DGL 1.1.3's values (side by side): without edges the neighbour term is
    zeros for every aggregator (DGL sets it when num_edges() == 0: the LSTM
    reducer never runs), on a graph and on a block."""
    none = torch.tensor([], dtype=torch.int64)
    x = torch.arange(12.0).view(3, 4) / 10
    torch.manual_seed(0)
    conv = tnn.SAGEConv(4, 2, aggregator)
    g = tessera.graph((none, none), num_nodes=3)
    assert conv(g, x).flatten().tolist() == pytest.approx(want, abs=1e-4)
    b = tessera.to_block(g, dst_nodes=torch.arange(2))
    assert conv(b, x[:2]).flatten().tolist() == pytest.approx(want[:4], abs=1e-4)
    xx = x.clone().requires_grad_(True)
    conv(g, xx, edge_weight=torch.ones(0, 1)).sum().backward()
    assert xx.grad.tolist() == [xx.grad[0].tolist()] * 3  # The self term's alone.


@pytest.mark.parametrize("layer,want", [
    ("mean", [-2.6975, -1.8377, -0.2117, 0.104]), ("gcn", [-0.8061, -4.0495, -0.3007, -1.4449]),
    ("pool", [-1.8327, 10.8748, -1.3831, 4.7461]), ("lstm", [-0.8867, -0.6986, -0.0146, 0.659]),
    ("graphconv", [-3.4257, 2.6004, -0.9734, 0.7407]), ("gat", [-2.2966, 1.2222, 0.1877, 4.2844])])
def test_edge_weight_shapes_and_dtypes(layer, want):
    """DGL 1.1.3's values (first rows, side by side) for [E] and [E, 1]
    (GATConv: [E] and [1, E]); any other shape of E values was flattened
    and silently reinterpreted: an error naming the shape (DGL's asserts or
    mis-broadcasts). Every floating dtype is cast to the features' (DGL's
    SAGEConv / GraphConv refuse float64 / float16); integers and bool are an
    error naming the dtype in every layer (pool took them, and failed on
    float64 with "expected scalar type Double")."""
    g = tessera.graph((torch.tensor([0, 1, 2, 3, 4, 5, 0, 2, 1, 3]),
                       torch.tensor([1, 2, 3, 4, 0, 1, 2, 0, 4, 3])), num_nodes=6)
    x = torch.arange(24.0).view(6, 4) / 10
    w = torch.tensor([0.5, 1.0, 2.0, 0.25, 1.5, 0.5, 1.0, 2.0, 0.75, 1.25])
    torch.manual_seed(0)
    conv = {"graphconv": lambda: tnn.GraphConv(4, 2, allow_zero_in_degree=True),
            "gat": lambda: tnn.GATConv(4, 2, 2, allow_zero_in_degree=True)}.get(
        layer, lambda: tnn.SAGEConv(4, 2, layer))()
    out = conv(g, x, edge_weight=w)
    assert out.flatten()[:4].tolist() == pytest.approx(want, abs=1e-4)
    for ok in (w.view(-1, 1), w.double(), w.half(), w.view(1, -1) if layer == "gat" else w):
        assert torch.allclose(conv(g, x, edge_weight=ok), out, atol=1e-6), ok.shape
    bad = [w.view(5, 2), w.view(10, 1, 1), torch.tensor(0.5), w[:9]]
    for ew in bad + ([] if layer == "gat" else [w.view(1, -1)]):
        with pytest.raises(tessera.TesseraError, match=r"edge_weight of shape \(" +
                           ", ".join(map(str, ew.shape))):
            conv(g, x, edge_weight=ew)
    for dtype in (torch.int32, torch.int64, torch.bool):
        with pytest.raises(tessera.TesseraError, match=f"floating-point, got {dtype}"):
            conv(g, x, edge_weight=w.to(dtype))
