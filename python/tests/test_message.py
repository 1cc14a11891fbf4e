"""DGL's graph objects and message passing (tessera.heterograph,
tessera.function): every builtin message and reduction against a per-edge
numpy reference on a hand-drawn typed block (gradients with gradcheck in
float64), user-defined functions, frames and local_scope, to_block, and
clear errors for bad input.

The hand-drawn graph (per-type ids):

    user 0..4, item 0..3
    follows (user -> user):  0->1  2->1  3->1  4->2  1->2  (not in dst order)
    buys    (user -> item):  0->0  1->0  4->1
    (item 2, 3 and user 0 have no in-edges)

to_block with destinations {user: [1, 2, 0], item: [0, 1, 3]} gives the
block the tests compute on.
"""
import numpy as np
import pytest
import torch

import tessera
import tessera.function as fn
import tessera.nn as tnn
from tessera import EID, NID

FOLLOWS = ("user", "follows", "user")
BUYS = ("user", "buys", "item")
EDGES = {FOLLOWS: ([0, 2, 3, 4, 1], [1, 1, 1, 2, 2]), BUYS: ([0, 1, 4], [0, 0, 1])}
DST = {"user": [1, 2, 0], "item": [0, 1, 3]}
NUM = {"user": 5, "item": 4}


def hetero():
    return tessera.heterograph({c: (torch.tensor(u), torch.tensor(v)) for c, (u, v) in
                                EDGES.items()}, num_nodes_dict=NUM)


def block():
    return tessera.to_block(hetero(), {t: torch.tensor(v) for t, v in DST.items()})


def test_to_block_structure_and_ids():
    b = block()
    assert b.is_block and b.srctypes == ["item", "user"] and b.dsttypes == ["item", "user"]
    # Destinations first, then the other sources in increasing id order.
    assert b.srcdata[NID]["user"].tolist() == [1, 2, 0, 3, 4]
    assert b.dstdata[NID]["user"].tolist() == [1, 2, 0]
    assert b.srcdata[NID]["item"].tolist() == [0, 1, 3]  # No item is a source.
    assert b.num_src_nodes("user") == 5 and b.num_dst_nodes("item") == 3
    for c in (FOLLOWS, BUYS):
        u, v = b.edges(etype=c)
        gu, gv = b.srcdata[NID][c[0]][u], b.dstdata[NID][c[2]][v]
        assert (gu.tolist(), gv.tolist()) == EDGES[c]  # g's edge order kept
        assert b.edata[EID][c].tolist() == list(range(len(EDGES[c][0])))
    assert b.in_degrees(etype="follows").tolist() == [3, 2, 0]
    assert b.out_degrees(etype="buys").tolist() == [1, 0, 1, 0, 1]  # users 1 2 0 3 4
    assert b.number_of_edges("buys") == 3 and b.num_edges() == 8


def test_to_block_homogeneous_default_dst_and_data():
    g = tessera.graph((torch.tensor([3, 0, 2]), torch.tensor([1, 1, 3])), num_nodes=5)
    g.ndata["x"] = torch.arange(5.0).unsqueeze(1)
    g.edata["w"] = torch.tensor([1.0, 2.0, 3.0])
    b = tessera.to_block(g)  # Destinations: nodes with in-edges.
    assert b.dstdata[NID].tolist() == [1, 3]
    assert b.srcdata[NID].tolist() == [1, 3, 0, 2]
    assert b.srcdata["x"].reshape(-1).tolist() == [1.0, 3.0, 0.0, 2.0]
    assert b.edata["w"].tolist() == [1.0, 2.0, 3.0]
    nb = tessera.to_block(g, torch.tensor([1, 3]), include_dst_in_src=False)
    assert nb.srcdata[NID].tolist() == [0, 2, 3]
    sb = tessera.to_block(g, torch.tensor([1, 3]), src_nodes=torch.tensor([2, 0, 3]))
    u, v = sb.edges()
    assert sb.srcdata[NID][u].tolist() == [3, 0, 2] and sb.dstdata[NID][v].tolist() == [1, 1, 3]
    # As DGL, NID / EID are the ids in g (g's own NID / EID are replaced).
    g.ndata[NID] = torch.tensor([50, 51, 52, 53, 54])
    g.edata[EID] = torch.tensor([7, 8, 9])
    b = tessera.to_block(g)
    assert b.srcdata[NID].tolist() == [1, 3, 0, 2] and b.edata[EID].tolist() == [0, 1, 2]


def test_to_block_errors_name_the_problem():
    g = hetero()
    with pytest.raises(tessera.TesseraError, match="node 2 is not among them"):
        tessera.to_block(g, {"user": torch.tensor([1]), "item": torch.tensor([0, 1])})
    with pytest.raises(tessera.TesseraError, match="several node types"):
        tessera.to_block(g, torch.tensor([1]))
    with pytest.raises(tessera.TesseraError, match="unknown node type 'paper'"):
        tessera.to_block(g, {"paper": torch.tensor([0])})
    with pytest.raises(tessera.TesseraError, match="outside the graph's 4 nodes"):
        tessera.to_block(g, {"user": torch.tensor([1, 2, 0]), "item": torch.tensor([0, 1, 9])})
    with pytest.raises(tessera.TesseraError, match="repeat"):
        tessera.to_block(g, {"user": torch.tensor([1, 1, 2]), "item": torch.tensor([0, 1])})
    with pytest.raises(tessera.TesseraError, match="expected a graph"):
        tessera.to_block(block(), DST)


# ---------------------------------------------------------------- reference


def operand(b, c, side, data):
    """Per edge (numpy) the values of side u / v / e on relation c."""
    u, v = (x.numpy() for x in b.edges(etype=c))
    if side == "u":
        return data["src"][c[0]][u]
    if side == "v":
        return data["dst"][c[2]][v]
    return data["edge"][c]


def np_message(lhs, op, rhs, a, b_):
    if op == "copy":
        return a
    while a.ndim < b_.ndim:
        a = a.reshape(a.shape[0], *([1] * (b_.ndim - a.ndim)), *a.shape[1:])
    while b_.ndim < a.ndim:
        b_ = b_.reshape(b_.shape[0], *([1] * (a.ndim - b_.ndim)), *b_.shape[1:])
    return {"add": a + b_, "sub": a - b_, "mul": a * b_, "div": a / b_,
            "dot": (a * b_).sum(-1, keepdims=True)}[op]


def np_reduce(msgs, dst, num_dst, op):
    out = np.zeros((num_dst, *msgs.shape[1:]))
    for d in range(num_dst):
        rows = msgs[dst == d]
        if len(rows):
            out[d] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0),
                      "min": rows.min(0)}[op]
    return out


def fill(b, shapes, seed=0):
    """Random float64 data: shapes = {"u": src shape, "v": dst shape, "e":
    edge shape} (trailing dims), on every type and relation."""
    g = torch.Generator().manual_seed(seed)
    data = {"src": {}, "dst": {}, "edge": {}}
    for t in b.srctypes:
        data["src"][t] = torch.randn(b.num_src_nodes(t), *shapes["u"], generator=g,
                                     dtype=torch.float64)
        data["dst"][t] = torch.randn(b.num_dst_nodes(t), *shapes["v"], generator=g,
                                     dtype=torch.float64)
    for c in b.canonical_etypes:
        data["edge"][c] = torch.rand(b.num_edges(c), *shapes["e"], generator=g,
                                     dtype=torch.float64) + 0.5
    b.srcdata["a"] = data["src"]
    b.dstdata["a"] = data["dst"]
    b.edata["a"] = data["edge"]
    return {k: {t: x.numpy() for t, x in v.items()} for k, v in data.items()}


MESSAGES = ([("u", "copy", None), ("e", "copy", None)] +
            [(lhs, op, rhs) for lhs, rhs in (("u", "v"), ("u", "e"), ("e", "u"), ("v", "e"))
             for op in ("add", "sub", "mul", "div", "dot")])
SHAPES = [{"u": (3,), "v": (3,), "e": (3,)},          # element-wise
          {"u": (2, 3), "v": (2, 3), "e": (2, 1)},    # per head
          {"u": (3,), "v": (3,), "e": ()}]            # scalar per edge


def dot_refused(msg, shapes):
    """DGL refuses a dot whose operands' last sizes differ (1-D counts as 1)."""
    lhs, op, rhs = msg
    last = [(shapes[x] or (1,))[-1] for x in (lhs, rhs)] if op == "dot" else [0, 0]
    return last[0] != last[1]


def builtin(lhs, op, rhs):
    if op == "copy":
        return getattr(fn, f"copy_{lhs}")("a", "m")
    return getattr(fn, f"{lhs}_{op}_{rhs}")("a", "a", "m")


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: "_".join(x for x in m if x))
def test_update_all_builtins_against_numpy(msg, reduce, shape):
    b = block()
    data = fill(b, SHAPES[shape])
    lhs, op, rhs = msg
    if dot_refused(msg, SHAPES[shape]):
        with pytest.raises(tessera.TesseraError, match="same size on the last dimension"):
            b.update_all(builtin(lhs, op, rhs), getattr(fn, reduce)("m", "out"),
                         etype=b.canonical_etypes[0])
        return
    for c in b.canonical_etypes:
        b.update_all(builtin(lhs, op, rhs), getattr(fn, reduce)("m", "out"), etype=c)
        a = operand(b, c, lhs, data)
        m = np_message(lhs, op, rhs, a, None if rhs is None else operand(b, c, rhs, data))
        want = np_reduce(m, b.edges(etype=c)[1].numpy(), b.num_dst_nodes(c[2]), reduce)
        got = b.dstdata["out"][c[2]] if len(b.dsttypes) > 1 else b.dstdata["out"]
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=str(c))
        del b.dstdata["out"]


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: "_".join(x for x in m if x))
def test_apply_edges_builtins_against_numpy(msg):
    b = block()
    data = fill(b, SHAPES[1])
    lhs, op, rhs = msg
    if dot_refused(msg, SHAPES[1]):
        with pytest.raises(tessera.TesseraError, match="same size on the last dimension"):
            b.apply_edges(builtin(lhs, op, rhs))
        return
    b.apply_edges(builtin(lhs, op, rhs))  # Every relation.
    for c in b.canonical_etypes:
        a = operand(b, c, lhs, data)
        want = np_message(lhs, op, rhs, a, None if rhs is None else operand(b, c, rhs, data))
        np.testing.assert_allclose(b.edata["m"][c].numpy(), want, rtol=1e-12)


def relation_fn(c, mfunc, rfunc, inputs, edge=None):
    """The function of `inputs` that one relation's update_all computes."""
    def f(*xs):
        b = block()
        b.srcdata["x"] = {c[0]: xs[0]}
        if edge is not None:
            b.edata["w"] = {c: xs[1]}
        b.dstdata["y"] = {c[2]: torch.zeros(b.num_dst_nodes(c[2]), dtype=torch.float64)}
        b.update_all(mfunc, rfunc, etype=c)
        return b.dstdata["out"][c[2]]
    return f


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("case", ["copy_u", "scalar", "head", "elementwise", "general",
                                  "copy_e"])
def test_gradients_gradcheck(case, reduce):
    b = block()
    c = FOLLOWS
    n_src, n_e = b.num_src_nodes("user"), b.num_edges(c)
    g = torch.Generator().manual_seed(3)
    # Distinct values, so max / min have one winner and are differentiable.
    x = (torch.randperm(n_src * 6, generator=g).double() / 7).reshape(n_src, 6)
    inputs, edge, mfunc = [x], None, fn.copy_u("x", "m")
    if case == "scalar":
        edge, mfunc = torch.rand(n_e, 1, generator=g, dtype=torch.float64) + 0.5, fn.u_mul_e(
            "x", "w", "m")
    elif case == "head":
        x = x.reshape(n_src, 2, 3)
        edge, mfunc = torch.rand(n_e, 2, 1, generator=g, dtype=torch.float64) + 0.5, fn.e_mul_u(
            "w", "x", "m")
    elif case == "elementwise":
        edge, mfunc = torch.rand(n_e, 6, generator=g, dtype=torch.float64) + 0.5, fn.u_mul_e(
            "x", "w", "m")
    elif case == "general":
        edge, mfunc = torch.rand(n_e, 6, generator=g, dtype=torch.float64), fn.u_add_e(
            "x", "w", "m")
    elif case == "copy_e":
        edge, mfunc = (torch.randperm(n_e * 6, generator=g).double() / 5).reshape(n_e, 6), \
            fn.copy_e("w", "m")
    inputs = [x.requires_grad_()] + ([] if edge is None else [edge.requires_grad_()])
    f = relation_fn(c, mfunc, getattr(fn, reduce)("m", "out"), inputs, edge)
    assert torch.autograd.gradcheck(f, inputs)


def test_apply_edges_dot_and_edge_softmax_gradcheck():
    g = torch.Generator().manual_seed(5)
    h = torch.randn(5, 4, dtype=torch.float64, generator=g, requires_grad=True)

    def score(h):
        b = block()[FOLLOWS]
        b.srcdata["h"] = h
        b.dstdata["h"] = h[:3]
        b.apply_edges(fn.u_dot_v("h", "h", "s"))
        return tnn.edge_softmax(b, b.edata["s"])
    assert torch.autograd.gradcheck(score, [h])
    s = score(h).detach()
    dst = block().edges(etype=FOLLOWS)[1]
    for d in range(3):
        assert torch.allclose(s[dst == d].sum(), torch.tensor(1.0, dtype=torch.float64)) or (
            not bool((dst == d).any()))


def test_edge_softmax_across_relations_and_by_source():
    g = tessera.heterograph({("a", "r", "c"): (torch.tensor([0, 1]), torch.tensor([0, 0])),
                             ("b", "s", "c"): (torch.tensor([0]), torch.tensor([0]))})
    logits = {"r": torch.tensor([1.0, 2.0]), "s": torch.tensor([3.0])}
    out = tnn.edge_softmax(g, logits)
    want = torch.softmax(torch.tensor([1.0, 2.0, 3.0]), 0)
    assert torch.allclose(torch.cat([out[("a", "r", "c")], out[("b", "s", "c")]]), want)
    h = tessera.graph((torch.tensor([0, 0, 1]), torch.tensor([1, 2, 2])))
    by_src = tnn.edge_softmax(h, torch.tensor([0.0, 1.0, 5.0]), norm_by="src")
    assert torch.allclose(by_src[:2], torch.softmax(torch.tensor([0.0, 1.0]), 0))
    assert by_src[2] == 1.0
    with pytest.raises(tessera.TesseraError, match="logits"):
        tnn.edge_softmax(h, torch.ones(2))


def test_update_all_every_relation_and_multi_update_all():
    b = block()
    fill(b, {"u": (3,), "v": (3,), "e": ()})
    # Typed update_all without etype: per relation, then summed per type.
    b.update_all(fn.copy_u("a", "m"), fn.sum("m", "all"))
    sums = {}
    for c in b.canonical_etypes:
        b.update_all(fn.copy_u("a", "m"), fn.sum("m", "one"), etype=c)
        sums.setdefault(c[2], []).append(b.dstdata["one"][c[2]].clone())
    for t, parts in sums.items():
        assert torch.allclose(b.dstdata["all"][t], sum(parts))
    with pytest.raises(tessera.TesseraError, match="mean"):
        b.update_all(fn.copy_u("a", "m"), fn.mean("m", "x"))
    with pytest.raises(tessera.TesseraError, match="builtin"):
        b.update_all(lambda e: {"m": e.src["a"]}, fn.sum("m", "x"))
    # Two relations into one type, stacked in relation order.
    g = tessera.heterograph({("a", "r", "c"): (torch.tensor([0, 1]), torch.tensor([0, 0])),
                             ("b", "s", "c"): (torch.tensor([0]), torch.tensor([1]))})
    g.nodes["a"].data["h"] = torch.tensor([[1.0], [2.0]])
    g.nodes["b"].data["h"] = torch.tensor([[5.0]])
    g.multi_update_all({"r": (fn.copy_u("h", "m"), fn.sum("m", "h")),
                        "s": (fn.copy_u("h", "m"), fn.max("m", "h"))}, "stack")
    assert g.nodes["c"].data["h"].tolist() == [[[3.0], [0.0]], [[0.0], [5.0]]]
    g.multi_update_all({"r": (fn.copy_u("h", "m"), fn.sum("m", "z")),
                        "s": (fn.copy_u("h", "m"), fn.sum("m", "z"))}, "mean",
                       apply_node_func=lambda nodes: {"z2": nodes.data["z"] * 2})
    assert g.nodes["c"].data["z2"].tolist() == [[3.0], [5.0]]
    g.multi_update_all({"r": (fn.copy_u("h", "m"), fn.sum("m", "q"))},
                       lambda xs: xs[0] + 100)  # One relation: not merged (DGL).
    assert g.nodes["c"].data["q"].tolist() == [[3.0], [0.0]]
    g.multi_update_all({"r": (fn.copy_u("h", "m"), fn.sum("m", "q")),
                        "s": (fn.copy_u("h", "m"), fn.sum("m", "q"))},
                       lambda xs: xs[0] + xs[1] + 100)
    assert g.nodes["c"].data["q"].tolist() == [[103.0], [105.0]]


def test_user_defined_functions_equal_builtins():
    b = block()[FOLLOWS]
    b.srcdata["h"] = torch.randn(5, 4)
    b.edata["w"] = torch.rand(5, 1)
    b.update_all(fn.u_mul_e("h", "w", "m"), fn.max("m", "want"))
    udf_message = lambda edges: {"m": edges.src["h"] * edges.data["w"]}  # noqa: E731
    udf_reduce = lambda nodes: {  # noqa: E731
        "got": nodes.mailbox["m"].max(1).values,
        "deg": torch.full((len(nodes),), float(nodes.mailbox["m"].shape[1]))}
    b.update_all(udf_message, udf_reduce)
    assert torch.allclose(b.dstdata["got"], b.dstdata["want"])
    assert b.dstdata["deg"].tolist() == [3.0, 2.0, 0.0]  # Zero without in-edges, as DGL.
    b.dstdata.pop("got")
    b.update_all(udf_message, udf_reduce,
                 apply_node_func=lambda nodes: {"twice": nodes.data["got"] * 2})
    assert torch.allclose(b.dstdata["twice"], 2 * b.dstdata["want"])
    assert "got" not in b.dstdata  # Only apply_node_func's outputs are stored (DGL).
    # Builtin message, UDF reduction; UDF apply_edges seeing src, dst, data.
    b.update_all(fn.copy_u("h", "m"), lambda nodes: {"s": nodes.mailbox["m"].sum(1)})
    b.update_all(fn.copy_u("h", "m"), fn.sum("m", "s2"))
    assert torch.allclose(b.dstdata["s"], b.dstdata["s2"], atol=1e-6)
    b.dstdata["h"] = torch.randn(3, 4)
    b.apply_edges(lambda e: {"d": (e.src["h"] - e.dst["h"]) * e.data["w"]})
    u, v = b.edges()
    assert torch.allclose(b.edata["d"], (b.srcdata["h"][u] - b.dstdata["h"][v]) * b.edata["w"])
    # A subset of edges: those rows change, the others stay.
    before = b.edata["d"].clone()
    b.apply_edges(fn.u_sub_v("h", "h", "d"), edges=torch.tensor([1, 3]))
    assert torch.equal(b.edata["d"][[0, 2, 4]], before[[0, 2, 4]])
    assert torch.allclose(b.edata["d"][[1, 3]], b.srcdata["h"][u[[1, 3]]] - b.dstdata["h"][v[[1, 3]]])


def test_frames_views_and_local_scope():
    b = block()
    assert isinstance(b.srcdata[NID], dict)  # Several types: per type (DGL).
    rb = b["follows"]
    assert torch.equal(rb.srcdata[NID], b.srcdata[NID]["user"])  # One type: a tensor.
    rb.srcdata["x"] = torch.ones(5, 2)  # Shared frames: visible in the block.
    assert torch.equal(b.srcnodes["user"].data["x"], torch.ones(5, 2))
    with pytest.raises(tessera.TesseraError, match="for 5 rows"):
        rb.srcdata["x"] = torch.ones(4, 2)
    with pytest.raises(tessera.TesseraError, match="several types"):
        b.srcdata["y"] = torch.ones(5, 2)
    with pytest.raises(tessera.TesseraError, match="unknown type 'paper'"):
        b.srcdata["y"] = {"paper": torch.ones(1)}
    with pytest.raises(tessera.TesseraError, match="unknown relation 'likes'"):
        b.edges["likes"]
    with pytest.raises(tessera.TesseraError, match="a block has no ndata"):
        b.ndata
    with b.local_scope():
        b.srcdata["x"] = {"user": torch.zeros(5, 2)}
        b.dstdata["new"] = {"item": torch.ones(3)}
        with b.local_scope():
            b.edata["e"] = {FOLLOWS: torch.ones(5)}
        assert "e" not in b.edata
        b.srcnodes["user"].data["x"].add_(1)  # In place: stays after the scope.
    assert "new" not in b.dstdata and torch.equal(b.srcdata["x"]["user"], torch.ones(5, 2))
    lv = b.local_var()
    lv.srcdata["only_here"] = {"user": torch.ones(5)}
    assert "only_here" not in b.srcdata
    g = tessera.graph((torch.tensor([0, 1]), torch.tensor([1, 2])))
    g.ndata["h"] = torch.ones(3, 1)
    with g.local_scope():
        g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
        assert g.ndata["h"].reshape(-1).tolist() == [0.0, 1.0, 1.0]
    assert g.ndata["h"].reshape(-1).tolist() == [1.0, 1.0, 1.0]
    assert g.nodes().tolist() == [0, 1, 2] and g.edges(form="eid").tolist() == [0, 1]
    assert g.in_degrees(1) == 1 and g.to("cpu") is g and g.int() is g


def test_node_and_edge_views_of_ids():
    """DGL's ``g.nodes[ids].data`` / ``g.edges[ids].data``: the rows of those
    nodes / edges (ids, a list, an int, a range, ``(u, v)`` pairs); writes
    change those rows only, a new name is 0 elsewhere; ``[:]`` is every
    row, other slices an error. Values: DGL 1.1.3's on the same graph."""
    g = tessera.graph((torch.tensor([0, 1, 2, 3, 0]), torch.tensor([1, 2, 3, 0, 1])))
    g.ndata["x"] = torch.tensor([[0.0], [10.0], [20.0], [30.0]])
    g.edata["w"] = torch.arange(5.0)
    assert g.nodes[torch.tensor([2, 0])].data["x"].tolist() == [[20.0], [0.0]]
    assert g.nodes[[1, 3]].data["x"].tolist() == [[10.0], [30.0]]
    assert g.nodes[np.array([1, 3])].data["x"].tolist() == [[10.0], [30.0]]
    assert g.nodes[1].data["x"].tolist() == [[10.0]]  # One id: one row, as DGL's.
    assert g.nodes[range(2)].data["x"].tolist() == [[0.0], [10.0]]
    assert g.nodes[[1, 1]].data["x"].tolist() == [[10.0], [10.0]]
    assert g.nodes[[]].data["x"].shape == (0, 1)
    assert g.nodes[([1, 2], "_N")].data["x"].tolist() == [[10.0], [20.0]]
    assert torch.equal(g.nodes[:].data["x"], g.ndata["x"])
    assert torch.equal(g.nodes[None].data["x"], g.ndata["x"])
    view = g.nodes[[0, 1]].data
    assert list(view) == ["x"] and len(view) == 1 and "x" in view and "y" not in view
    view["x"].add_(100)  # A read is a copy.
    assert g.ndata["x"][:2].tolist() == [[0.0], [10.0]]
    g.nodes[[1, 3]].data["x"] = torch.tensor([[7.0], [8.0]])
    assert g.ndata["x"].tolist() == [[0.0], [7.0], [20.0], [8.0]]
    g.nodes[[1, 3]].data["y"] = torch.tensor([[7, 7], [8, 8]])  # New: 0 elsewhere.
    assert g.ndata["y"].tolist() == [[0, 0], [7, 7], [0, 0], [8, 8]]
    g.nodes[[1]].data["z"] = torch.tensor([True])
    assert g.ndata["z"].tolist() == [False, True, False, False]
    g.nodes[1].data["x"] = torch.tensor([[3.0]])
    assert g.ndata["x"].tolist() == [[0.0], [3.0], [20.0], [8.0]]
    del g.nodes[[0]].data["y"]  # The whole name, as DGL's.
    assert list(g.ndata) == ["x", "z"]
    # Edges: ids, or (u, v) endpoint pairs (the lowest id of parallel edges).
    assert g.edges[torch.tensor([2, 0])].data["w"].tolist() == [2.0, 0.0]
    assert g.edges[[1, 3]].data["w"].tolist() == [1.0, 3.0]
    assert g.edges[1].data["w"].tolist() == [1.0]
    assert g.edges[([0, 2], [1, 3])].data["w"].tolist() == [0.0, 2.0]
    assert g.edges[(0, 1)].data["w"].tolist() == [0.0]
    assert g.edges[[]].data["w"].tolist() == []
    for whole in (slice(None), None, "_E", ("_N", "_E", "_N")):
        assert g.edges[whole].data["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    g.edges[[1, 3]].data["w"] = torch.tensor([7.0, 8.0])
    assert g.edata["w"].tolist() == [0.0, 7.0, 2.0, 8.0, 4.0]
    g.edges[([0], [1])].data["y"] = torch.tensor([[7, 7]])
    assert g.edata["y"].tolist() == [[7, 7], [0, 0], [0, 0], [0, 0], [0, 0]]
    # DGL: an IndexError / DGLError; here TesseraErrors naming the id.
    with pytest.raises(tessera.TesseraError, match="node 5 does not exist"):
        g.nodes[[5]].data["x"]
    with pytest.raises(tessera.TesseraError, match="node -1 does not exist"):
        g.nodes[[-1]].data["x"]
    with pytest.raises(tessera.TesseraError, match="node 9 does not exist"):
        g.nodes[[9]].data["x"] = torch.tensor([[7.0]])
    with pytest.raises(tessera.TesseraError, match=r"shape \(1, 1\) for 2 ids"):
        g.nodes[[1, 3]].data["x"] = torch.tensor([[7.0]])
    with pytest.raises(tessera.TesseraError, match="holds torch.float32"):
        g.nodes[[1]].data["x"] = torch.tensor([[5]])
    with pytest.raises(tessera.TesseraError, match="must be a tensor"):
        g.nodes[[0]].data["x"] = {"_N": torch.tensor([[1.0]])}
    with pytest.raises(tessera.TesseraError, match="full slice"):
        g.nodes[1:3]
    with pytest.raises(tessera.TesseraError, match=r"\(ids, node type\)"):
        g.nodes[("_N", [1, 2])]
    with pytest.raises(KeyError, match="has no data 'nope'"):
        g.nodes[[1]].data["nope"]
    with pytest.raises(tessera.TesseraError, match="1D"):
        g.nodes[torch.tensor([[1]])]
    with pytest.raises(tessera.TesseraError, match="edge 7 does not exist"):
        g.edges[[7]].data["w"]
    with pytest.raises(tessera.TesseraError, match=r"\(0, 3\) does not form a valid edge"):
        g.edges[([0], [3])].data["w"]
    with pytest.raises(tessera.TesseraError, match="full slice"):
        g.edges[1:2]
    assert g.ndata["x"].tolist() == [[0.0], [3.0], [20.0], [8.0]]  # Nothing written.


def test_typed_node_and_edge_views_of_ids():
    """Several types: ``g.nodes[(ids, ntype)]`` (ids alone are an error, as
    DGL's), a relation's edge ids need ``g.edges[etype]`` of a graph with one
    relation; a block's ``srcnodes`` / ``dstnodes`` likewise."""
    h = tessera.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]),
                             ("user", "plays", "game"): ([0, 2], [0, 1])})
    h.nodes["user"].data["x"] = torch.arange(3.0)
    h.nodes["game"].data["x"] = torch.arange(2.0) + 10
    assert h.nodes[([0, 2], "user")].data["x"].tolist() == [0.0, 2.0]
    h.nodes[([1], "game")].data["y"] = torch.tensor([3.0])
    assert h.nodes["game"].data["y"].tolist() == [0.0, 3.0]
    assert {t: v.tolist() for t, v in h.ndata["y"].items()} == {"game": [0.0, 3.0]}
    for key in ([0], ([0], None)):
        with pytest.raises(tessera.TesseraError, match="several node types"):
            h.nodes[key]
    with pytest.raises(KeyError, match="unknown node type 'bad'"):
        h.nodes[([0], "bad")]
    for key in ([0], ([0], [0])):
        with pytest.raises(tessera.TesseraError, match="several edge types"):
            h.edges[key]
    plays = tessera.heterograph({("user", "plays", "game"): ([0, 2], [0, 1])})
    plays.edata["w"] = torch.tensor([5.0, 6.0])
    assert plays.edges[[1]].data["w"].tolist() == [6.0]
    assert plays.edges[([2], [1])].data["w"].tolist() == [6.0]
    g = tessera.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    b = tessera.to_block(tessera.in_subgraph(g, torch.tensor([1, 2])), torch.tensor([1, 2]))
    b.srcdata["x"] = torch.arange(3.0)
    b.dstdata["y"] = torch.arange(2.0) + 10
    b.edata["w"] = torch.arange(2.0)
    assert b.srcdata[NID].tolist() == [1, 2, 0]
    assert b.srcnodes[[2, 0]].data["x"].tolist() == [2.0, 0.0]
    assert b.srcnodes[([1], "_N")].data["x"].tolist() == [1.0]
    assert b.dstnodes[[1]].data["y"].tolist() == [11.0]
    assert b.edges[[1]].data["w"].tolist() == [1.0]
    b.dstnodes[[1]].data["z"] = torch.tensor([1.0])
    assert b.dstdata["z"].tolist() == [0.0, 1.0] and "z" not in b.srcdata
    b.srcnodes[[2]].data["x"] = torch.tensor([9.0])
    assert b.srcdata["x"].tolist() == [0.0, 1.0, 9.0]
    with pytest.raises(tessera.TesseraError, match="node 2 does not exist"):
        b.dstnodes[[2]].data["y"]
    hb = block()
    hb.srcdata["h"] = {"user": torch.arange(5.0)}
    assert hb.srcnodes[([4, 0], "user")].data["h"].tolist() == [4.0, 0.0]
    assert hb.dstnodes[([2], "user")].data[NID].tolist() == [0]
    with pytest.raises(tessera.TesseraError, match="several node types"):
        hb.dstnodes[[0]]


def test_bad_message_passing_input_is_a_clear_error():
    b = block()
    with pytest.raises(KeyError, match="u_mul_e: source node type 'user' has no data 'h'"):
        b.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "o"), etype="follows")
    b.srcdata["h"] = {"user": torch.ones(5, 3)}
    with pytest.raises(KeyError, match=r"relation \('user', 'follows', 'user'\) has no data 'w'"):
        b.apply_edges(fn.u_mul_e("h", "w", "m"), etype="follows")
    with pytest.raises(tessera.TesseraError, match="reduces message 'x'"):
        b.update_all(fn.copy_u("h", "m"), fn.sum("x", "o"), etype="follows")
    with pytest.raises(tessera.TesseraError, match="unknown relation 'cites'"):
        b.update_all(fn.copy_u("h", "m"), fn.sum("m", "o"), etype="cites")
    with pytest.raises(tessera.TesseraError, match="expected 5 rows"):
        b.apply_edges(lambda e: {"bad": torch.ones(2)}, etype="follows")
    with pytest.raises(tessera.TesseraError, match="do not broadcast"):
        b.edata["w"] = {FOLLOWS: torch.ones(5, 2)}
        b.apply_edges(fn.u_add_e("h", "w", "m"), etype="follows")
    with pytest.raises(tessera.TesseraError, match="floating-point"):
        b.srcdata["i"] = {"user": torch.ones(5, 2, dtype=torch.int64)}
        b.update_all(fn.copy_u("i", "m"), fn.sum("m", "o"), etype="follows")
    with pytest.raises(tessera.TesseraError, match="cross_reducer"):
        b.multi_update_all({"follows": (fn.copy_u("h", "m"), fn.sum("m", "o"))}, "median")
    with pytest.raises(tessera.TesseraError, match=r"\(u, v\)"):
        tessera.graph(torch.tensor([0, 1]))
    with pytest.raises(tessera.TesseraError, match="num_nodes of 'a' is 1"):
        tessera.heterograph({("a", "r", "a"): ([0, 3], [1, 2])}, num_nodes_dict={"a": 1})


def test_copy_u_mean_on_a_loader_shaped_block_against_numpy():
    indptr = torch.tensor([0, 2, 5, 5, 6])
    indices = torch.tensor([4, 1, 0, 5, 2, 3])
    b = tessera.distributed.Block(torch.arange(10, 16), indptr, indices, torch.arange(6))
    h = torch.randn(6, 8, dtype=torch.float64)
    b.srcdata["h"] = h
    b.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
    x = h.numpy()
    want = [x[[4, 1]].mean(0), x[[0, 5, 2]].mean(0), np.zeros(8), x[[3]].mean(0)]
    np.testing.assert_allclose(b.dstdata["h"].numpy(), np.stack(want), rtol=1e-12)


def test_dgl_spellings():
    """Names DGL scripts import, beside tessera's own."""
    import tessera.nn.pytorch as dglnn
    assert dglnn.SAGEConv is tnn.SAGEConv and dglnn.WeightBasis is tnn.WeightBasis
    assert dglnn.functional.edge_softmax is tnn.edge_softmax
    assert tessera.DGLGraph is tessera.Graph and isinstance(block(), tessera.DGLGraph)
    assert tessera.dataloading.negative_sampler.Uniform(2).k == 2
    assert tessera.distributed.SparseAdagrad is tessera.distributed.optim.SparseAdagrad
    assert fn.copy_src is fn.copy_u and fn.copy_edge is fn.copy_e
    assert repr(fn.u_dot_v("h", "h", "s")) == "fn.u_dot_v('h', 'h', 's')"
    w = tnn.WeightBasis((3, 4), 2, 5)
    assert w().shape == (5, 3, 4) and torch.allclose(
        w(), (w.w_comp @ w.weight.view(2, -1)).view(5, 3, 4))


@pytest.mark.parametrize("aggregator", ["pool", "lstm", "mean", "gcn"])
def test_sageconv_aggregators_with_edge_weight_against_reference(aggregator):
    torch.manual_seed(0)
    b = block()[FOLLOWS]  # Edges not in destination order; u0 has none.
    conv = tnn.SAGEConv(4, 3, aggregator)
    h = torch.randn(5, 4)
    w = torch.rand(5)
    u, v = b.edges()
    got = conv(b, h, edge_weight=w)
    rows = []
    for d in range(3):
        es = [e for e in range(5) if int(v[e]) == d]  # edge order within a destination
        msgs = [h[int(u[e])] * w[e] for e in es]
        if aggregator == "pool":
            msgs = [torch.relu(conv.fc_pool(h[int(u[e])])) * w[e] for e in es]
            neigh = torch.stack(msgs).max(0).values if msgs else torch.zeros(4)
        elif aggregator == "lstm":
            if msgs:
                _, (hn, _) = conv.lstm(torch.stack(msgs).unsqueeze(0))
                neigh = hn.reshape(-1)
            else:
                neigh = torch.zeros(4)
        elif aggregator == "mean":
            neigh = torch.stack(msgs).mean(0) if msgs else torch.zeros(4)
        else:
            neigh = (sum(msgs, torch.zeros(4)) + h[d]) / (len(msgs) + 1)
        if aggregator == "gcn":
            rows.append(conv.fc_neigh(neigh) + conv.bias)
        else:
            rows.append(conv.fc_self(h[d]) + conv.fc_neigh(neigh))
    assert torch.allclose(got, torch.stack(rows), atol=1e-5), (got, torch.stack(rows))
    got.sum().backward()  # Gradients reach every parameter in use.
    assert all(p.grad is not None for p in conv.parameters())


def test_to_bidirected_and_clear_errors_for_what_tessera_lacks():
    g = tessera.graph((torch.tensor([0, 1, 1, 2]), torch.tensor([1, 0, 2, 2])), num_nodes=4)
    g.ndata["x"] = torch.arange(4.0)
    g.edata["w"] = torch.ones(4)
    bg = tessera.to_bidirected(g, copy_ndata=True)
    u, v = bg.edges()
    assert list(zip(u.tolist(), v.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 2)]
    assert torch.equal(bg.ndata["x"], g.ndata["x"]) and "w" not in bg.edata
    with pytest.raises(tessera.TesseraError, match="joins two node types"):
        tessera.to_bidirected(hetero())
    assert tessera.distributed.partition_graph is tessera.partition_graph
    with pytest.raises(AttributeError, match="DGL's dgl.distributed.DistGraphServer is not "
                                             "implemented in tessera"):
        tessera.distributed.DistGraphServer
    with pytest.raises(AttributeError, match="dgl.nn.ChebConv"):
        tnn.ChebConv
    with pytest.raises(tessera.TesseraError, match="dataset downloaders"):
        exec("from tessera.data import RedditDataset")  # DGL's partition_graph.py does this.


def test_layers_on_a_to_block_block_equal_the_loader_form():
    """to_block keeps g's edge order (not destination order); SAGEConv,
    GraphConv and GATConv give what they give on the same block in CSR
    order (a loader's form)."""
    g = tessera.graph((torch.tensor([3, 0, 2, 4, 1, 0]), torch.tensor([1, 2, 1, 0, 2, 1])),
                      num_nodes=5)
    b = tessera.to_block(g, torch.tensor([0, 1, 2]))
    u, v = b.edges()
    order = torch.argsort(v, stable=True)
    deg = torch.bincount(v, minlength=3)
    csr = tessera.distributed.Block(b.srcdata[NID], torch.cat([torch.zeros(1, dtype=torch.int64),
                                                                deg.cumsum(0)]),
                                    u[order], b.edata[EID][order])
    torch.manual_seed(0)
    h = torch.randn(b.num_src_nodes(), 4)
    for layer in (tnn.SAGEConv(4, 3, "mean"), tnn.GraphConv(4, 3, norm="both"),
                  tnn.GATConv(4, 3, num_heads=2)):
        assert torch.allclose(layer(b, h), layer(csr, h), atol=1e-6), type(layer).__name__
    _, att = tnn.GATConv(4, 3, num_heads=2)(b, h, get_attention=True)
    for d in range(3):  # Attention in b's edge order sums to 1 per destination.
        assert torch.allclose(att[v == d].sum(0), torch.ones(2, 1))


def test_cross_relation_reduction_follows_dgls_rules():
    """As DGL 1.1.3 (checked side by side): a relation that does not reach a
    node gives it its reducer's identity (0 for sum, -inf for max, inf for
    min) and the cross reducer takes it like any value; infinities become 0
    when the last relation given reduces by max or min. A callable gets the
    relations in the order given, "stack" in relation order."""
    g = tessera.heterograph({("a", "r", "c"): (torch.tensor([0]), torch.tensor([0])),
                             ("b", "s", "c"): (torch.tensor([0]), torch.tensor([1]))},
                            num_nodes_dict={"a": 1, "b": 1, "c": 3})
    g.nodes["a"].data["h"] = torch.tensor([[-1.0]])
    g.nodes["b"].data["h"] = torch.tensor([[-2.0]])
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "mx"))
    g.update_all(fn.copy_u("h", "m"), fn.min("m", "mn"))
    assert g.nodes["c"].data["mx"].tolist() == [[-1.0], [-2.0], [0.0]]
    assert g.nodes["c"].data["mn"].tolist() == [[-1.0], [-2.0], [0.0]]
    for reduce, cross, want in (("sum", "max", [0.0, 0.0, 0.0]),  # max(-1, 0) = 0
                                ("sum", "min", [-1.0, -2.0, 0.0]),
                                ("max", "max", [-1.0, -2.0, 0.0]),  # -inf never wins
                                ("min", "min", [-1.0, -2.0, 0.0]),
                                ("max", "sum", [0.0, 0.0, 0.0]),  # -1 + -inf, then 0
                                ("mean", "max", [0.0, 0.0, 0.0])):
        g.multi_update_all({"r": (fn.copy_u("h", "m"), getattr(fn, reduce)("m", "z")),
                            "s": (fn.copy_u("h", "m"), getattr(fn, reduce)("m", "z"))}, cross)
        assert g.nodes["c"].data["z"].flatten().tolist() == want, (reduce, cross)
    both = {"s": (fn.copy_u("h", "m"), fn.sum("m", "q")),
            "r": (fn.copy_u("h", "m"), fn.sum("m", "q"))}
    g.multi_update_all(both, lambda xs: xs[0] * 10 + xs[1])  # xs = [s's, r's]
    assert g.nodes["c"].data["q"].flatten().tolist() == [-1.0, -20.0, 0.0]
    g.multi_update_all(both, "stack")  # [r's, s's] per node
    assert g.nodes["c"].data["q"].tolist() == [[[-1.0], [0.0]], [[0.0], [-2.0]], [[0.0], [0.0]]]


def test_edge_operand_broadcasts_as_numpy_not_per_head():
    """e of shape [E, H] against u [N, H, F] aligns H with F (numpy), as the
    general path and DGL do; [E, H, 1] is per head."""
    g = tessera.graph((torch.tensor([0, 1]), torch.tensor([1, 1])), num_nodes=2)
    g.ndata["u"] = torch.arange(8.0).reshape(2, 2, 2)
    g.edata["e"] = torch.tensor([[1.0, 10.0], [2.0, 20.0]])
    g.update_all(fn.u_mul_e("u", "e", "m"), fn.sum("m", "fast"))
    g.update_all(lambda e: {"m": e.src["u"] * e.data["e"].unsqueeze(1)},
                 fn.sum("m", "udf"))
    assert torch.allclose(g.ndata["fast"], g.ndata["udf"])
    g.edata["e"] = g.edata["e"].unsqueeze(-1)  # [E, H, 1]: one weight per head
    g.update_all(fn.u_mul_e("u", "e", "m"), fn.sum("m", "head"))
    want = g.ndata["u"][0] * g.edata["e"][0] + g.ndata["u"][1] * g.edata["e"][1]
    assert torch.allclose(g.ndata["head"][1], want)


@pytest.mark.parametrize("msg", [("u", "sub", "v"), ("v", "div", "e"), ("e", "sub", "u"),
                                 ("u", "dot", "v"), ("v", "mul", "e")],
                         ids=lambda m: "_".join(m))
@pytest.mark.parametrize("reduce", ["sum", "max"])
def test_gradients_of_general_messages_gradcheck(msg, reduce):
    lhs, op, rhs = msg
    b0 = block()
    c = FOLLOWS
    g = torch.Generator().manual_seed(7)
    n_src, n_dst, n_e = b0.num_src_nodes("user"), b0.num_dst_nodes("user"), b0.num_edges(c)
    xs = {"u": torch.rand(n_src, 3, generator=g, dtype=torch.float64) + 1,
          "v": torch.rand(n_dst, 3, generator=g, dtype=torch.float64) + 1,
          "e": torch.rand(n_e, 3, generator=g, dtype=torch.float64) + 1}
    inputs = [xs[lhs].requires_grad_(), xs[rhs].requires_grad_()]

    def f(a, b_):
        b = block()
        for side, t in ((lhs, a), (rhs, b_)):
            if side == "u":
                b.srcdata["x" + side] = {"user": t}
            elif side == "v":
                b.dstdata["x" + side] = {"user": t}
            else:
                b.edata["x" + side] = {c: t}
        b.update_all(getattr(fn, f"{lhs}_{op}_{rhs}")("x" + lhs, "x" + rhs, "m"),
                     getattr(fn, reduce)("m", "out"), etype=c)
        return b.dstdata["out"]["user"]
    assert torch.autograd.gradcheck(f, inputs)


def test_relations_are_sorted_and_hetero_conv_runs_on_an_in_memory_graph():
    g = tessera.heterograph({("user", "plays", "game"): ([0, 1], [0, 0]),
                             ("developer", "develops", "game"): ([0], [1]),
                             ("user", "follows", "user"): ([0], [1])})
    assert g.canonical_etypes == sorted(g.canonical_etypes)  # DGL's order
    assert g.ntypes == ["developer", "game", "user"]
    sub = g["plays"]
    sub.srcdata["h"] = torch.ones(2, 3)  # One source type: a tensor.
    assert sub.num_src_nodes() == 2 and sub.num_dst_nodes() == 2
    conv = tnn.HeteroGraphConv({r: tnn.GraphConv(3, 2, norm="right", allow_zero_in_degree=True)
                                for r in g.etypes})
    out = conv(g, {t: torch.randn(g.num_nodes(t), 3) for t in g.ntypes})
    assert out["game"].shape == (2, 2) and out["user"].shape == (2, 2)
    b = tessera.to_block(g, {"game": torch.tensor([0, 1]), "user": torch.tensor([1])})
    assert b.num_nodes("user") == b.num_src_nodes("user") == 2  # DGL: the sources


def test_gatconv_edge_weight_scales_the_attention():
    g = tessera.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 1, 0])), num_nodes=3)
    torch.manual_seed(1)
    conv = tnn.GATConv(4, 2, num_heads=2, allow_zero_in_degree=True)  # node 2 has none
    h = torch.randn(3, 4)
    w = torch.tensor([0.5, 2.0, 1.0])
    _, att = conv(g, h, get_attention=True)
    out, att_w = conv(g, h, edge_weight=w, get_attention=True)
    assert torch.allclose(att_w, att * w.view(-1, 1, 1))
    feat = conv.fc(h).view(3, 2, 2)
    want1 = att_w[0] * feat[0] + att_w[1] * feat[1]
    assert torch.allclose(out[1], want1 + conv.bias.view(2, 2), atol=1e-6)


def test_hetero_conv_gives_no_output_for_a_type_without_destinations():
    """As DGL's distributed blocks (relations with sampled edges only), a
    last layer over paper seeds outputs papers only: DGL's R-GCN example
    asserts it."""
    g = tessera.heterograph({BUYS: ([0, 1, 4], [0, 0, 1]), FOLLOWS: ([], [])},  # [] as DGL
                            num_nodes_dict=NUM)
    b = tessera.to_block(g, {"item": torch.tensor([0, 1])})
    assert b.num_dst_nodes("user") == 0
    conv = tnn.HeteroGraphConv({r: tnn.GraphConv(3, 2, norm="right") for r in ("buys", "follows")})
    out = conv(b, {t: torch.randn(b.num_src_nodes(t), 3) for t in b.srctypes})
    assert list(out) == ["item"] and out["item"].shape == (2, 2)


def test_send_and_recv_and_pull_update_only_their_nodes():
    g = tessera.graph((torch.tensor([0, 1, 2, 3, 0]), torch.tensor([1, 1, 2, 2, 3])), num_nodes=4)
    g.ndata["h"] = torch.tensor([[1.0], [2.0], [4.0], [8.0]])
    g.ndata["s"] = torch.full((4, 1), -1.0)
    g.send_and_recv(torch.tensor([1, 2, 4]), fn.copy_u("h", "m"), fn.sum("m", "s"))
    # Edges 1 (1->1), 2 (2->2), 4 (0->3): nodes 1, 2, 3 receive; node 0 keeps -1.
    assert g.ndata["s"].reshape(-1).tolist() == [-1.0, 2.0, 4.0, 1.0]
    g.send_and_recv([0], fn.copy_u("h", "m"), fn.sum("m", "new"),
                    apply_node_func=lambda nodes: {"twice": nodes.data["new"] * 2})
    # apply_node_func's outputs alone are stored (DGL); a new name: zeros elsewhere.
    assert "new" not in g.ndata
    assert g.ndata["twice"].reshape(-1).tolist() == [0.0, 2.0, 0.0, 0.0]
    g.pull(torch.tensor([2, 0]), fn.copy_u("h", "m"), fn.max("m", "s"))
    # Node 2 pulls max(h[2], h[3]) = 8; node 0 has no in-edge: DGL's -inf; 1 and 3 keep theirs.
    assert g.ndata["s"].reshape(-1).tolist() == [float("-inf"), 2.0, 8.0, 1.0]
    g.ndata["s"][0] = 0.0
    with pytest.raises(tessera.TesseraError, match="edge id out of range"):
        g.send_and_recv([7], fn.copy_u("h", "m"), fn.sum("m", "s"))
    with pytest.raises(tessera.TesseraError, match="node id out of range"):
        g.pull([9], fn.copy_u("h", "m"), fn.sum("m", "s"))
    # Gradients reach the sources of the sent edges only.
    h = torch.ones(4, 2, requires_grad=True)
    g.ndata["x"] = h
    g.send_and_recv([0, 3], fn.copy_u("x", "m"), fn.sum("m", "y"))
    g.ndata["y"].sum().backward()
    assert h.grad[:, 0].tolist() == [1.0, 0.0, 0.0, 1.0]


def test_edge_queries_as_dgl():
    """Values checked side by side against DGL 1.1.3: in/out edges grouped
    by the nodes in the order asked (repeats repeat), edge ids of (u, v)
    pairs, and (u, v) pairs wherever DGL takes edges."""
    g = tessera.graph((torch.tensor([0, 0, 1, 0, 3]), torch.tensor([1, 2, 2, 1, 1])), num_nodes=4)
    src, dst, eid = g.in_edges(torch.tensor([2, 1]), form="all")
    assert (src.tolist(), dst.tolist(), eid.tolist()) == ([0, 1, 0, 0, 3], [2, 2, 1, 1, 1],
                                                          [1, 2, 0, 3, 4])
    assert g.in_edges([1, 1], form="eid").tolist() == [0, 3, 4, 0, 3, 4]
    assert [t.tolist() for t in g.out_edges([3, 0])] == [[3, 0, 0, 0], [1, 1, 2, 1]]
    assert g.out_edges(3, form="eid").tolist() == [4]
    assert g.successors(0).tolist() == [1, 2, 1] and g.predecessors(2).tolist() == [0, 1]
    for bad in (lambda: g.in_edges([9]), lambda: g.out_edges(-1), lambda: g.edge_ids(0, 7)):
        with pytest.raises(tessera.TesseraError, match="does not exist"):
            bad()
    assert g.edge_ids(0, 1) == 0  # Parallel edges 0 and 3: the lowest.
    assert g.edge_ids(torch.tensor([1, 3]), torch.tensor([2, 1])).tolist() == [2, 4]
    assert g.edge_ids(0, torch.tensor([2, 1])).tolist() == [1, 0]  # u broadcasts
    assert [t.tolist() for t in g.edge_ids([0, 3], [1, 1], return_uv=True)] == \
        [[0, 0, 3], [1, 1, 1], [0, 3, 4]]
    with pytest.raises(tessera.TesseraError, match=r"\(2, 0\) does not form a valid edge"):
        g.edge_ids([0, 2], [1, 0])
    assert g.has_edges_between(0, 2) is True and g.has_edges_between(2, 0) is False
    assert g.has_edges_between([0, 1, 3], [1, 0, 1]).tolist() == [True, False, True]
    assert g.has_nodes(3) and g.has_nodes(torch.tensor([0, 4])).tolist() == [True, False]
    # Edges as (u, v): the edge 0 -> 2 is edge 1.
    g.ndata["h"] = torch.tensor([[1.0], [10.0], [100.0], [1000.0]])
    g.apply_edges(fn.copy_u("h", "m"), edges=(torch.tensor([0]), torch.tensor([2])))
    assert g.edata["m"].flatten().tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    g.send_and_recv((torch.tensor([0, 1]), torch.tensor([2, 2])), fn.copy_u("h", "m"),
                    fn.sum("m", "o"))
    assert g.ndata["o"].flatten().tolist() == [0.0, 0.0, 11.0, 0.0]
    g.push(torch.tensor([3]), fn.copy_u("h", "m"), fn.sum("m", "p"))  # 3 -> 1 only
    assert g.ndata["p"].flatten().tolist() == [0.0, 1000.0, 0.0, 0.0]
    g.apply_nodes(lambda nodes: {"h": nodes.data["h"] * 2, "z": nodes.data["h"] + 1},
                  v=torch.tensor([1, 3]))
    assert g.ndata["h"].flatten().tolist() == [1.0, 20.0, 100.0, 2000.0]
    assert g.ndata["z"].flatten().tolist() == [0.0, 11.0, 0.0, 1001.0]


def test_dot_products_of_1d_features_and_mismatched_sizes_as_dgl():
    """A dot of 1-D features is their product per edge ([E], as DGL); the
    last sizes must agree (a 1-D feature's counts as 1), others broadcast."""
    g = tessera.graph((torch.tensor([0, 0, 1, 2]), torch.tensor([1, 2, 2, 3])))
    g.ndata["h"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    g.apply_edges(fn.u_dot_v("h", "h", "s"))
    assert g.edata["s"].tolist() == [2.0, 3.0, 6.0, 12.0]
    g.update_all(fn.u_dot_v("h", "h", "m"), fn.sum("m", "o"))
    assert g.ndata["o"].tolist() == [0.0, 2.0, 9.0, 12.0]
    g.ndata["b"] = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    g.apply_edges(fn.u_dot_v("h", "b", "s1"))
    assert g.edata["s1"].shape == (4, 1) and g.edata["s1"].flatten().tolist() == [2, 3, 6, 12]
    g.ndata["x"] = torch.randn(4, 3, 5)
    g.edata["w"] = torch.randn(4, 5)
    g.apply_edges(fn.u_dot_e("x", "w", "s2"))
    want = (g.ndata["x"][torch.tensor([0, 0, 1, 2])] * g.edata["w"].unsqueeze(1)).sum(-1)
    assert torch.allclose(g.edata["s2"], want.unsqueeze(-1))
    g.edata["w1"] = torch.randn(4, 1)
    for rhs in ("w1", "h"):
        with pytest.raises(tessera.TesseraError, match="same size on the last dimension"):
            g.apply_edges(fn.u_dot_e("x", rhs, "bad") if rhs == "w1" else fn.u_dot_v("x", rhs, "bad"))


def test_self_loops_and_reverse_as_dgl():
    """add_self_loop / remove_self_loop / reverse, values checked side by side
    against DGL 1.1.3: loops after the existing edges with fill_data or a
    reduction of the in-edges' data, 0 for names not filled."""
    g = tessera.graph((torch.tensor([0, 1, 2, 2]), torch.tensor([1, 1, 0, 2])), num_nodes=4)
    g.ndata["x"] = torch.arange(4.0)
    g.edata["w"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    g.edata["i"] = torch.tensor([[5], [6], [7], [8]])
    h = tessera.add_self_loop(g)
    assert [t.tolist() for t in h.edges()] == [[0, 1, 2, 2, 0, 1, 2, 3], [1, 1, 0, 2, 0, 1, 2, 3]]
    assert h.edata["w"].tolist() == [1, 2, 3, 4, 1, 1, 1, 1] and h.edata["i"].dtype == torch.int64
    assert h.edata["i"].flatten().tolist() == [5, 6, 7, 8, 1, 1, 1, 1]
    assert h.ndata["x"].tolist() == [0, 1, 2, 3] and g.num_edges() == 4  # g unchanged
    for fill, loops in (("sum", [3, 3, 4, 0]), ("max", [3, 2, 4, 0]), ("mean", [3, 1.5, 4, 0])):
        h = g.add_self_loop(edge_feat_names=["w"], fill_data=fill)
        assert h.edata["w"].tolist()[4:] == loops and h.edata["i"].flatten().tolist()[4:] == [0] * 4
    with pytest.raises(tessera.TesseraError, match="fill_data"):
        g.add_self_loop(fill_data="median")
    h = tessera.remove_self_loop(g)
    assert [t.tolist() for t in h.edges()] == [[0, 2], [1, 0]] and h.edata["w"].tolist() == [1, 3]
    r = tessera.reverse(g, copy_edata=True)
    assert [t.tolist() for t in r.edges()] == [[1, 1, 0, 2], [0, 1, 2, 2]]
    assert r.edata["w"].tolist() == [1, 2, 3, 4] and r.ndata["x"].tolist() == [0, 1, 2, 3]
    assert "w" not in tessera.reverse(g).edata
    hg = tessera.heterograph({("a", "x", "b"): (torch.tensor([0, 1]), torch.tensor([2, 0])),
                              ("a", "y", "a"): (torch.tensor([1]), torch.tensor([0]))})
    rh = hg.reverse()
    assert rh.canonical_etypes == [("b", "x", "a"), ("a", "y", "a")]
    assert [t.tolist() for t in rh.edges(etype="x")] == [[2, 0], [0, 1]]
    assert [t.tolist() for t in hg.add_self_loop(etype="y").edges(etype="y")] == [[1, 0, 1],
                                                                                  [0, 0, 1]]
    with pytest.raises(tessera.TesseraError, match="two node types"):
        hg.add_self_loop(etype="x")


def test_a_graph_whose_relations_go_one_way_is_uni_bipartite_as_dgl():
    """No type both a source and a destination: DGL's uni-bipartite graph
    (source types: the others, isolated ones included), so srcdata /
    dstdata / num_src_nodes() and the layers work on it directly. Values
    checked side by side against DGL 1.1.3."""
    g = tessera.heterograph({("user", "plays", "game"): (torch.tensor([0, 1, 1]),
                                                         torch.tensor([2, 0, 2])),
                             ("user", "buys", "item"): (torch.tensor([1]), torch.tensor([0]))},
                            num_nodes_dict={"user": 2, "game": 3, "item": 1, "zzz": 2})
    assert g.is_unibipartite and g.ntypes == ["game", "item", "user", "zzz"]
    assert (g.srctypes, g.dsttypes) == (["user", "zzz"], ["game", "item"])
    assert (g.num_nodes(), g.num_nodes("game"), g.num_src_nodes("user")) == (8, 3, 2)
    g.nodes["user"].data["h"] = torch.tensor([[1.0], [2.0]])
    g.nodes["game"].data["g"] = torch.tensor([[5.0], [6.0], [7.0]])
    assert list(g.srcdata) == ["h"] and list(g.dstdata) == ["g"] and list(g.ndata["h"]) == ["user"]
    g.multi_update_all({"plays": (fn.copy_u("h", "m"), fn.sum("m", "t")),
                        "buys": (fn.copy_u("h", "m"), fn.sum("m", "t"))}, "sum")
    assert g.nodes["game"].data["t"].flatten().tolist() == [2.0, 0.0, 3.0]
    assert g.nodes["item"].data["t"].flatten().tolist() == [2.0]
    r = tessera.reverse(g)
    assert (r.srctypes, r.dsttypes) == (["game", "item", "zzz"], ["user"])
    sub = g["plays"]
    assert (sub.srctypes, sub.dsttypes, sub.num_src_nodes(), sub.num_dst_nodes()) == (
        ["user"], ["game"], 2, 3)
    # One relation between two types: the layers take (source, destination) features.
    one = tessera.heterograph({("user", "plays", "game"): (torch.tensor([0, 1, 1]),
                                                           torch.tensor([2, 0, 2]))})
    assert one.num_src_nodes() == 2 and one.num_dst_nodes() == 3
    one.srcdata["h"] = torch.tensor([[1.0], [2.0]])
    one.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    assert one.dstdata["s"].flatten().tolist() == [2.0, 0.0, 3.0]
    conv = tnn.GraphConv(1, 1, norm="none", bias=False, allow_zero_in_degree=True)
    torch.nn.init.ones_(conv.weight)
    out = conv(one, (one.srcdata["h"], torch.zeros(3, 1)))
    assert out.flatten().tolist() == [2.0, 0.0, 3.0]
    out = tnn.HeteroGraphConv({"plays": conv})(one, {"user": one.srcdata["h"],
                                                     "game": torch.zeros(3, 1)})
    assert out["game"].flatten().tolist() == [2.0, 0.0, 3.0]
    h = tnn.HeteroGraphConv({"plays": conv, "buys": conv})(
        g, {"user": torch.tensor([[1.0], [2.0]]), "game": torch.zeros(3, 1),
            "item": torch.zeros(1, 1)})
    assert h["game"].flatten().tolist() == [2.0, 0.0, 3.0] and h["item"].tolist() == [[2.0]]
    # A type that is both (a -> b -> c) keeps every type on both sides.
    chain = tessera.heterograph({("a", "r", "b"): (torch.tensor([0]), torch.tensor([0])),
                                 ("b", "s", "c"): (torch.tensor([0]), torch.tensor([0]))})
    assert not chain.is_unibipartite and chain.srctypes == chain.dsttypes == ["a", "b", "c"]


def test_subgraphs_of_in_memory_graphs_as_dgl():
    """node_subgraph / edge_subgraph / in_subgraph / out_subgraph, values
    checked side by side against DGL 1.1.3 (edge order, relabelling order,
    NID / EID, data)."""
    g = tessera.graph((torch.tensor([0, 0, 1, 3, 2, 3]), torch.tensor([1, 2, 2, 1, 0, 3])),
                      num_nodes=5)
    g.ndata["x"] = torch.arange(5.0)
    g.edata["w"] = torch.arange(6.0) * 10

    def parts(s):
        return [t.tolist() for t in s.edges()]

    s = tessera.node_subgraph(g, torch.tensor([3, 1, 2]))  # Grouped by source, in that order.
    assert parts(s) == [[0, 0, 1], [1, 0, 2]] and s.ndata[NID].tolist() == [3, 1, 2]
    assert s.edata[EID].tolist() == [3, 5, 2] and s.edata["w"].tolist() == [30, 50, 20]
    assert s.ndata["x"].tolist() == [3, 1, 2]
    s = g.subgraph(torch.tensor([True, False, True, True, False]))
    assert parts(s) == [[0, 1, 2], [1, 0, 2]] and s.ndata[NID].tolist() == [0, 2, 3]
    s = tessera.node_subgraph(g, [3, 1, 2], store_ids=False)
    assert list(s.ndata) == ["x"] and list(s.edata) == ["w"]
    s = tessera.edge_subgraph(g, torch.tensor([5, 1, 3]))  # Sources, then destinations.
    assert parts(s) == [[0, 1, 0], [0, 2, 3]] and s.ndata[NID].tolist() == [3, 0, 2, 1]
    assert s.edata[EID].tolist() == [5, 1, 3] and s.edata["w"].tolist() == [50, 10, 30]
    s = g.edge_subgraph(torch.tensor([5, 1, 3]), relabel_nodes=False)
    assert parts(s) == [[3, 0, 3], [3, 2, 1]] and s.num_nodes() == 5 and list(s.ndata) == ["x"]
    s = tessera.in_subgraph(g, torch.tensor([2, 1]))
    assert parts(s) == [[0, 1, 0, 3], [2, 2, 1, 1]] and s.num_nodes() == 5
    assert s.edata[EID].tolist() == [1, 2, 0, 3] and s.edata["w"].tolist() == [10, 20, 0, 30]
    s = tessera.in_subgraph(g, torch.tensor([2, 1]), relabel_nodes=True)
    assert parts(s) == [[0, 1, 0, 2], [3, 3, 1, 1]] and s.ndata[NID].tolist() == [0, 1, 3, 2]
    s = tessera.out_subgraph(g, torch.tensor([3, 0]))
    assert parts(s) == [[3, 3, 0, 0], [1, 3, 1, 2]] and s.edata[EID].tolist() == [3, 5, 0, 1]
    with pytest.raises(tessera.TesseraError, match="does not exist"):
        tessera.node_subgraph(g, [7])
    with pytest.raises(tessera.TesseraError, match="mask of 3"):
        tessera.edge_subgraph(g, torch.tensor([True, False, True]))
    hg = tessera.heterograph({("a", "r", "b"): (torch.tensor([0, 1, 1]), torch.tensor([0, 0, 1])),
                              ("b", "s", "a"): (torch.tensor([1]), torch.tensor([0]))})
    s = tessera.node_subgraph(hg, {"a": torch.tensor([1]), "b": torch.tensor([0, 1])})
    assert [t.tolist() for t in s.edges(etype="r")] == [[0, 0], [0, 1]]
    assert s.num_edges("s") == 0 and s.ndata[NID]["b"].tolist() == [0, 1]
    s = tessera.edge_subgraph(hg, {"r": torch.tensor([2])})
    assert {t: s.num_nodes(t) for t in s.ntypes} == {"a": 1, "b": 1}
    assert s.edata[EID][("a", "r", "b")].tolist() == [2] and s.num_edges("s") == 0
    s = tessera.in_subgraph(hg, {"b": torch.tensor([0])})
    assert [t.tolist() for t in s.edges(etype="r")] == [[0, 1], [0, 0]] and s.num_edges("s") == 0
    # Relabelled relation by relation, each its sources then its destinations (DGL's order).
    two = tessera.heterograph({("i", "by", "u"): (torch.tensor([0]), torch.tensor([2])),
                               ("u", "buys", "i"): (torch.tensor([1]), torch.tensor([0]))},
                              {"u": 3, "i": 1})
    s = tessera.edge_subgraph(two, {"by": torch.tensor([0]), "buys": torch.tensor([0])})
    assert s.nodes["u"].data[NID].tolist() == [2, 1]
    s = tessera.in_subgraph(two, {"u": torch.tensor([2]), "i": torch.tensor([0])},
                            relabel_nodes=True)
    assert s.nodes["u"].data[NID].tolist() == [2, 1]


def test_small_graph_api_edges_as_dgl():
    """Checked side by side against DGL 1.1.3: has_nodes refuses negative
    ids; node_subgraph of a repeated node takes its out-edges from each
    place; apply_nodes names a field whose dtype the function changes and
    asks for the type on a graph of several."""
    g = tessera.graph((torch.tensor([0, 1, 2, 4, 2]), torch.tensor([1, 2, 0, 4, 4])), num_nodes=5)
    g.ndata["x"] = torch.arange(5.0)
    g.ndata["i"] = torch.arange(5)
    with pytest.raises(tessera.TesseraError, match="non-negative"):
        g.has_nodes(torch.tensor([-1]))
    assert g.has_nodes(torch.tensor([7])).tolist() == [False]
    s = tessera.node_subgraph(g, torch.tensor([4, 2, 4]))
    assert [t.tolist() for t in s.edges()] == [[0, 1, 2], [0, 0, 0]]
    assert s.ndata[NID].tolist() == [4, 2, 4] and s.edata[EID].tolist() == [3, 4, 3]
    with pytest.raises(tessera.TesseraError, match="apply_nodes: field 'i' holds torch.int64"):
        g.apply_nodes(lambda nodes: {"i": nodes.data["x"] * 2}, v=torch.tensor([1]))
    g.edata["k"] = torch.arange(5)
    with pytest.raises(tessera.TesseraError, match="apply_edges: field 'k' holds torch.int64"):
        g.apply_edges(lambda edges: {"k": edges.src["x"]}, edges=torch.tensor([0]))
    b = tessera.heterograph({("user", "plays", "game"): (torch.tensor([0]), torch.tensor([1]))})
    with pytest.raises(tessera.TesseraError, match="several node types"):
        b.apply_nodes(lambda nodes: {"z": torch.ones(len(nodes.nodes()), 1)})
    b.apply_nodes(lambda nodes: {"z": torch.ones(len(nodes.nodes()), 1)}, ntype="user")
    assert b.nodes["user"].data["z"].shape == (1, 1) and "z" not in b.nodes["game"].data


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_message_passing_without_edges_gives_zeros_as_dgl(reduce):
    """DGL 1.1.3 (checked side by side) gives zeros of the message's shape at
    every destination when a graph, block or relation has no edges, for every
    builtin or user-defined message with a builtin reduction."""
    none = torch.tensor([], dtype=torch.int64)
    g = tessera.graph((none, none), num_nodes=3)
    g.ndata["h"] = torch.ones(3, 2, 3)
    g.ndata["x"] = torch.ones(3)
    g.edata["w"] = torch.ones(0, 2, 1)
    g.edata["s"] = torch.ones(0)
    messages = {(3, 2, 3): [fn.copy_u("h", "m"), fn.u_mul_e("h", "w", "m"),
                            fn.e_mul_u("w", "h", "m"), fn.u_add_v("h", "h", "m"),
                            fn.v_sub_e("h", "w", "m"), lambda e: {"m": e.src["h"] * 2}],
                (3, 2, 1): [fn.copy_e("w", "m"), fn.u_dot_v("h", "h", "m")],
                (3,): [fn.u_mul_e("x", "s", "m"), fn.u_div_e("x", "s", "m")]}
    for shape, funcs in messages.items():
        for mf in funcs:
            g.update_all(mf, getattr(fn, reduce)("m", "o"))
            assert g.ndata["o"].shape == shape and not g.ndata["o"].any(), mf
    g.apply_edges(fn.u_add_v("h", "h", "e"))
    assert g.edata["e"].shape == (0, 2, 3)
    b = tessera.to_block(g, torch.tensor([0, 1]))
    b.srcdata["h"] = torch.ones(b.num_src_nodes(), 4)
    b.edata["a"] = torch.ones(0, 1)
    b.update_all(fn.u_mul_e("h", "a", "m"), getattr(fn, reduce)("m", "o"))
    assert b.dstdata["o"].tolist() == [[0.0] * 4] * 2
    b.update_all(fn.copy_e("a", "m"), getattr(fn, reduce)("m", "o"))
    assert b.dstdata["o"].tolist() == [[0.0]] * 2
    empty = tessera.graph((none, none), num_nodes=0)
    empty.ndata["h"] = torch.ones(0, 2)
    empty.update_all(fn.u_add_v("h", "h", "m"), getattr(fn, reduce)("m", "o"))
    assert empty.ndata["o"].shape == (0, 2)


def test_multi_update_all_with_a_relation_without_edges_as_dgl():
    """DGL 1.1.3: the empty relation gives zeros, combined by the cross reducer."""
    hg = tessera.heterograph({("a", "r1", "b"): (torch.tensor([0, 1]), torch.tensor([0, 0])),
                              ("a", "r2", "b"): (torch.tensor([], dtype=torch.int64),
                                                 torch.tensor([], dtype=torch.int64))},
                             num_nodes_dict={"a": 2, "b": 2})
    hg.nodes["a"].data["h"] = torch.tensor([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]] * 2)
    hg.edges["r1"].data["att"] = torch.tensor([[[1.0], [2.0]], [[3.0], [4.0]]])
    hg.edges["r2"].data["att"] = torch.ones(0, 2, 1)
    r1 = torch.tensor([[[4.0, 8.0, 12.0], [24.0, 30.0, 36.0]], [[0.0] * 3] * 2])
    for cross, want in (("sum", r1), ("mean", r1 / 2), ("max", r1), ("min", torch.zeros(2, 2, 3)),
                        ("stack", torch.stack([r1, torch.zeros(2, 2, 3)], 1))):
        hg.multi_update_all({"r1": (fn.u_mul_e("h", "att", "m"), fn.sum("m", "o")),
                             "r2": (fn.u_add_e("h", "att", "m"), fn.sum("m", "o"))}, cross)
        assert torch.equal(hg.nodes["b"].data["o"], want), cross


def test_an_edgeless_relation_reducing_by_max_or_min_gives_zeros_as_dgl():
    """DGL 1.1.3 (checked side by side): gspmm skips its kernel on a relation
    without edges, so even max / min leave zeros there (not -inf / inf) for
    the cross reducer, in either order; so do apply_node_func and pull
    without edges. update_all across relations keeps one reduction over every
    edge (DGL's gives 0 everywhere here, a bug)."""
    none = torch.tensor([], dtype=torch.int64)

    def hg():
        g = tessera.heterograph({("user", "plays", "game"): ([0, 1, 1, 3], [0, 0, 1, 2]),
                                 ("store", "sells", "game"): (none, none)},
                                num_nodes_dict={"user": 4, "game": 4, "store": 2})
        g.nodes["user"].data["h"] = torch.tensor([[1.0], [-2.0], [-3.0], [4.0]])
        g.nodes["store"].data["h"] = torch.tensor([[5.0], [6.0]])
        return g

    # plays by sum (or max), sells (no edges) by max (or min): DGL's values.
    want = {"sum": ([-1, -2, 4, 0], [1, -2, 4, 0]), "mean": ([-0.5, -1, 2, 0], [0.5, -1, 2, 0]),
            "max": ([0, 0, 4, 0], [1, 0, 4, 0]), "min": ([-1, -2, 0, 0], [0, -2, 0, 0]),
            "stack": ([0, -1, 0, -2, 0, 4, 0, 0], [0, 1, 0, -2, 0, 4, 0, 0])}
    for cross, (by_sum, by_max) in want.items():
        for order in (("plays", "sells"), ("sells", "plays")):
            for (rp, rs), w in ((("sum", "max"), by_sum), (("max", "min"), by_max)):
                g = hg()
                f = {"plays": (fn.copy_u("h", "m"), getattr(fn, rp)("m", "o")),
                     "sells": (fn.copy_u("h", "m"), getattr(fn, rs)("m", "o"))}
                g.multi_update_all({k: f[k] for k in order}, cross)
                assert g.nodes["game"].data["o"].flatten().tolist() == w, (cross, order, rp)
    g = hg()
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "o"))
    assert g.nodes["game"].data["o"].flatten().tolist() == [1.0, -2.0, 4.0, 0.0]
    g = tessera.graph((none, none), num_nodes=3)
    g.ndata["h"] = torch.ones(3, 1)
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "o"), lambda nb: {"z": nb.data["o"] - 1})
    assert g.ndata["z"].flatten().tolist() == [-1.0] * 3
    g = tessera.graph(([0], [1]), num_nodes=3)
    g.ndata["h"] = torch.ones(3, 1)
    g.ndata["o"] = torch.full((3, 1), 7.0)
    g.pull([0, 2], fn.copy_u("h", "m"), fn.min("m", "o"))  # No in-edge among them.
    assert g.ndata["o"].flatten().tolist() == [0.0, 7.0, 0.0]


def test_edge_softmax_without_edges_is_empty_as_dgl():
    """DGL 1.1.3 returns the empty logits' shape when there are no edges."""
    none = torch.tensor([], dtype=torch.int64)
    g = tessera.graph((none, none), num_nodes=3)
    for shape in ((0,), (0, 2), (0, 2, 1)):
        for norm_by in ("dst", "src"):
            x = torch.zeros(shape, requires_grad=True)
            out = tnn.edge_softmax(g, x, norm_by=norm_by)
            assert out.shape == shape and out.dtype == torch.float32
            out.sum().backward()
            assert x.grad.shape == shape
    b = tessera.to_block(g, torch.tensor([0, 1]))
    assert tnn.edge_softmax(b, torch.zeros(0, 4, 1)).shape == (0, 4, 1)
    hg = tessera.heterograph({("a", "r1", "b"): (none, none), ("a", "r2", "b"): (none, none)},
                             num_nodes_dict={"a": 2, "b": 2})
    out = tnn.edge_softmax(hg, {"r1": torch.zeros(0, 2), "r2": torch.zeros(0, 2)})
    assert {c: tuple(v.shape) for c, v in out.items()} == {("a", "r1", "b"): (0, 2),
                                                            ("a", "r2", "b"): (0, 2)}


def test_degree_ids_and_type_counts_as_dgl():
    """Checked side by side against DGL 1.1.3: degrees refuse negative (and
    too large) ids instead of wrapping; a 0-d tensor or array of ids gives a
    one-element tensor (only an int is a scalar); without a type,
    num_src_nodes / num_dst_nodes count every type; a block's ntypes are its
    source types then its destination types."""
    g = tessera.graph((torch.tensor([0, 1, 2, 3, 3]), torch.tensor([1, 3, 3, 0, 3])), num_nodes=4)
    for call in (lambda: g.in_degrees(-1), lambda: g.out_degrees(torch.tensor([-1])),
                 lambda: g.in_degrees([0, -2]), lambda: g.out_degrees(torch.tensor([99]))):
        with pytest.raises(tessera.TesseraError, match="does not exist"):
            call()
    assert g.in_degrees(torch.tensor(1)).tolist() == [1]
    assert g.out_degrees(np.array(0)).tolist() == [1]
    assert g.in_degrees(np.int64(3)) == 3 and g.in_degrees(1) == 1
    assert g.edge_ids(torch.tensor(0), torch.tensor(1)).tolist() == [0]
    assert g.has_nodes(torch.tensor(1)).tolist() == [True]
    assert g.has_edges_between(torch.tensor(0), torch.tensor(1)).tolist() == [True]
    with pytest.raises(tessera.TesseraError, match="edge -1 does not exist"):
        tessera.edge_subgraph(g, torch.tensor([-1]))
    b = tessera.to_block(g, torch.tensor([0, 1, 3]))
    assert b.ntypes == ["_N", "_N"] and not b.is_homogeneous
    hg = tessera.heterograph({("user", "plays", "game"): ([0, 1], [0, 0]),
                              ("store", "sells", "game"): ([0], [1]),
                              ("user", "likes", "user"): ([0], [1])},
                             num_nodes_dict={"user": 3, "game": 2, "store": 2})
    assert hg.num_src_nodes() == 7 and hg.number_of_dst_nodes() == 7
    tb = tessera.to_block(hg, {"game": torch.tensor([0, 1]), "user": torch.tensor([1])})
    assert tb.ntypes == ["game", "store", "user"] * 2
    assert (tb.num_src_nodes(), tb.number_of_src_nodes(), tb.num_dst_nodes()) == (5, 5, 3)
    assert tb.num_nodes() == 8 and tb.num_nodes("game") == 2
    ub = tessera.heterograph({("user", "plays", "game"): ([0, 1], [0, 0]),
                              ("store", "sells", "game"): ([0], [1])},
                             num_nodes_dict={"user": 3, "game": 2, "store": 2})
    assert ub.ntypes == ["game", "store", "user"]
    assert (ub.num_src_nodes(), ub.num_dst_nodes(), ub.num_nodes()) == (5, 2, 7)


def test_max_min_infinities_and_zeros_as_dgl():
    """Checked side by side against DGL 1.1.3: update_all with a max / min
    reduction turns infinities into 0 (whatever the message function), after
    apply_node_func in its output; send_and_recv / push keep a true +-inf;
    min gives 0.0, never -0.0, in the result and in the gradient."""
    inf = float("inf")
    g = tessera.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 2])), num_nodes=4)
    g.ndata["h"] = torch.tensor([[-inf], [inf], [1.0], [0.0]])
    g.edata["w"] = torch.ones(3, 1)
    want = {"max": [0.0, 0.0, 0.0, 0.0], "min": [0.0, 0.0, 1.0, 0.0]}
    for reduce in ("max", "min"):
        r = getattr(fn, reduce)("m", "o")
        for msg in (fn.copy_u("h", "m"), fn.u_mul_e("h", "w", "m"),
                    lambda edges: {"m": edges.src["h"]}):
            g.update_all(msg, r)
            assert g.ndata["o"].flatten().tolist() == want[reduce]
            assert not torch.signbit(g.ndata["o"]).any()
        g.update_all(fn.copy_u("h", "m"), r, lambda nodes: {"o": nodes.data["o"] + 0})
        assert g.ndata["o"].flatten().tolist() == want[reduce]
    g.update_all(fn.u_add_v("h", "h", "m"), fn.min("m", "o"))
    assert g.ndata["o"].flatten().tolist() == [0.0, 0.0, 2.0, 0.0]
    for reduce, want in (("max", [0.0, -inf, inf, 0.0]), ("min", [0.0, -inf, 1.0, 0.0])):
        g.ndata.pop("o")
        g.send_and_recv([0, 1, 2], fn.copy_u("h", "m"), getattr(fn, reduce)("m", "o"))
        assert g.ndata["o"].flatten().tolist() == want
        g.ndata.pop("o")
        g.push([0, 1, 2], fn.copy_u("h", "m"), getattr(fn, reduce)("m", "o"))
        assert g.ndata["o"].flatten().tolist() == want
    x = torch.tensor([[0.0], [0.0], [1.0], [0.0]], requires_grad=True)
    g.ndata["x"] = x
    g.update_all(fn.copy_u("x", "m"), fn.min("m", "o"))
    g.ndata["o"].sum().backward()
    assert g.ndata["o"].flatten().tolist() == [0.0] * 4 and not torch.signbit(g.ndata["o"]).any()
    assert x.grad.flatten().tolist() == [1.0, 1.0, 0.0, 0.0] and not torch.signbit(x.grad).any()
    # multi_update_all: a relation reducing to -inf, then a sum across relations.
    hg = tessera.heterograph({("a", "r1", "b"): ([0, 1], [0, 0]), ("a", "r2", "b"): ([1], [1])},
                             num_nodes_dict={"a": 2, "b": 3})
    hg.nodes["a"].data["h"] = torch.tensor([[inf], [-inf]])
    hg.multi_update_all({"r2": (fn.copy_u("h", "m"), fn.max("m", "o")),
                         "r1": (fn.copy_u("h", "m"), fn.sum("m", "o"))}, "sum")
    assert hg.nodes["b"].data["o"].flatten().tolist()[1:] == [-inf, -inf]  # [0]: nan


def test_pull_of_a_repeated_node_receives_its_in_edges_twice_as_dgl():
    """DGL 1.1.3 (checked side by side) pulls along in_edges(v): a node given
    twice gets each in-edge's message twice, in in_edges' order."""
    g = tessera.graph((torch.tensor([0, 1, 3, 2, 0]), torch.tensor([2, 2, 1, 1, 2])), num_nodes=4)
    g.ndata["h"] = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    boxes = {}

    def reduce(nodes):
        for n, box in zip(nodes.nodes().tolist(), nodes.mailbox["m"].reshape(len(nodes), -1)):
            boxes[n] = box.tolist()
        return {"o": nodes.mailbox["m"].sum(1)}
    g.pull([2, 1, 2], fn.copy_u("h", "m"), reduce)
    assert boxes == {1: [4.0, 3.0], 2: [1.0, 2.0, 1.0, 1.0, 2.0, 1.0]}
    assert g.ndata["o"].flatten().tolist() == [0.0, 7.0, 8.0, 0.0]
    for reduce, want in (("sum", [0.0, 0.0, 8.0, 0.0]), ("mean", [0.0, 0.0, 4 / 3, 0.0]),
                         ("max", [0.0, 0.0, 2.0, 0.0])):
        g.ndata.pop("o")
        g.pull(torch.tensor([2, 2]), fn.copy_u("h", "m"), getattr(fn, reduce)("m", "o"))
        assert g.ndata["o"].flatten().tolist() == pytest.approx(want)
    g.pull([2, 1, 2], fn.copy_u("h", "m"), fn.sum("m", "o"),
           lambda nodes: {"o": nodes.data["o"] + 1})
    assert g.ndata["o"].flatten().tolist() == [0.0, 8.0, 9.0, 0.0]


def test_dgl_constants_norm_by_dst_and_missing_fields_as_dgl():
    """DGL 1.1.3's values: NTYPE / ETYPE / NID / EID, dgl.norm_by_dst (per
    relation when given one), and a builtin's unknown field is a KeyError."""
    assert (tessera.NTYPE, tessera.ETYPE, tessera.NID, tessera.EID) == ("_TYPE", "_TYPE",
                                                                      "_ID", "_ID")
    g = tessera.graph((torch.tensor([0, 1, 1]), torch.tensor([1, 1, 2])))
    norm = tessera.norm_by_dst(g)
    assert norm.dtype == torch.float32 and norm.tolist() == [0.5, 0.5, 1.0]
    hg = hetero()
    assert tessera.norm_by_dst(hg, "follows").tolist() == pytest.approx([1 / 3] * 3 + [0.5] * 2)
    assert tessera.norm_by_dst(hg, BUYS).tolist() == [0.5, 0.5, 1.0]
    b = tessera.to_block(g, torch.tensor([1, 2]))
    assert tessera.norm_by_dst(b).tolist() == tnn.norm_by_dst(b).tolist()
    g.ndata["h"] = torch.ones(3, 1)
    with pytest.raises(KeyError, match="nope"):
        g.update_all(fn.copy_u("nope", "m"), fn.sum("m", "o"))


def test_apply_node_func_after_max_min_as_dgl():
    """Checked side by side against DGL 1.1.3: apply_node_func sees -inf
    (max) / inf (min) where no message came; only its outputs are stored;
    update_all then turns infinities into 0 in its first output only;
    send_and_recv, pull and push keep them."""
    inf = float("inf")

    def graph():
        g = tessera.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 2])), num_nodes=4)
        g.ndata["h"] = torch.tensor([[-inf], [inf], [1.0], [2.0]])
        g.ndata["o"] = torch.full((4, 1), 7.0)
        return g

    def values(g):
        return {k: v.flatten().tolist() for k, v in sorted(g.ndata.items())}

    g = tessera.graph(([0], [1]), num_nodes=3)  # The reviewer's case.
    g.ndata["h"] = torch.ones(3, 1)
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "o"), lambda nb: {"o": nb.data["o"] + 1})
    assert g.ndata["o"].flatten().tolist() == [0.0, 2.0, 0.0]
    g = tessera.graph(([0], [1]), num_nodes=3)
    g.ndata["h"] = torch.ones(3, 1)
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "o"), lambda nb: {"z": nb.data["o"] * 2})
    assert sorted(g.ndata.keys()) == ["h", "z"] and g.ndata["z"].flatten().tolist() == [0, 2, 0]

    plus1 = lambda nb: {"o": nb.data["o"] + 1}  # noqa: E731
    zo = lambda nb: {"z": nb.data["o"] * 2, "o": nb.data["o"] - 1}  # noqa: E731
    udf = lambda edges: {"m": edges.src["h"]}  # noqa: E731
    for msg in (fn.copy_u("h", "m"), udf):
        g = graph()
        g.update_all(msg, fn.max("m", "o"), plus1)
        assert values(g)["o"] == [0.0, 0.0, 0.0, 0.0]
        g = graph()
        g.update_all(msg, fn.min("m", "o"), zo)  # "z" first: "o" keeps its infinities.
        assert values(g) == {"h": [-inf, inf, 1.0, 2.0], "o": [inf, -inf, 0.0, inf],
                             "z": [0.0, 0.0, 2.0, 0.0]}
        g = graph()
        g.update_all(msg, fn.sum("m", "q"), lambda nb: {"z": nb.data["q"] * 2})
        assert values(g) == {"h": [-inf, inf, 1.0, 2.0], "o": [7.0] * 4,
                             "z": [0.0, -inf, inf, 0.0]}
        g = graph()
        g.update_all(msg, fn.max("m", "q"), lambda nb: {})
        assert sorted(g.ndata.keys()) == ["h", "o"]
        g = graph()
        g.send_and_recv([1], msg, fn.min("m", "q"), lambda nb: {"z": nb.data["q"] - 1})
        assert values(g) == {"h": [-inf, inf, 1.0, 2.0], "o": [7.0] * 4,
                             "z": [0.0, 0.0, inf, 0.0]}
        g = graph()
        g.pull([0, 2], msg, fn.min("m", "o"), zo)
        assert values(g) == {"h": [-inf, inf, 1.0, 2.0], "o": [inf, 7.0, 0.0, 7.0],
                             "z": [inf, 0.0, 2.0, 0.0]}
        g = graph()
        g.push([1], msg, fn.max("m", "o"), plus1)
        assert values(g)["o"] == [7.0, 7.0, inf, 7.0]
    # multi_update_all: a relation's apply_node_func stores its outputs alone.
    hg = tessera.heterograph({("a", "r1", "b"): ([0, 1], [0, 0]), ("a", "r2", "b"): ([1], [1])},
                             num_nodes_dict={"a": 2, "b": 3})
    hg.nodes["a"].data["h"] = torch.tensor([[2.0], [-inf]])
    hg.nodes["b"].data["o"] = torch.full((3, 1), 7.0)
    z = lambda nb: {"z": nb.data["o"] * 2}  # noqa: E731
    hg.multi_update_all({"r1": (fn.copy_u("h", "m"), fn.max("m", "o"), z),
                         "r2": (fn.copy_u("h", "m"), fn.max("m", "o"), z)}, "sum",
                        lambda nb: {"o": nb.data["z"] + 1})
    assert {k: v.flatten().tolist() for k, v in sorted(hg.nodes["b"].data.items())} == \
        {"o": [1.0, 1.0, 1.0], "z": [0.0, 0.0, 0.0]}  # 4 + -inf: 0
