"""tessera.nn.RelGraphConv / TypedLinear / RGCN and the edge norms on a
hand-drawn block with 3 relations (a, b, c), against a dense reference
computed edge by edge.

Block (destinations are the first 4 of the 7 sources):

    s1 -a-> d0    s3 -b-> d0    s4 -b-> d0
    s0 -c-> d1    s5 -a-> d1    s2 -c-> d1
    s4 -b-> d2
    (d3: no in-edges; s6 -a-> d2 only in the sorted variant below)
"""
import math

import pytest
import torch
import torch.nn.functional as F

import tessera
import tessera.nn as tnn
from tessera.distributed import Block
from tessera.heterograph import _Relation

INDPTR = torch.tensor([0, 3, 6, 7, 7])
SRC = torch.tensor([1, 3, 4, 0, 5, 2, 4])
ETYPES = torch.tensor([0, 1, 1, 2, 0, 2, 1])  # a = 0, b = 1, c = 2
DST = [0, 0, 0, 1, 1, 1, 2]
NUM_SRC, NUM_DST = 7, 4


def block(indptr=INDPTR, src=SRC):
    return Block(torch.arange(100, 100 + NUM_SRC), indptr, src, torch.arange(src.numel()))


def rel_weights(conv):
    """W_r of every relation, from the layer's parameters by the paper's
    formulas (independent of TypedLinear.get_weight)."""
    lin = conv.linear_r
    if lin.regularizer is None:
        return [lin.W[r] for r in range(lin.num_types)]
    if lin.regularizer == "basis":
        return [sum(lin.coeff[r, b] * lin.W[b] for b in range(lin.num_bases))
                for r in range(lin.num_types)]
    blocks = lin.W.view(lin.num_types, lin.num_bases, lin.submat_in, lin.submat_out)
    return [torch.block_diag(*[blocks[r, b] for b in range(lin.num_bases)])
            for r in range(lin.num_types)]


def reference(conv, h, etypes, norm, src=SRC, dst=DST):
    """sum over edges of norm_e * h_src W_r, then layer norm, bias, self loop,
    activation (dropout 0), one destination at a time."""
    w = rel_weights(conv)
    rows = []
    for d in range(NUM_DST):
        acc = torch.zeros(conv.out_feat)
        for e in range(len(dst)):
            if dst[e] == d:
                scale = 1.0 if norm is None else norm.reshape(-1)[e]
                acc = acc + scale * (h[src[e]] @ w[int(etypes[e])])
        rows.append(acc)
    out = torch.stack(rows)
    if conv.layer_norm:
        out = F.layer_norm(out, (conv.out_feat,), conv.layer_norm_weight.weight,
                           conv.layer_norm_weight.bias)
    if conv.bias:
        out = out + conv.h_bias
    if conv.self_loop:
        out = out + h[:NUM_DST] @ conv.loop_weight
    if conv.activation is not None:
        out = conv.activation(out)
    return out


def test_norms_by_hand():
    # d0: a once, b twice; d1: c twice, a once; d2: b once.
    assert tnn.rel_norm(block(), ETYPES).reshape(-1).tolist() == [1, .5, .5, .5, 1, .5, 1]
    assert tnn.rel_norm(block(), ETYPES).shape == (7, 1)
    assert torch.allclose(tnn.norm_by_dst(block()),
                          torch.tensor([1 / 3] * 6 + [1.0]))
    empty = Block(torch.arange(3), torch.tensor([0, 0]), torch.empty(0, dtype=torch.int64),
                  torch.empty(0, dtype=torch.int64))
    assert tnn.rel_norm(empty, torch.empty(0, dtype=torch.int64)).shape == (0, 1)
    assert tnn.norm_by_dst(empty).shape == (0,)


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("basis", None),
                                                   ("bdd", 2)])
@pytest.mark.parametrize("norm_kind", ["rel", "none"])
def test_relgraphconv_matches_dense_reference(regularizer, num_bases, norm_kind):
    torch.manual_seed(0)
    conv = tnn.RelGraphConv(4, 6, 3, regularizer=regularizer, num_bases=num_bases,
                            activation=torch.tanh)
    torch.nn.init.normal_(conv.h_bias)  # zero at init: make the bias visible
    h = torch.randn(NUM_SRC, 4)
    norm = tnn.rel_norm(block(), ETYPES) if norm_kind == "rel" else None
    out = conv(block(), h, ETYPES, norm)
    want = reference(conv, h, ETYPES, norm)
    assert out.shape == (NUM_DST, 6)
    assert torch.allclose(out, want, atol=1e-5), (out, want)
    # d3 has no in-edges: only bias and self loop.
    assert torch.allclose(out[3], torch.tanh(conv.h_bias + h[3] @ conv.loop_weight), atol=1e-6)


def test_options_off_and_layer_norm():
    torch.manual_seed(1)
    h = torch.randn(NUM_SRC, 4)
    bare = tnn.RelGraphConv(4, 3, 3, bias=False, self_loop=False)
    assert not hasattr(bare, "h_bias") and not hasattr(bare, "loop_weight")
    out = bare(block(), h, ETYPES)
    assert torch.allclose(out, reference(bare, h, ETYPES, None), atol=1e-5)
    assert torch.equal(out[3], torch.zeros(3))  # nothing reaches d3
    ln = tnn.RelGraphConv(4, 3, 3, "basis", 2, layer_norm=True, activation=F.relu)
    torch.nn.init.normal_(ln.h_bias)
    norm = tnn.norm_by_dst(block()).unsqueeze(1)
    assert torch.allclose(ln(block(), h, ETYPES, norm), reference(ln, h, ETYPES, norm),
                          atol=1e-5)


def test_norm_may_be_one_dimensional_and_etypes_a_list():
    torch.manual_seed(2)
    conv = tnn.RelGraphConv(4, 6, 3, "basis", 2)
    h = torch.randn(NUM_SRC, 4)
    norm = tnn.rel_norm(block(), ETYPES)
    assert torch.allclose(conv(block(), h, ETYPES.tolist(), norm.reshape(-1)),
                          conv(block(), h, ETYPES, norm))
    assert torch.allclose(conv(block(), h, ETYPES.to(torch.int32), norm),
                          conv(block(), h, ETYPES, norm))


def test_gradients_reach_bases_coefficients_and_inputs():
    torch.manual_seed(3)
    conv = tnn.RelGraphConv(4, 6, 3, "basis", 2, activation=torch.tanh)
    h = torch.randn(NUM_SRC, 4, requires_grad=True)
    norm = tnn.rel_norm(block(), ETYPES)
    target = torch.randn(NUM_DST, 6)
    params = [conv.linear_r.W, conv.linear_r.coeff, conv.loop_weight, conv.h_bias, h]
    got = torch.autograd.grad(((conv(block(), h, ETYPES, norm) - target) ** 2).sum(), params)
    want = torch.autograd.grad(((reference(conv, h, ETYPES, norm) - target) ** 2).sum(), params)
    for name, g, w in zip(["bases", "coeff", "loop_weight", "h_bias", "input"], got, want):
        assert g.abs().sum() > 0, name
        assert torch.allclose(g, w, atol=1e-5), name
    # Source 6 is no one's neighbour and no destination: no gradient.
    assert torch.equal(got[4][6], torch.zeros(4))


def test_presorted_edges():
    # Edges sorted by relation (a, a, a, b, b, b, c, c), with s6 -a-> d2 added.
    src = [1, 5, 6, 3, 4, 4, 0, 2]
    dst = [0, 1, 2, 0, 0, 2, 1, 1]
    et = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2])
    order = sorted(range(8), key=lambda e: (dst[e], e))  # CSR over destinations
    g = block(torch.tensor([0, 3, 6, 8, 8]), torch.tensor([src[e] for e in order]))
    torch.manual_seed(4)
    conv = tnn.RelGraphConv(4, 6, 3, "basis", 2)
    h = torch.randn(NUM_SRC, 4)
    want = reference(conv, h, et[order], None, [src[e] for e in order], [dst[e] for e in order])
    assert torch.allclose(conv(g, h, et[order]), want, atol=1e-5)
    # A block whose edges are in relation order gives the same with presorted.
    g_sorted = Block(torch.arange(100, 107), torch.tensor([0, 3, 6, 8, 8]), torch.tensor(src),
                     torch.arange(8))
    # Not CSR order: the edges listed by relation (the CSR is derived).
    g_sorted._rel[g_sorted.canonical_etypes[0]] = _Relation(
        7, 4, torch.tensor(src), dst=torch.tensor(dst))
    assert torch.allclose(conv(g_sorted, h, et, presorted=True),
                          reference(conv, h, et, None, src, dst), atol=1e-5)
    with pytest.raises(tessera.TesseraError, match="not sorted"):
        conv(block(), h, ETYPES, presorted=True)


def test_typed_linear_per_row():
    torch.manual_seed(5)
    for reg, nb in [(None, None), ("basis", 3), ("bdd", 2)]:
        lin = tnn.TypedLinear(4, 6, 3, reg, nb)
        x = torch.randn(9, 4)
        t = torch.tensor([2, 0, 1, 1, 0, 2, 2, 0, 1])
        w = rel_weights(type("C", (), {"linear_r": lin})())
        want = torch.stack([x[i] @ w[int(t[i])] for i in range(9)])
        assert torch.allclose(lin(x, t), want, atol=1e-5), reg
        order = torch.argsort(t, stable=True)
        assert torch.allclose(lin(x[order], t[order], sorted_by_type=True), want[order],
                              atol=1e-5), reg


def test_parameters_and_initialisation_as_dgl():
    torch.manual_seed(6)
    names = set(dict(tnn.RelGraphConv(8, 16, 5, "basis", 2, layer_norm=True).named_parameters()))
    assert names == {"linear_r.W", "linear_r.coeff", "h_bias", "loop_weight",
                     "layer_norm_weight.weight", "layer_norm_weight.bias"}
    conv = tnn.RelGraphConv(64, 32, 5, "basis", 2)
    assert conv.linear_r.W.shape == (2, 64, 32) and conv.linear_r.coeff.shape == (5, 2)
    assert conv.linear_r.W.abs().max() <= 1 / math.sqrt(64)
    assert conv.linear_r.W.abs().max() > 0.9 / math.sqrt(64)  # uniform, not a narrow normal
    gain = math.sqrt(2)
    assert conv.loop_weight.abs().max() <= gain * math.sqrt(6 / (64 + 32))
    assert conv.linear_r.coeff.abs().max() <= gain * math.sqrt(6 / (5 + 2))
    assert torch.equal(conv.h_bias, torch.zeros(32))
    # regularizer without num_bases: num_rels bases (DGL).
    assert tnn.RelGraphConv(8, 8, 5, "basis").linear_r.W.shape == (5, 8, 8)
    assert tnn.RelGraphConv(8, 8, 5).linear_r.W.shape == (5, 8, 8)
    bdd = tnn.RelGraphConv(8, 4, 5, "bdd", 2)
    assert bdd.linear_r.W.shape == (5, 2 * 4 * 2)
    assert bdd.linear_r.W.abs().max() <= 1 / math.sqrt(4)


def test_bad_input_is_a_clear_error():
    conv = tnn.RelGraphConv(4, 6, 3)
    h = torch.randn(NUM_SRC, 4)
    with pytest.raises(tessera.TesseraError, match=r"type 3 out of range \[0, 3\)"):
        conv(block(), h, torch.tensor([0, 1, 1, 2, 0, 2, 3]))
    with pytest.raises(tessera.TesseraError, match="6 types for 7 rows"):
        conv(block(), h, ETYPES[:6])
    with pytest.raises(tessera.TesseraError, match="integers"):
        conv(block(), h, ETYPES.float())
    with pytest.raises(tessera.TesseraError, match="norm"):
        conv(block(), h, ETYPES, torch.ones(7, 2))
    with pytest.raises(tessera.TesseraError, match="norm"):
        conv(block(), h, ETYPES, torch.tensor(0.5))
    with pytest.raises(tessera.TesseraError, match="norm"):
        conv(block(), h, ETYPES, torch.ones(6))
    with pytest.raises(tessera.TesseraError, match="source rows"):
        conv(block(), h[:6], ETYPES)
    with pytest.raises(tessera.TesseraError, match="expects 4"):
        conv(block(), torch.randn(NUM_SRC, 5), ETYPES)
    with pytest.raises(tessera.TesseraError, match="divisible"):
        tnn.RelGraphConv(6, 4, 3, "bdd", 4)
    with pytest.raises(tessera.TesseraError, match="regularizer"):
        tnn.RelGraphConv(4, 4, 3, "lowrank", 2)
    with pytest.raises(tessera.TesseraError, match="expected a Block"):
        conv(object(), h, ETYPES)


def test_every_parameter_takes_part_without_edges():
    """DDP needs every parameter in the graph, also for a batch whose block
    has no edges (or no edges of some relation)."""
    empty = Block(torch.arange(3), torch.tensor([0, 0, 0]), torch.empty(0, dtype=torch.int64),
                  torch.empty(0, dtype=torch.int64))
    for reg, nb in [(None, None), ("basis", 2), ("bdd", 2)]:
        conv = tnn.RelGraphConv(4, 4, 3, reg, nb, layer_norm=True)
        out = conv(empty, torch.randn(3, 4), torch.empty(0, dtype=torch.int64))
        assert out.shape == (2, 4)
        out.sum().backward()
        for name, p in conv.named_parameters():
            assert p.grad is not None, (reg, name)


def test_rgcn_model_over_two_blocks():
    torch.manual_seed(7)
    model = tnn.RGCN(4, 3, num_rels=3, num_bases=2, num_hidden_layers=0, dropout=0.0,
                     use_self_loop=True)
    assert len(model.layers) == 2
    assert model.layers[0].activation is F.relu and model.layers[1].activation is None
    # Layer 1: the 4 destinations of `block()` are the sources of a block with
    # destinations d0, d1: d0 <-a- s2, d1 <-b- s0, d1 <-c- s3.
    top = Block(torch.arange(4), torch.tensor([0, 1, 3]), torch.tensor([2, 0, 3]),
                torch.arange(3))
    top_types = torch.tensor([0, 1, 2])
    x = torch.randn(NUM_SRC, 4)
    norms = [tnn.rel_norm(block(), ETYPES), tnn.rel_norm(top, top_types)]
    out = model([block(), top], x, [ETYPES, top_types], norms)
    hidden = model.layers[0](block(), x, ETYPES, norms[0])
    assert torch.allclose(out, model.layers[1](top, hidden, top_types, norms[1]))
    assert out.shape == (2, 3)
    F.cross_entropy(out, torch.tensor([0, 2])).backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(tessera.TesseraError, match="2 layers, got 1 blocks"):
        model([block()], x, [ETYPES])
    # num_bases < 0 (DGL's -1): one basis per relation.
    assert tnn.RGCN(4, 3, 5, num_bases=-1).layers[0].linear_r.W.shape == (5, 4, 4)
    assert len(tnn.RGCN(4, 3, 5, num_hidden_layers=2).layers) == 4
