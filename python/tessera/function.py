"""DGL's ``dgl.function``: built-in message and reduce functions, and the
message passing of tessera's graphs and blocks (``apply_edges``,
``update_all``, ``multi_update_all``, ``apply_nodes``)::

    import tessera.function as fn            # was: import dgl.function as fn
    block.srcdata["h"] = h
    block.update_all(fn.copy_u("h", "m"), fn.mean("m", "h_neigh"))
    pair_graph.apply_edges(fn.u_dot_v("h", "h", "score"))

Messages: ``copy_u`` / ``copy_e`` and ``{u,v,e}_{add,sub,mul,div,dot}_{u,v,e}``
(``u``: the edge's source data, ``v``: its destination's, ``e``: its own);
feature shapes broadcast as numpy's (``[N, H, D]`` with ``[E, H, 1]``).
Reductions: ``sum``, ``mean``, ``max``, ``min`` (0 at nodes without
in-edges, as DGL). A builtin message with a builtin reduction runs in
tessera's CSR kernels without a per-edge intermediate where it can
(``copy_u``; ``u_mul_e`` / ``e_mul_u`` with a scalar, per-head or
element-wise edge weight; ``copy_e``), otherwise as one gather of per-edge
messages and one segment reduction; both with autograd. User-defined
functions work as in DGL: a message function gets ``edges`` (``.src``,
``.dst``, ``.data``) and returns ``{name: [E, ...]}``; a reduce function
gets ``nodes`` (``.mailbox[name]`` ``[N, degree, ...]``, nodes grouped by
in-degree, and ``.data``) and returns ``{name: [N, ...]}``.
"""
import builtins
from collections.abc import Mapping

import torch

from tessera import _C
from tessera._utils import as_ids, flat_rows, missing_name as _missing_name
from tessera.heterograph import ALL, Graph, _nodes_of, _Relation

_SIDES = {"u": "source", "v": "destination", "e": "edge"}


class BuiltinFunction:
    """A built-in message or reduce function (DGL's)."""


class MessageFunction(BuiltinFunction):
    """``out = lhs op rhs`` per edge (``op`` "copy" takes ``lhs`` alone)."""

    def __init__(self, lhs, op, rhs, lhs_field, rhs_field, out):
        self.lhs, self.op, self.rhs = lhs, op, rhs
        self.lhs_field, self.rhs_field, self.out_field = lhs_field, rhs_field, out
        self.name = f"copy_{lhs}" if op == "copy" else f"{lhs}_{op}_{rhs}"

    def __repr__(self):
        fields = [self.lhs_field] + ([] if self.op == "copy" else [self.rhs_field])
        return f"fn.{self.name}({', '.join(map(repr, fields + [self.out_field]))})"


class ReduceFunction(BuiltinFunction):
    """``out[v] = op over v's in-edges of msg``."""

    def __init__(self, op, msg, out):
        self.name, self.msg_field, self.out_field = op, msg, out

    def __repr__(self):
        return f"fn.{self.name}({self.msg_field!r}, {self.out_field!r})"


def copy_u(u, out):
    """The source's ``u`` data as the message ``out``."""
    return MessageFunction("u", "copy", None, u, None, out)


def copy_e(e, out):
    """The edge's ``e`` data as the message ``out``."""
    return MessageFunction("e", "copy", None, e, None, out)


copy_src = copy_u
copy_edge = copy_e


def _binary(lhs, op, rhs):
    def make(lhs_field, rhs_field, out):
        return MessageFunction(lhs, op, rhs, lhs_field, rhs_field, out)
    make.__name__ = f"{lhs}_{op}_{rhs}"
    make.__doc__ = (f"The message ``out`` = the {_SIDES[lhs]}'s ``lhs_field`` {op} the "
                    f"{_SIDES[rhs]}'s ``rhs_field``.")
    return make


for _l in "uve":
    for _r in "uve":
        if _l != _r:
            for _op in ("add", "sub", "mul", "div", "dot"):
                globals()[f"{_l}_{_op}_{_r}"] = _binary(_l, _op, _r)
del _l, _r, _op


def _reducer(op):
    def make(msg, out):
        return ReduceFunction(op, msg, out)
    make.__name__ = op
    make.__doc__ = f"``out`` = the {op} of the messages ``msg`` over each node's in-edges."
    return make


sum = _reducer("sum")  # noqa: A001 (DGL's names)
mean = _reducer("mean")
max = _reducer("max")  # noqa: A001
min = _reducer("min")  # noqa: A001


# ---------------------------------------------------------------- batches for UDFs


class _Rows(Mapping):
    """A frame's tensors at ``index`` (gathered on first read)."""

    def __init__(self, data, index):
        self._data, self._index, self._cache = data, index, {}

    def __getitem__(self, name):
        if name not in self._cache:
            t = self._data[name]
            self._cache[name] = t if self._index is None else t.index_select(0, self._index)
        return self._cache[name]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class EdgeBatch:
    """The edges a message or apply-edges UDF sees (DGL's ``EdgeBatch``):
    ``src`` / ``dst`` / ``data`` the sources', destinations' and edges' data."""

    def __init__(self, g, c, eids):
        r = g._rel[c]
        self._src_ids = r.src if eids is None else r.src.index_select(0, eids)
        self._dst_ids = r.dst if eids is None else r.dst.index_select(0, eids)
        self._eids = torch.arange(r.num_edges(), dtype=torch.int64) if eids is None else eids
        self.src = _Rows(g._srcf[c[0]].data, self._src_ids)
        self.dst = _Rows(g._dstf[c[2]].data, self._dst_ids)
        self.data = _Rows(g._ef[c].data, eids)
        self.canonical_etype = c

    def edges(self):
        return self._src_ids, self._dst_ids, self._eids

    def batch_size(self):
        return self._eids.numel()

    def __len__(self):
        return self.batch_size()


class NodeBatch:
    """The nodes a reduce or apply-nodes UDF sees (DGL's ``NodeBatch``):
    ``data`` their data, ``mailbox`` their messages ``[N, degree, ...]``."""

    def __init__(self, data, nodes, ntype, mailbox=None):
        self.data, self._nodes, self.ntype, self.mailbox = data, nodes, ntype, mailbox

    def nodes(self):
        return self._nodes

    def batch_size(self):
        return self._nodes.numel()

    def __len__(self):
        return self.batch_size()


# ---------------------------------------------------------------- builtins


def _operand(g, c, side, field, fname, src_idx, dst_idx, eids):
    """The per-edge values of operand ``side`` ('u', 'v' or 'e')."""
    if side == "u":
        frame, idx = g._srcf[c[0]], src_idx
    elif side == "v":
        frame, idx = g._dstf[c[2]], dst_idx
    else:
        frame, idx = g._ef[c], eids
    if field not in frame.data:  # KeyError, as DGL's (and the frames').
        raise KeyError(f"{fname}: {frame.what} has no data {field!r} (it has "
                       f"{sorted(frame.data)})")
    t = frame.data[field]
    return t if idx is None else t.index_select(0, idx)


def _align(a, b):
    """``a`` and ``b`` ([E, *feature]) with their feature shapes broadcast
    as numpy's: the shorter one gets 1s inserted after the edge dimension."""
    if a.dim() < b.dim():
        a = a.reshape(a.shape[0], *([1] * (b.dim() - a.dim())), *a.shape[1:])
    elif b.dim() < a.dim():
        b = b.reshape(b.shape[0], *([1] * (a.dim() - b.dim())), *b.shape[1:])
    return a, b


def _message(g, c, f, eids=None):
    """Builtin message ``f`` on relation ``c`` (all edges, or ``eids``), edge order."""
    r = g._rel[c]
    src_idx = r.src if eids is None else r.src.index_select(0, eids)
    dst_idx = r.dst if eids is None else r.dst.index_select(0, eids)
    a = _operand(g, c, f.lhs, f.lhs_field, f.name, src_idx, dst_idx, eids)
    if f.op == "copy":
        return a
    b = _operand(g, c, f.rhs, f.rhs_field, f.name, src_idx, dst_idx, eids)
    if f.op == "dot":  # DGL's rule: the last sizes agree (a 1-D feature's is 1).
        last_a, last_b = (a.shape[1:] or (1,))[-1], (b.shape[1:] or (1,))[-1]
        if last_a != last_b:
            raise _C.TesseraError(f"{f.name}: a dot product needs the same size on the last "
                                  f"dimension, got {f.lhs_field!r} {tuple(a.shape[1:])} and "
                                  f"{f.rhs_field!r} {tuple(b.shape[1:])}")
        if a.dim() == 1 and b.dim() == 1:
            return a * b
    a, b = _align(a, b)
    try:
        if f.op == "add":
            return a + b
        if f.op == "sub":
            return a - b
        if f.op == "mul":
            return a * b
        if f.op == "div":
            return a / b
        return (a * b).sum(-1, keepdim=True)
    except RuntimeError as e:
        raise _C.TesseraError(f"{f.name}: {f.lhs_field!r} {tuple(a.shape[1:])} and "
                              f"{f.rhs_field!r} {tuple(b.shape[1:])} do not broadcast: {e}")


class _Negate(torch.autograd.Function):
    """``-x`` without negative zeros, in the gradient too: ``min`` is
    ``-max(-x)``, and DGL's ``min`` gives 0.0 where no message wins."""

    @staticmethod
    def forward(ctx, x):
        return x.neg().add_(0.0)  # -0.0 + 0.0 is 0.0

    @staticmethod
    def backward(ctx, grad):
        return _Negate.apply(grad)


def _inf_to_zero(out):
    """DGL's ``replace_inf_with_zero`` on every tensor of ``out``."""
    return {k: v.masked_fill(torch.isinf(v), 0) if v.is_floating_point() else v
            for k, v in out.items()}


def _segment(indptr, idx, values, op):
    """``op`` ("sum", "mean", "max", "min") of ``values[idx[k]]`` over each
    destination's CSR positions k (0 without any)."""
    if not values.is_floating_point():
        raise _C.TesseraError(f"reduce {op!r}: messages must be floating-point, got "
                              f"{values.dtype}")
    flat = flat_rows(values)
    if op in ("max", "min"):
        x = flat if op == "max" else _Negate.apply(flat)
        out = _C.aggregate(indptr, idx, x, "max", None)
        lowest = torch.isneginf(x.detach())
        if bool(lowest.any()):  # The kernel gives 0 there; DGL's result is -inf.
            wins = _C.aggregate(indptr, idx, (~lowest).to(x.dtype), "sum", None)
            reached = (indptr[1:] > indptr[:-1]).unsqueeze(1)
            out = out.masked_fill((wins == 0) & reached, float("-inf"))
        if op == "min":
            out = _Negate.apply(out)
    else:
        out = _C.aggregate(indptr, idx, flat, op, None)
    return out.reshape(out.shape[0], *values.shape[1:])


def _edge_weight(u_shape, e_shape):
    """How an edge operand multiplies a source operand in the weighted
    kernel: "scalar", "head" ([E, H, 1] over u [N, H, F']), "elementwise"
    (e of u's 1-D shape), or None (not expressible)."""
    if len(e_shape) <= 1 and (not e_shape or e_shape[0] == 1):
        return "scalar"
    if len(u_shape) == 2 and e_shape == (u_shape[0], 1):
        return "head"  # (e of shape (H,) broadcasts against F, as numpy's: not a head.)
    if len(u_shape) == 1 and e_shape == u_shape:
        return "elementwise"
    return None


def _builtin_update(g, c, mf, rf):
    """Builtin message ``mf`` and reduction ``rf`` on relation ``c``:
    ``[num_dst, ...]`` of the destination type."""
    r = g._rel[c]
    indptr, perm = r.indptr, r.csr_perm
    op = rf.name
    if mf.op == "copy" and mf.lhs == "u":
        h = _operand(g, c, "u", mf.lhs_field, mf.name, None, None, None)
        return _segment(indptr, r.csr_indices, h, op)
    if mf.op == "mul" and {mf.lhs, mf.rhs} == {"u", "e"}:
        u_field, e_field = ((mf.lhs_field, mf.rhs_field) if mf.lhs == "u"
                            else (mf.rhs_field, mf.lhs_field))
        h = _operand(g, c, "u", u_field, mf.name, None, None, None)
        w = _operand(g, c, "e", e_field, mf.name, None, None, None)
        kind = _edge_weight(tuple(h.shape[1:]), tuple(w.shape[1:]))
        exact = op in ("sum", "mean") or not (bool(torch.isinf(h).any())
                                               or bool(torch.isinf(w).any()))
        if kind is not None and h.is_floating_point() and w.dtype == h.dtype and exact:
            w = flat_rows(w)
            if perm is not None:
                w = w.index_select(0, perm)
            x = h.unsqueeze(-1) if kind == "elementwise" else h
            if kind == "scalar":
                w = w.reshape(-1)
            if op == "min":
                out = _Negate.apply(_C.aggregate(indptr, r.csr_indices, _Negate.apply(x),
                                                 "max", w))
            else:
                out = _C.aggregate(indptr, r.csr_indices, x, op, w)
            return out.reshape(out.shape[0], *h.shape[1:])
    # General: the per-edge messages, reduced over the CSR positions.
    return _segment(indptr, r.csr_positions, _message(g, c, mf), op)


# ---------------------------------------------------------------- UDF reduce


def _udf_reduce(g, c, msgs, rfunc):
    """A reduce UDF over degree buckets: ``{name: [num_dst, ...]}`` (zeros
    at destinations without in-edges, as DGL)."""
    r = g._rel[c]
    indptr, perm = r.indptr, r.csr_perm
    deg = indptr[1:] - indptr[:-1]
    dst_data = g._dstf[c[2]].data
    parts, nodes_seen = {}, []
    for d in torch.unique(deg).tolist():
        if d == 0:
            continue
        nodes = torch.nonzero(deg == d).reshape(-1)
        pos = (indptr.index_select(0, nodes).unsqueeze(1) + torch.arange(d)).reshape(-1)
        eids = pos if perm is None else perm.index_select(0, pos)
        mailbox = {k: m.index_select(0, eids).reshape(nodes.numel(), d, *m.shape[1:])
                   for k, m in msgs.items()}
        out = rfunc(NodeBatch(_Rows(dst_data, nodes), nodes, c[2], mailbox))
        _check_udf_out(out, nodes.numel(), "reduce function")
        for k, v in out.items():
            parts.setdefault(k, []).append(v)
        nodes_seen.append(nodes)
    if not nodes_seen:
        return {}
    index = torch.cat(nodes_seen)
    num_dst = r.num_dst
    result = {}
    for k, vs in parts.items():
        if len(vs) != len(nodes_seen):
            raise _C.TesseraError(f"reduce function: output {k!r} missing for some degrees")
        v = torch.cat(vs)
        result[k] = v.new_zeros((num_dst, *v.shape[1:])).index_copy(0, index, v)
    return result


def _check_udf_out(out, n, what):
    if not isinstance(out, Mapping):
        raise _C.TesseraError(f"{what}: must return a dict of tensors, got "
                              f"{type(out).__name__}")
    for k, v in out.items():
        if not isinstance(v, torch.Tensor) or v.dim() < 1 or v.shape[0] != n:
            shape = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
            raise _C.TesseraError(f"{what}: output {k!r} is {shape}, expected {n} rows")


# ---------------------------------------------------------------- entry points


def _relation_update(g, c, mfunc, rfunc):
    """``{name: [num_dst, ...]}`` of one relation's message passing."""
    if isinstance(mfunc, MessageFunction) and isinstance(rfunc, ReduceFunction):
        if rfunc.msg_field != mfunc.out_field:
            raise _C.TesseraError(f"{rfunc!r} reduces message {rfunc.msg_field!r}, but "
                                  f"{mfunc!r} sends {mfunc.out_field!r}")
        return {rfunc.out_field: _builtin_update(g, c, mfunc, rfunc)}
    if isinstance(mfunc, MessageFunction):
        msgs = {mfunc.out_field: _message(g, c, mfunc)}
    elif callable(mfunc):
        msgs = mfunc(EdgeBatch(g, c, None))
        _check_udf_out(msgs, g._rel[c].num_edges(), "message function")
    else:
        raise _C.TesseraError(f"message_func must be a tessera.function builtin or a "
                              f"callable, got {mfunc!r}")
    if isinstance(rfunc, ReduceFunction):
        if rfunc.msg_field not in msgs:
            raise _C.TesseraError(f"{rfunc!r} reduces message {rfunc.msg_field!r}; the "
                                  f"messages are {sorted(msgs)}")
        r = g._rel[c]
        return {rfunc.out_field: _segment(r.indptr, r.csr_positions, msgs[rfunc.msg_field],
                                          rfunc.name)}
    if callable(rfunc):
        return _udf_reduce(g, c, msgs, rfunc)
    raise _C.TesseraError(f"reduce_func must be a tessera.function builtin or a callable, "
                          f"got {rfunc!r}")


def _write(frame, out):
    for k, v in out.items():
        frame.data[k] = frame.check(k, v)


def _apply_nodes(g, frame, ntype, func):
    """``func`` on every node of ``frame``; its outputs (None without func)."""
    if func is None:
        return None
    nodes = torch.arange(frame.num_rows, dtype=torch.int64)
    out = func(NodeBatch(_Rows(frame.data, None), nodes, ntype))
    _check_udf_out(out, frame.num_rows, "apply_node_func")
    _write(frame, out)
    return out


def _extreme(reduce_func):
    """"max" or "min" for such a builtin reduction, else None."""
    if isinstance(reduce_func, ReduceFunction) and reduce_func.name in ("max", "min"):
        return reduce_func.name
    return None


def _unreached_identity(indptr, out, extreme, if_empty=False):
    """``out`` with the reducer's identity (-inf for max, inf for min) at the
    destinations without in-edges, as DGL's kernels leave them. A relation
    without any edge keeps its zeros (DGL's gspmm skips the kernel then)
    unless ``if_empty``."""
    if extreme is None or not (if_empty or int(indptr[-1]) > 0):
        return out
    unreached = indptr[1:] == indptr[:-1]
    if not bool(unreached.any()):
        return out
    fill = float("-inf") if extreme == "max" else float("inf")
    return {k: v.masked_fill(unreached.view(-1, *[1] * (v.dim() - 1)), fill)
            if v.is_floating_point() else v for k, v in out.items()}


def _then_apply(data, out, nodes, ntype, func):
    """DGL's ``message_passing`` apply phase: ``func`` sees ``data`` (the
    destinations' rows) updated by the reduction's ``out``, and its outputs
    alone are the result (the reduction's own fields are not stored)."""
    if func is None:
        return out
    applied = func(NodeBatch(_Rows(dict(data, **out), None), nodes, ntype))
    _check_udf_out(applied, nodes.numel(), "apply_node_func")
    return dict(applied)


def update_all(g, message_func, reduce_func, apply_node_func=None, etype=None):
    """Messages along every edge of relation ``etype``, reduced into its
    destinations' data. On a graph of several relations with ``etype``
    None: every relation, builtins only, results of a destination type
    combined by the same reduction across relations (DGL)."""
    if etype is None and len(g.canonical_etypes) > 1:
        if not (isinstance(message_func, MessageFunction)
                and isinstance(reduce_func, ReduceFunction)):
            raise _C.TesseraError("update_all on a graph of several relations takes builtin "
                                  "functions; use multi_update_all for user-defined ones")
        if reduce_func.name == "mean":
            raise _C.TesseraError("update_all on several relations cannot reduce by 'mean' "
                                  "both within and across relations; use multi_update_all")
        # One reduction over every edge: a relation without edges adds nothing
        # (DGL's hetero kernel runs only if its first relation has edges: a bug).
        _multi_update_all(g, {c: (message_func, reduce_func) for c in g.canonical_etypes},
                          reduce_func.name, apply_node_func, True)
        return
    c = g.to_canonical_etype(etype)
    frame = g._dstf[c[2]]
    extreme = _extreme(reduce_func)
    out = _relation_update(g, c, message_func, reduce_func)
    if apply_node_func is not None:  # It sees DGL's -inf / inf where no message came.
        out = _then_apply(frame.data, _unreached_identity(g._rel[c].indptr, out, extreme),
                          torch.arange(frame.num_rows, dtype=torch.int64), c[2],
                          apply_node_func)
    if extreme is not None and out:
        # DGL replaces infinities by 0 in the first field of the result only
        # (the reduction's, or apply_node_func's first output).
        first = next(iter(out))
        out = dict(out, **_inf_to_zero({first: out[first]}))
    _write(frame, out)


def _edge_ids(g, c, edges, what):
    """Edge ids of relation ``c``: given as ids, or as a pair ``(u, v)`` of
    endpoint tensors (DGL's forms)."""
    if isinstance(edges, tuple):
        if len(edges) != 2:
            raise _C.TesseraError(f"{what}: a tuple of edges is (u, v), got {len(edges)} items")
        return g.edge_ids(edges[0], edges[1], etype=c).reshape(-1)
    return as_ids(edges, what)[0]


def send_and_recv(g, edges, message_func, reduce_func, apply_node_func=None, etype=None):
    """Messages along ``edges`` (edge ids of relation ``etype``, or a pair
    ``(u, v)`` of endpoints) only,
    reduced into their destinations, whose data alone changes (DGL's
    ``send_and_recv``); ``apply_node_func`` runs on those destinations."""
    c = g.to_canonical_etype(etype)
    r = g._rel[c]
    eids = _edge_ids(g, c, edges, "send_and_recv edges")
    if eids.numel() and (int(eids.min()) < 0 or int(eids.max()) >= r.num_edges()):
        raise _C.TesseraError(f"send_and_recv: edge id out of range [0, {r.num_edges()}) of "
                              f"relation {c}")
    receivers = torch.unique(r.dst.index_select(0, eids))
    _partial_update(g, c, eids, receivers, message_func, reduce_func, apply_node_func)


def pull(g, v, message_func, reduce_func, apply_node_func=None, etype=None):
    """Nodes ``v`` receive messages along all their in-edges of relation
    ``etype`` (DGL's ``pull``); only their data changes (0 for a builtin
    reduction where a node has no in-edge)."""
    c = g.to_canonical_etype(etype)
    r = g._rel[c]
    v = as_ids(v, "pull v")[0]
    if v.numel() and (int(v.min()) < 0 or int(v.max()) >= r.num_dst):
        raise _C.TesseraError(f"pull: node id out of range [0, {r.num_dst}) of {c[2]!r}")
    # A node given twice receives its in-edges twice (DGL's in_edges(v)).
    eids = g.in_edges(v, form="eid", etype=c)
    _partial_update(g, c, eids, torch.unique(v), message_func, reduce_func, apply_node_func)


def _partial_update(g, c, eids, receivers, message_func, reduce_func, apply_node_func):
    """update_all over the edges ``eids`` of ``c``, written to the rows of
    ``receivers`` only (other rows keep their values; a new name starts at 0).
    A receiver without edges gets -inf / inf from max / min (DGL's kernels)."""
    r = g._rel[c]
    sub = g[c]  # Shares the node frames; the relation restricted to eids.
    sub._rel = {c: _Relation(r.num_src, r.num_dst, r.src.index_select(0, eids),
                             dst=r.dst.index_select(0, eids))}
    sub._ef = {c: g._ef[c].subframe(eids, g._ef[c].what)}
    out = _relation_update(sub, c, message_func, reduce_func)
    out = _unreached_identity(sub._rel[c].indptr, out, _extreme(reduce_func))
    frame = g._dstf[c[2]]
    out = {k: v.index_select(0, receivers) for k, v in out.items()}
    if apply_node_func is not None:
        data = {k: v.index_select(0, receivers) for k, v in frame.data.items()}
        out = _then_apply(data, out, receivers, c[2], apply_node_func)
    rows = {}
    for k, v in out.items():
        old = frame.data.get(k)
        shape = (frame.num_rows, *v.shape[1:])
        base = old if old is not None and old.shape == shape else v.new_zeros(shape)
        rows[k] = base.index_copy(0, receivers, v)
    _write(frame, rows)


_CROSS = {"sum": lambda xs: builtins.sum(xs[1:], xs[0]),
          "mean": lambda xs: builtins.sum(xs[1:], xs[0]) / len(xs),
          "max": lambda xs: torch.stack(xs).amax(0),
          "min": lambda xs: torch.stack(xs).amin(0),
          "stack": lambda xs: torch.stack(xs, 1)}


def multi_update_all(g, etype_dict, cross_reducer, apply_node_func=None):
    """Per relation ``etype_dict[etype] = (message_func, reduce_func[,
    apply_node_func])``, then per destination type the relations' results
    combined by ``cross_reducer`` ("sum", "mean", "max", "min", "stack" or
    ``f(list of tensors)``), then ``apply_node_func`` (DGL). A relation
    without edges gives zeros to the merge, as DGL's (even by max / min)."""
    _multi_update_all(g, etype_dict, cross_reducer, apply_node_func, False)


def _multi_update_all(g, etype_dict, cross_reducer, apply_node_func, if_empty):
    """multi_update_all; ``if_empty``: an edgeless relation's max / min gives
    the identity (update_all's one reduction across relations)."""
    if isinstance(cross_reducer, str):
        if cross_reducer not in _CROSS:
            raise _C.TesseraError(f"multi_update_all: cross_reducer must be one of "
                                  f"{sorted(_CROSS)} or a callable, got {cross_reducer!r}")
        cross = _CROSS[cross_reducer]
    elif callable(cross_reducer):
        cross = cross_reducer
    else:
        raise _C.TesseraError(f"multi_update_all: cross_reducer {cross_reducer!r}")
    per_type = {}
    order = {c: i for i, c in enumerate(g.canonical_etypes)}
    for etype, funcs in etype_dict.items():
        c = g.to_canonical_etype(etype)
        if not isinstance(funcs, (tuple, list)) or len(funcs) not in (2, 3):
            raise _C.TesseraError(f"multi_update_all: {etype!r} needs (message_func, "
                                  f"reduce_func[, apply_node_func])")
        out = _relation_update(g, c, funcs[0], funcs[1])
        extreme = isinstance(funcs[1], ReduceFunction) and funcs[1].name in ("max", "min")
        # As in DGL: until the merge, a destination this relation does not
        # reach holds the reducer's identity (-inf for max, inf for min).
        out = _unreached_identity(g._rel[c].indptr, out, _extreme(funcs[1]), if_empty)
        if len(funcs) == 3 and funcs[2] is not None:  # Its outputs alone, as DGL's.
            frame = g._dstf[c[2]]
            out = _then_apply(frame.data, out, torch.arange(frame.num_rows, dtype=torch.int64),
                              c[2], funcs[2])
        per_type.setdefault(c[2], []).append((order[c], out))
    for ntype, results in per_type.items():
        if cross_reducer == "stack":  # In relation order; others in the order given (DGL).
            results.sort(key=lambda x: x[0])
        frame = g._dstf[ntype]
        names = dict.fromkeys(k for _, out in results for k in out)
        combined = {}
        for k in names:
            parts = [out[k] for _, out in results if k in out]
            alone = len(results) == 1 or (len(parts) == 1 and isinstance(cross_reducer, str))
            combined[k] = parts[0] if alone and cross_reducer != "stack" else cross(parts)
            if extreme:  # DGL's rule: when the last relation given reduces by max or min.
                combined[k] = combined[k].masked_fill(torch.isinf(combined[k]), 0)
        _write(frame, combined)
        _apply_nodes(g, frame, ntype, apply_node_func)


def apply_edges(g, func, edges=ALL, etype=None):
    """``func`` (a builtin message or a UDF) on the edges of relation
    ``etype`` (``edges``: all, edge ids or a pair ``(u, v)`` of endpoints):
    the result is edge data. On a graph of several relations with ``etype``
    None, a builtin runs on every relation."""
    if etype is None and len(g.canonical_etypes) > 1:
        if not isinstance(func, MessageFunction):
            raise _C.TesseraError("apply_edges on a graph of several relations takes a builtin; "
                                  "give etype for a user-defined function")
        for c in g.canonical_etypes:
            apply_edges(g, func, edges, c)
        return
    c = g.to_canonical_etype(etype)
    frame, n = g._ef[c], g._rel[c].num_edges()
    eids = None
    if not (isinstance(edges, str) and edges == ALL):
        eids = _edge_ids(g, c, edges, "apply_edges edges")
        if eids.numel() and (int(eids.min()) < 0 or int(eids.max()) >= n):
            raise _C.TesseraError(f"apply_edges: edge id out of range [0, {n}) of relation {c}")
    if isinstance(func, MessageFunction):
        out = {func.out_field: _message(g, c, func, eids)}
    elif callable(func):
        out = func(EdgeBatch(g, c, eids))
        _check_udf_out(out, n if eids is None else eids.numel(), "apply_edges function")
    else:
        raise _C.TesseraError(f"apply_edges: func must be a builtin or a callable, got {func!r}")
    _write(frame, out if eids is None else _into_rows(frame, eids, out, "apply_edges"))


def _into_rows(frame, rows, out, what):
    """Whole columns of ``frame`` with ``out``'s values at ``rows``: other
    rows keep their values, a new name is 0 there. A name whose dtype or row
    shape the values change is an error naming it."""
    for k, val in out.items():
        old = frame.data.get(k)
        if old is not None and (old.dtype != val.dtype or old.shape[1:] != val.shape[1:]):
            raise _C.TesseraError(f"{what}: field {k!r} holds {old.dtype} "
                                  f"{tuple(old.shape[1:])} per row; the function gave "
                                  f"{val.dtype} {tuple(val.shape[1:])}")
    return {k: (frame.data[k] if k in frame.data else
                val.new_zeros((frame.num_rows, *val.shape[1:]))).index_copy(0, rows, val)
            for k, val in out.items()}


def apply_nodes(g, func, v=ALL, ntype=None):
    """``func(nodes)`` on the nodes ``v`` (default: all) of ``ntype``; its
    outputs become their node data (other rows keep theirs; 0 in a new
    field, as DGL)."""
    if ntype is None:  # A uni-bipartite graph has several types: name one (DGL).
        t = g._one_type(g.dsttypes if g.is_block else g.ntypes, "node")
    else:
        t = ntype
    frame = g._dstf[t] if g.is_block else g._nodef[t]
    if isinstance(v, str) and v == ALL:
        _apply_nodes(g, frame, t, func)
        return
    nodes = _nodes_of(v, frame.num_rows, t, "apply_nodes v")[0]
    out = func(NodeBatch(_Rows(frame.data, nodes), nodes, t))
    _check_udf_out(out, nodes.numel(), "apply_nodes function")
    _write(frame, _into_rows(frame, nodes, out, "apply_nodes"))


def push(g, u, message_func, reduce_func, apply_node_func=None, etype=None):
    """Nodes ``u`` send messages along all their out-edges of relation
    ``etype``, reduced into those edges' destinations (DGL's ``push``)."""
    c = g.to_canonical_etype(etype)
    send_and_recv(g, g.out_edges(u, form="eid", etype=c), message_func, reduce_func,
                  apply_node_func, c)


# DGL's graphs have these as methods too.
for _f in (apply_edges, update_all, multi_update_all, apply_nodes, send_and_recv, pull, push):
    setattr(Graph, _f.__name__, _f)
del _f


def __getattr__(name):
    raise _missing_name(__name__, name)
