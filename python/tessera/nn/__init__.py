"""GNN layers on blocks (dgl.nn.pytorch's SAGEConv, GraphConv, GATConv,
RelGraphConv, TypedLinear, HeteroGraphConv), as ordinary ``torch.nn.Module``s
with DGL's constructor arguments, parameter names and initialisation.
``forward(block, feat)`` takes the block's source features (or a ``(src,
dst)`` pair) and returns one row per destination. The mean aggregation runs
in tessera's C++ kernel; autograd flows through every layer. ``RGCN`` is the
entity-classification model of DGL's distributed R-GCN example.
``RelGraphConv`` / ``RGCN`` also take heterogeneous blocks with ``{ntype:
tensor}`` features, and ``HeteroGraphConv`` runs one homogeneous-block module
per relation of a heterogeneous block (over ``RelationBlock`` views).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from tessera import _C, EID
from tessera._utils import submodule as _submodule
from tessera import function as fn
from tessera.ops import (Dropout, _csr, _linear, _to_csr_order, _to_edge_order, aggregate,
                         mean_aggregate, sum_aggregate)
from tessera.nn import functional
from tessera.nn.functional import edge_softmax
from tessera.heterograph import Block, _is_typed


def _check_block(graph, what):
    if _is_typed(graph):
        raise _C.TesseraError(f"{what}: expected a block of one relation, got a typed block "
                              "(take one relation with RelationBlock, or use HeteroGraphConv)")
    if not hasattr(graph, "indptr") or not hasattr(graph, "indices"):
        raise _C.TesseraError(f"{what}: expected a Block (a loader's blocks), got "
                              f"{type(graph).__name__}")


def _edge_weight(graph, edge_weight, dtype, what, gat=False):
    """``edge_weight`` as ``[E]`` in the features' ``dtype``, or None. DGL's
    shapes: ``[E]`` or ``[E, 1]`` (GATConv: ``[E]`` or ``[1, E]``, which its
    ``tile`` reads as ``[E]``, and ``[E, 1]`` as the others); not any shape of
    E values, which would be silently reinterpreted. Any floating dtype, one
    rule for every layer (DGL's SAGEConv / GraphConv want the features' own;
    its GATConv promotes: integers and float16 pass, float64 fails)."""
    if edge_weight is None:
        return None
    if not isinstance(edge_weight, torch.Tensor):
        raise _C.TesseraError(f"{what}: edge_weight must be a tensor, got "
                              f"{type(edge_weight).__name__}")
    n = graph.num_edges()
    shapes = [(n,), (n, 1)] + ([(1, n)] if gat else [])
    if tuple(edge_weight.shape) not in shapes:
        raise _C.TesseraError(f"{what}: edge_weight of shape {tuple(edge_weight.shape)} for "
                              f"{n} edges; expected {' or '.join(map(str, shapes))}")
    if not edge_weight.is_floating_point():
        raise _C.TesseraError(f"{what}: edge_weight must be floating-point, got "
                              f"{edge_weight.dtype}")
    return edge_weight.reshape(-1).to(dtype)


def _split_feat(graph, feat, what):
    if isinstance(feat, (tuple, list)):
        if feat[1].dim() < 1 or feat[1].shape[0] != graph.num_dst_nodes():
            raise _C.TesseraError(f"{what}: {tuple(feat[1].shape)} destination rows for a "
                                  f"block of {graph.num_dst_nodes()} destinations")
        return feat[0], feat[1]
    return feat, feat[:graph.num_dst_nodes()]


def _feat_drop(graph, feat, h_src, h_dst, drop):
    """DGL's ``feat_drop``: a ``(src, dst)`` pair's tensors are dropped
    separately; one tensor is dropped once and the destinations are the
    first ``num_dst`` rows of the dropped sources (one mask for both)."""
    if drop.p == 0 or not drop.training:
        return h_src, h_dst
    if isinstance(feat, (tuple, list)):
        return drop(h_src), drop(h_dst)
    h_src = drop(h_src)
    return h_src, h_src[:graph.num_dst_nodes()]


def _check_rows(graph, h_src, in_feats, what):
    if h_src.dim() < 2 or h_src.shape[0] != graph.num_src_nodes():
        raise _C.TesseraError(f"{what}: {tuple(h_src.shape)} source rows for a block of "
                              f"{graph.num_src_nodes()} sources")
    if in_feats is not None and h_src.shape[-1] != in_feats:
        raise _C.TesseraError(f"{what}: input has {h_src.shape[-1]} features, the layer "
                              f"expects {in_feats}")


class SAGEConv(nn.Module):
    """GraphSAGE (DGL's SAGEConv): h_dst' = W_self h_dst + W_neigh agg(h_src)
    (+ b), agg by ``aggregator_type``: "mean"; "gcn" ((sum of neighbours +
    self) / (in-degree + 1), no W_self); "pool" (max of ReLU(fc_pool
    h_src)); "lstm" (an LSTM over each node's neighbours, as DGL, in
    in-degree buckets). ``edge_weight`` ([E] or [E, 1]) scales each message."""

    def __init__(self, in_feats, out_feats, aggregator_type="mean", feat_drop=0.0, bias=True,
                 norm=None, activation=None):
        super().__init__()
        if aggregator_type not in ("mean", "gcn", "pool", "lstm"):
            raise _C.TesseraError(f"SAGEConv: aggregator_type \"{aggregator_type}\" is not "
                                  "supported (mean, gcn, pool, lstm)")
        if isinstance(in_feats, tuple):
            self._in_src_feats, self._in_dst_feats = in_feats
        else:
            self._in_src_feats = self._in_dst_feats = in_feats
        self._out_feats = out_feats
        self._aggre_type = aggregator_type
        self.feat_drop = Dropout(feat_drop)
        self.norm, self.activation = norm, activation
        if aggregator_type == "pool":
            self.fc_pool = nn.Linear(self._in_src_feats, self._in_src_feats)
        if aggregator_type == "lstm":
            self.lstm = nn.LSTM(self._in_src_feats, self._in_src_feats, batch_first=True)
        self.fc_neigh = nn.Linear(self._in_src_feats, out_feats, bias=False)
        # DGL 1.1.3's parameters: "mean" keeps its bias in fc_self (with
        # nn.Linear's initialisation), "gcn" in `bias` (zeros).
        if aggregator_type != "gcn":
            self.fc_self = nn.Linear(self._in_dst_feats, out_feats, bias=bias)
            self.bias = None
        else:
            self.bias = nn.Parameter(torch.zeros(out_feats)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        if self._aggre_type == "pool":
            nn.init.xavier_uniform_(self.fc_pool.weight, gain=gain)
        if self._aggre_type == "lstm":
            self.lstm.reset_parameters()
        if self._aggre_type != "gcn":  # fc_self first, as DGL (same values per seed).
            nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def _lstm_reducer(self, nodes):
        m = nodes.mailbox["m"]  # [nodes, degree, in]
        zeros = m.new_zeros((1, m.shape[0], self._in_src_feats))
        _, (rst, _) = self.lstm(m, (zeros, zeros))
        return {"neigh": rst.squeeze(0)}

    def forward(self, graph, feat, edge_weight=None):
        _check_block(graph, "SAGEConv")
        h_src, h_dst = _split_feat(graph, feat, "SAGEConv")
        _check_rows(graph, h_src, self._in_src_feats, "SAGEConv")
        h_src, h_dst = _feat_drop(graph, feat, h_src, h_dst, self.feat_drop)
        edge_weight = _edge_weight(graph, edge_weight, h_src.dtype, "SAGEConv")
        if self._aggre_type == "mean":
            if self._in_src_feats > self._out_feats:  # Aggregate the narrower side.
                h_neigh = aggregate(graph, _linear(h_src, self.fc_neigh), "mean", edge_weight)
            else:
                h_neigh = _linear(aggregate(graph, h_src, "mean", edge_weight), self.fc_neigh)
            rst = _linear(h_dst, self.fc_self) + h_neigh
        elif self._aggre_type == "gcn":  # (sum of neighbours + self) / (in-degree + 1)
            deg = graph.in_degrees().to(h_src.dtype).unsqueeze(1)
            h = (sum_aggregate(graph, h_src, edge_weight) + h_dst) / (deg + 1)
            rst = self.fc_neigh(h)
        else:
            with graph.local_scope():
                if self._aggre_type == "pool":
                    graph.srcdata["h"] = F.relu(self.fc_pool(h_src))
                    reduce = fn.max("m", "neigh")
                else:
                    graph.srcdata["h"] = h_src
                    reduce = self._lstm_reducer
                    if graph.num_edges() == 0:  # The reducer never runs: DGL's zeros.
                        graph.dstdata["neigh"] = h_dst.new_zeros(h_dst.shape[0],
                                                                 self._in_src_feats)
                msg = fn.copy_u("h", "m")
                if edge_weight is not None:
                    graph.edata["_edge_weight"] = edge_weight
                    msg = fn.u_mul_e("h", "_edge_weight", "m")
                graph.update_all(msg, reduce)
                h_neigh = self.fc_neigh(graph.dstdata["neigh"])
            rst = self.fc_self(h_dst) + h_neigh
        if self.bias is not None:
            rst = rst + self.bias
        if self.activation is not None:
            rst = self.activation(rst)
        if self.norm is not None:
            rst = self.norm(rst)
        return rst


class GraphConv(nn.Module):
    """GCN layer (DGL's GraphConv): norm "both" scales sources by
    out-degree^-1/2 and destinations by in-degree^-1/2 (degrees within the
    block), "right" averages, "left" divides by source out-degree, "none" sums."""

    def __init__(self, in_feats, out_feats, norm="both", weight=True, bias=True,
                 activation=None, allow_zero_in_degree=False):
        super().__init__()
        if norm not in ("none", "both", "right", "left"):
            raise _C.TesseraError(f"GraphConv: norm must be none, both, right or left, got "
                                  f"\"{norm}\"")
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats)) if weight else None
        self.bias = nn.Parameter(torch.zeros(out_feats)) if bias else None
        self._activation = activation
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value):
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, weight=None, edge_weight=None):
        _check_block(graph, "GraphConv")
        h_src, _ = _split_feat(graph, feat, "GraphConv")
        _check_rows(graph, h_src, self._in_feats, "GraphConv")
        in_deg = graph.in_degrees()
        if not self._allow_zero_in_degree and bool((in_deg == 0).any()):
            raise _C.TesseraError("GraphConv: some destination nodes have no in-edges, so "
                                  "their output would be invalid; add self-loops or pass "
                                  "allow_zero_in_degree=True")
        if weight is not None and self.weight is not None:
            raise _C.TesseraError("GraphConv: the layer has its own weight; do not pass one")
        w = weight if weight is not None else self.weight
        if self._norm in ("both", "left"):
            out_deg = graph.out_degrees().to(h_src.dtype).clamp(min=1)
            scale = out_deg.pow(-0.5) if self._norm == "both" else 1.0 / out_deg
            h_src = h_src * scale.view(-1, *([1] * (h_src.dim() - 1)))
        if w is not None and self._in_feats > self._out_feats:
            h_src = (_C.narrow_linear(h_src, w.t()) if h_src.dim() == 2 and w.shape[1] <= 32
                     and h_src.dtype == torch.float32 else h_src @ w)
            w = None
        edge_weight = _edge_weight(graph, edge_weight, h_src.dtype, "GraphConv")
        rst = sum_aggregate(graph, h_src, edge_weight)
        if w is not None:
            rst = rst @ w
        if self._norm in ("both", "right"):
            d = in_deg.to(rst.dtype).clamp(min=1)
            scale = d.pow(-0.5) if self._norm == "both" else 1.0 / d
            rst = rst * scale.view(-1, *([1] * (rst.dim() - 1)))
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return rst


class GATConv(nn.Module):
    """Graph attention (DGL's GATConv): features ``[N, *, in_feats]`` give
    ``[num_dst, *, num_heads, out_feats]`` (the middle dimensions are
    independent, as more heads). ``in_feats`` may be a ``(source,
    destination)`` pair (then ``fc_src`` / ``fc_dst`` instead of ``fc``, as
    DGL); with a ``(src, dst)`` feature pair the destinations' own rows are
    projected, not ``src[:num_dst]``. Parameters as DGL 1.1.3: a residual
    whose widths differ is ``res_fc = Linear(in, heads * out, bias=bias)``
    and then holds the bias (no ``bias``); otherwise the bias is ``bias``."""

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0,
                 negative_slope=0.2, residual=False, activation=None,
                 allow_zero_in_degree=False, bias=True):
        super().__init__()
        if isinstance(in_feats, tuple):
            self._in_src_feats, self._in_dst_feats = in_feats
        else:
            self._in_src_feats = self._in_dst_feats = in_feats
        self._num_heads, self._in_feats, self._out_feats = num_heads, in_feats, out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        width = out_feats * num_heads
        if isinstance(in_feats, tuple):
            self.fc_src = nn.Linear(self._in_src_feats, width, bias=False)
            self.fc_dst = nn.Linear(self._in_dst_feats, width, bias=False)
        else:
            self.fc = nn.Linear(in_feats, width, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.feat_drop = Dropout(feat_drop)
        self.attn_drop = Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.has_linear_res = self.has_explicit_bias = False
        if residual and self._in_dst_feats != width:
            self.res_fc = nn.Linear(self._in_dst_feats, width, bias=bias)
            self.has_linear_res = True
        elif residual:
            self.res_fc = nn.Identity()
        else:
            self.register_buffer("res_fc", None)
        if bias and not self.has_linear_res:
            self.bias = nn.Parameter(torch.zeros(width))
            self.has_explicit_bias = True
        else:
            self.register_buffer("bias", None)
        self.activation = activation
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        for fc in ([self.fc] if hasattr(self, "fc") else [self.fc_src, self.fc_dst]):
            nn.init.xavier_normal_(fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)
            if self.res_fc.bias is not None:
                nn.init.zeros_(self.res_fc.bias)

    def set_allow_zero_in_degree(self, set_value):
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, edge_weight=None, get_attention=False):
        _check_block(graph, "GATConv")
        h_src, h_dst = _split_feat(graph, feat, "GATConv")
        _check_rows(graph, h_src, self._in_src_feats, "GATConv")
        if not self._allow_zero_in_degree and bool((graph.in_degrees() == 0).any()):
            raise _C.TesseraError("GATConv: some destination nodes have no in-edges; add "
                                  "self-loops or pass allow_zero_in_degree=True")
        h_src, h_dst = _feat_drop(graph, feat, h_src, h_dst, self.feat_drop)
        H, Fo = self._num_heads, self._out_feats
        # Features [N, *, in] (DGL's): the middle dimensions ride along as
        # more heads, [N, K = prod(*) * H, out]; views, no copies.
        mid = tuple(h_src.shape[1:-1])
        if tuple(h_dst.shape[1:-1]) != mid:
            raise _C.TesseraError(f"GATConv: source features {tuple(h_src.shape)} and "
                                  f"destination features {tuple(h_dst.shape)} differ in "
                                  "their middle dimensions")
        K = math.prod(mid) * H
        if isinstance(feat, (tuple, list)):
            shared = hasattr(self, "fc")
            fc_src, fc_dst = (self.fc, self.fc) if shared else (self.fc_src, self.fc_dst)
        elif not hasattr(self, "fc"):
            raise _C.TesseraError("GATConv: a layer with (source, destination) in_feats "
                                  "takes a (src, dst) feature pair")
        else:
            fc_src = fc_dst = self.fc
        feat_src = _linear(h_src, fc_src).view(-1, K, Fo)
        # The logits (DGL's (fc(h) * attn).sum(-1), [rows, K]) from the
        # input through fc's weight folded with attn: the destinations'
        # always (a few rows, and no gradient through a slice of feat_src),
        # the sources' unless their input is more than twice as wide as
        # feat_src (reading it again then costs more than the products).
        er = _attention_logits(h_dst, fc_dst, self.attn_r).view(-1, K)
        wide = h_src.shape[-1] > 2 * H * Fo
        el = _attention_logits(h_src, fc_src, self.attn_l, feat_src if wide else None).view(-1, K)
        # Per edge in CSR order (destinations in order): the logits, softmax
        # and the weighted sum run in the CSR kernels.
        indptr, indices, _ = _csr(graph)
        e = self.leaky_relu(_C.u_add_v(indptr, indices, el, er))
        a = self.attn_drop(_C.edge_softmax(indptr, e))  # [E, K], CSR order
        edge_weight = _edge_weight(graph, edge_weight, a.dtype, "GATConv", gat=True)
        if edge_weight is not None:  # DGL: the attention times each edge's weight.
            a = a * _to_csr_order(graph, edge_weight.unsqueeze(1))
        rst = _C.aggregate(indptr, indices, feat_src, "sum", a).view(-1, *mid, H, Fo)
        if self.res_fc is not None:  # With has_linear_res it holds the bias.
            rst = rst + self.res_fc(h_dst).view(h_dst.shape[0], *mid, H, Fo)
        if self.bias is not None:
            rst = rst + self.bias.view(H, Fo)
        if self.activation is not None:
            rst = self.activation(rst)
        if get_attention:
            return rst, _to_edge_order(graph, a).view(-1, *mid, H, 1)
        return rst


def _attention_logits(h, fc, attn, projected=None):
    """``(fc(h).view(-1, H, F) * attn).sum(-1)`` for ``h`` [N, *, in] as
    [N * prod(*), H]: from ``projected`` (``fc(h)``) when given (or fc is
    not an ``nn.Linear``), else in one narrow GEMM with fc's weight [H * F,
    in] folded with ``attn`` [1, H, F] into [H, in] (and its bias into [H])."""
    H, F = attn.shape[1], attn.shape[2]
    if projected is None and not isinstance(fc, nn.Linear):
        projected = fc(h)
    if projected is not None:
        return (projected.reshape(-1, H, F) * attn.view(1, H, F)).sum(-1)
    w = (fc.weight.view(H, F, -1) * attn.view(H, F, 1)).sum(1)
    b = None if fc.bias is None else (fc.bias.view(H, F) * attn.view(H, F)).sum(-1)
    return _C.narrow_linear(h.reshape(-1, h.shape[-1]), w, b)


def _edge_types(types, n, num_types, what, presorted=False):
    """``types`` as an int64 tensor of ``n`` ids in [0, num_types)."""
    t = types if isinstance(types, torch.Tensor) else torch.as_tensor(types)
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise _C.TesseraError(f"{what}: types must be integers, got {t.dtype}")
    t = t.reshape(-1).to(torch.int64)
    if t.numel() != n:
        raise _C.TesseraError(f"{what}: {t.numel()} types for {n} rows")
    if n:
        lo, hi = int(t.min()), int(t.max())
        if lo < 0 or hi >= num_types:
            raise _C.TesseraError(f"{what}: type {lo if lo < 0 else hi} out of range "
                                  f"[0, {num_types})")
        if presorted and bool((t[1:] < t[:-1]).any()):
            raise _C.TesseraError(f"{what}: presorted=True but the types are not sorted")
    return t


class TypedLinear(nn.Module):
    """A linear map chosen by each row's type (DGL's TypedLinear):
    ``y_i = x_i W_{t_i}``. ``regularizer``: None, one ``[in, out]`` weight
    per type (``W`` is ``[num_types, in, out]``); ``"basis"``, ``W_t = sum_b
    coeff[t, b] V_b`` over ``num_bases`` bases (``W`` holds the bases
    ``[num_bases, in, out]``, ``coeff`` is ``[num_types, num_bases]``);
    ``"bdd"``, ``W_t`` block-diagonal with ``num_bases`` blocks of
    ``[in / num_bases, out / num_bases]`` (``W`` is ``[num_types, num_bases *
    in/B * out/B]``). Initialisation as DGL's: U(-1/sqrt(in), 1/sqrt(in)) for
    ``W`` (the block's input width for bdd), Xavier-uniform with ReLU gain
    for ``coeff``."""

    def __init__(self, in_size, out_size, num_types, regularizer=None, num_bases=None):
        super().__init__()
        self.in_size, self.out_size, self.num_types = int(in_size), int(out_size), int(num_types)
        if self.in_size < 1 or self.out_size < 1 or self.num_types < 1:
            raise _C.TesseraError(f"TypedLinear: in_size, out_size and num_types must be >= 1, "
                                  f"got {in_size}, {out_size}, {num_types}")
        if regularizer is not None:
            if regularizer not in ("basis", "bdd"):
                raise _C.TesseraError(f"TypedLinear: regularizer must be None, \"basis\" or "
                                      f"\"bdd\", got {regularizer!r}")
            if num_bases is None or int(num_bases) < 1:
                raise _C.TesseraError(f"TypedLinear: the {regularizer} regularizer needs "
                                      f"num_bases >= 1, got {num_bases}")
            num_bases = int(num_bases)
        self.regularizer, self.num_bases = regularizer, num_bases
        if regularizer is None:
            self.W = nn.Parameter(torch.empty(self.num_types, self.in_size, self.out_size))
        elif regularizer == "basis":
            self.W = nn.Parameter(torch.empty(num_bases, self.in_size, self.out_size))
            self.coeff = nn.Parameter(torch.empty(self.num_types, num_bases))
        else:
            if self.in_size % num_bases or self.out_size % num_bases:
                raise _C.TesseraError(f"TypedLinear: bdd needs in_size ({self.in_size}) and "
                                      f"out_size ({self.out_size}) divisible by num_bases "
                                      f"({num_bases})")
            self.submat_in = self.in_size // num_bases
            self.submat_out = self.out_size // num_bases
            self.W = nn.Parameter(torch.empty(self.num_types,
                                              num_bases * self.submat_in * self.submat_out))
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = self.submat_in if self.regularizer == "bdd" else self.in_size
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            nn.init.uniform_(self.W, -bound, bound)
            if self.regularizer == "basis":
                nn.init.xavier_uniform_(self.coeff, gain=nn.init.calculate_gain("relu"))

    def get_weight(self):
        """The per-type weights: ``[num_types, in, out]`` (bdd: DGL's packed
        ``[num_types, num_bases * in/B * out/B]``)."""
        if self.regularizer == "basis":
            bases = self.W.view(self.num_bases, self.in_size * self.out_size)
            return (self.coeff @ bases).view(self.num_types, self.in_size, self.out_size)
        return self.W

    def type_weights(self):
        """Each type's weight as a dense ``[in, out]`` matrix (bdd: its
        block-diagonal expansion)."""
        w = self.get_weight()
        if self.regularizer != "bdd":
            return list(w.unbind(0))
        return [torch.block_diag(*w[k].view(self.num_bases, self.submat_in, self.submat_out))
                for k in range(self.num_types)]

    def forward(self, x, x_type, sorted_by_type=False):
        if x.dim() != 2 or x.shape[1] != self.in_size:
            raise _C.TesseraError(f"TypedLinear: input {tuple(x.shape)}, expected [N, "
                                  f"{self.in_size}]")
        t = _edge_types(x_type, x.shape[0], self.num_types, "TypedLinear", sorted_by_type)
        return self._typed(x, t, sorted_by_type)

    def _typed(self, x, t, sorted_by_type):
        # Rows grouped by type, one matmul per type (every type's weight takes
        # part even without rows, so DDP sees every parameter used).
        if sorted_by_type:
            order = None
        else:
            t, order = torch.sort(t, stable=True)
            x = x.index_select(0, order)
        counts = torch.bincount(t, minlength=self.num_types).tolist()
        w = self.get_weight()
        parts = []
        for k, rows in enumerate(torch.split(x, counts)):
            if self.regularizer == "bdd":
                blocks = w[k].view(self.num_bases, self.submat_in, self.submat_out)
                y = torch.einsum("nbi,bio->nbo", rows.reshape(-1, self.num_bases, self.submat_in),
                                 blocks).reshape(-1, self.out_size)
            else:
                y = rows @ w[k]
            parts.append(y)
        y = torch.cat(parts)
        if order is None:
            return y
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel(), dtype=order.dtype)
        return y.index_select(0, inverse)

    def __repr__(self):
        extra = "" if self.regularizer is None else (f", regularizer={self.regularizer}, "
                                                     f"num_bases={self.num_bases}")
        return (f"TypedLinear(in_size={self.in_size}, out_size={self.out_size}, "
                f"num_types={self.num_types}{extra})")


class RelGraphConv(nn.Module):
    """Relational graph convolution (DGL's RelGraphConv, Schlichtkrull et al.):

        h_i' = act(LN(sum_r sum_{j in N_r(i)} e_ji W_r h_j) + b + W_0 h_i)

    then dropout, over a block whose edges carry relation ids ``etypes``
    (``[E]`` in [0, num_rels)); ``e_ji`` is ``norm`` (``[E, 1]`` or ``[E]``;
    1 without it), e.g. ``norm_by_dst`` or ``rel_norm``. ``W_r`` comes from
    ``linear_r``, a ``TypedLinear`` with ``regularizer`` None / "basis" /
    "bdd" (num_bases defaults to num_rels when regularised). The self loop
    ``W_0`` (``loop_weight``, Xavier-uniform with ReLU gain) reads the
    destinations' own rows ``feat[:num_dst]``; ``h_bias`` starts at zero.
    Parameter names and the order of layer norm, bias, self loop,
    activation and dropout are DGL's. The messages of one destination and
    relation are summed before ``W_r`` is applied (one matmul per
    (destination, relation) pair of the block rather than per edge: DGL's
    result up to float rounding, with fewer flops). Over a typed ``Block``
    the relations are the block's and the features per node type (see
    ``forward``)."""

    def __init__(self, in_feat, out_feat, num_rels, regularizer=None, num_bases=None, bias=True,
                 activation=None, self_loop=True, dropout=0.0, layer_norm=False):
        super().__init__()
        if regularizer is not None and num_bases is None:
            num_bases = num_rels
        self.in_feat, self.out_feat, self.num_rels = int(in_feat), int(out_feat), int(num_rels)
        self.linear_r = TypedLinear(in_feat, out_feat, num_rels, regularizer, num_bases)
        self.bias, self.activation = bias, activation
        self.self_loop, self.layer_norm = self_loop, layer_norm
        if self.bias:
            self.h_bias = nn.Parameter(torch.zeros(out_feat))
        if self.layer_norm:
            self.layer_norm_weight = nn.LayerNorm(out_feat, elementwise_affine=True)
        if self.self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = Dropout(dropout)

    def forward(self, g, feat, etypes=None, norm=None, *, presorted=False):
        """A ``Block``: ``feat`` its source rows ``[num_src, in_feat]``
        (destinations first), ``etypes`` the relation of every edge, ``norm``
        one value per edge; returns ``[num_dst, out_feat]``. ``presorted``
        says the edges are in relation order: a speed hint in DGL, here only
        checked (the layer groups the messages itself).

        A typed ``Block``: ``feat`` is ``{ntype: source rows}`` (a type
        without source nodes may be left out), relation r of the layer is
        ``g.canonical_etypes[r]`` (pass no ``etypes``), ``norm`` is
        ``"right"`` (the default: 1 / the destination's in-edges of the
        relation, so each relation's messages are averaged, as DGL's
        heterograph R-GCN examples' ``GraphConv(norm="right")`` per
        relation), ``"none"`` (sums) or ``{relation: [E_r] or [E_r, 1]}``
        edge values in the relation's edge order. Returns ``{ntype:
        [num_dst_nodes(ntype), out_feat]}`` for every node type (a type that
        no relation reaches gets bias and self loop only). The result is the
        homogeneous one on the same edges with those relation ids and norms."""
        if _is_typed(g):
            return self._forward_hetero(g, feat, etypes, norm)
        _check_block(g, "RelGraphConv")
        if isinstance(feat, (tuple, list, dict)):
            raise _C.TesseraError("RelGraphConv: feat is one tensor of source rows "
                                  "(destinations first), not a pair or a dict")
        if etypes is None:
            raise _C.TesseraError("RelGraphConv: a Block needs etypes, the relation id of "
                                  "every edge")
        _check_rows(g, feat, self.in_feat, "RelGraphConv")
        num_edges = g.num_edges()
        t = _edge_types(etypes, num_edges, self.num_rels, "RelGraphConv etypes", presorted)
        if norm is not None:
            norm = _edge_norm(norm, num_edges, "RelGraphConv").to(feat.dtype)
        h = self._relational(feat, g.indices, g.edge_dst, t, g.num_dst_nodes(), norm)
        return self._finish(h, feat[:g.num_dst_nodes()])

    def _forward_hetero(self, g, feat, etypes, norm):
        if etypes is not None:
            raise _C.TesseraError("RelGraphConv: on a typed Block relation r is "
                                  "g.canonical_etypes[r]; pass no etypes (norm by keyword)")
        rels = list(g.canonical_etypes)
        if len(rels) != self.num_rels:
            raise _C.TesseraError(f"RelGraphConv: a block of {len(rels)} relations, the "
                                  f"layer has {self.num_rels}")
        h = _type_rows(g, feat, self.in_feat, "RelGraphConv")
        norms = _relation_norms(g, norm, "RelGraphConv")
        # Relation by relation, as DGL's HeteroGraphConv of GraphConv: the
        # relation's messages reduced over its CSR (its mean for "right",
        # else weighted sums), through W_r before or after, whichever side
        # is narrower; summed per destination type. 1.4x faster than
        # regrouping every edge by (relation, destination) on mag-shaped
        # blocks (bench/message_passing.py), the same result.
        weights = self.linear_r.type_weights()
        out = {}
        for r, c in enumerate(rels):
            rel = g._rel[c]
            w = None
            if norms is not None and not isinstance(norms, str):
                w = _to_csr_order(rel, norms[r].to(h[c[0]].dtype).reshape(-1))
            reduce = "mean" if isinstance(norms, str) else "sum"
            if self.in_feat > self.out_feat:
                agg = _C.aggregate(rel.indptr, rel.csr_indices, h[c[0]] @ weights[r], reduce, w)
            else:
                agg = _C.aggregate(rel.indptr, rel.csr_indices, h[c[0]], reduce, w) @ weights[r]
            out[c[2]] = agg if c[2] not in out else out[c[2]] + agg
        result = {}
        for t in g.dsttypes:
            n = g.num_dst_nodes(t)
            rows = out.get(t, h[t].new_zeros((n, self.out_feat)))
            result[t] = self._finish(rows, h[t][:n])
        return result

    def _relational(self, x, src, dst, t, num_dst, norm):
        """sum over edges e = (s -> d) of relation t_e of norm_e x[s] W_t:
        the messages of one (relation, destination) pair summed first, then
        one GEMM per relation over its pairs, then the pairs summed into
        their destinations (tessera's CSR kernels; DGL's result up to float
        rounding, with fewer flops than one product per edge)."""
        groups = _C.group_by_relation(src, dst, t, x.shape[0], num_dst, self.num_rels)
        return _C.relation_aggregate(groups, x, self.linear_r.type_weights(), norm)

    def _finish(self, h, h_dst):
        """Layer norm, bias, self loop (over the destinations' rows h_dst),
        activation and dropout, in DGL's order."""
        if self.layer_norm:
            h = self.layer_norm_weight(h)
        if self.bias:
            h = h + self.h_bias
        if self.self_loop:
            h = h + h_dst @ self.loop_weight
        if self.activation:
            h = self.activation(h)
        return self.dropout(h)


def _edge_norm(norm, num_edges, what):
    """``norm`` (``[E]`` or ``[E, 1]``) as ``[E, 1]``."""
    norm = norm if isinstance(norm, torch.Tensor) else torch.as_tensor(norm)
    if norm.dim() not in (1, 2) or norm.shape[0] != num_edges or (
            norm.dim() == 2 and norm.shape[1] != 1):
        raise _C.TesseraError(f"{what}: norm {tuple(norm.shape)}, expected "
                              f"[{num_edges}, 1] (one value per edge)")
    return norm.reshape(-1, 1)


def _type_rows(g, feat, in_feats, what):
    """{ntype: source rows} of a typed Block, checked; every node type
    present (an empty tensor for a left-out type without source nodes)."""
    if not isinstance(feat, dict):
        raise _C.TesseraError(f"{what}: on a typed Block feat is {{ntype: source rows}}, got "
                              f"{type(feat).__name__}")
    unknown = [t for t in feat if t not in g.srctypes]
    if unknown:
        raise _C.TesseraError(f"{what}: unknown node types {unknown}; the block has "
                              f"{g.srctypes}")
    ref = next(iter(feat.values()), torch.empty(0))
    out = {}
    for t in g.srctypes:
        n, x = g.num_src_nodes(t), feat.get(t)
        if x is None:
            if n:
                raise _C.TesseraError(f"{what}: no features for node type {t!r} ({n} source "
                                      "nodes)")
            x = ref.new_zeros((0, in_feats))
        elif x.dim() != 2 or x.shape[0] != n or x.shape[1] != in_feats:
            raise _C.TesseraError(f"{what}: features {tuple(x.shape)} of node type {t!r}, "
                                  f"expected [{n}, {in_feats}]")
        out[t] = x
    return out


def _canonical(g, etype, what):
    """The canonical triple of relation ``etype`` (a name, a triple or
    "src:rel:dst") of a typed Block."""
    try:
        return g.to_canonical_etype(etype)
    except _C.TesseraError as e:
        raise _C.TesseraError(f"{what}: {e}") from None


def _relation_norms(g, norm, what):
    """Per relation of a typed Block its edges' ``[E_r, 1]`` norms, None (no
    norm: sums) or "right" (each relation's mean)."""
    rels = [tuple(c) for c in g.canonical_etypes]
    if norm is None or (isinstance(norm, str) and norm == "right"):
        return "right"  # Each relation's mean (1 / the destination's in-edges of it).
    if isinstance(norm, str) and norm == "none":
        return None
    if not isinstance(norm, dict):
        raise _C.TesseraError(f"{what}: norm on a typed Block is \"right\", \"none\" or "
                              f"{{relation: per-edge values}}, got {norm!r}")
    given = {}
    for k, v in norm.items():
        c = _canonical(g, k, what)
        if c in given:
            raise _C.TesseraError(f"{what}: norm names relation {c} twice")
        given[c] = v
    out = []
    for c in rels:
        n = g.num_edges(c)
        if c not in given and n:
            raise _C.TesseraError(f"{what}: norm has no values for relation {c} ({n} edges)")
        out.append(_edge_norm(given[c], n, f"{what} {c}") if c in given
                   else torch.empty((0, 1)))
    return out


def norm_by_dst(block):
    """``1 / in-degree`` of each edge's destination over all relations, ``[E]``
    (``dgl.norm_by_dst`` of a block; what DGL's distributed R-GCN example
    and its sampled entity classification pass, unsqueezed, as ``norm``)."""
    _check_block(block, "norm_by_dst")
    deg = block.in_degrees().to(torch.float32).clamp(min=1)
    return 1.0 / deg.index_select(0, block.edge_dst)


def rel_norm(block, etypes):
    """``1 / c_{i,r}``, ``[E, 1]``: one over the number of the destination's
    in-edges of the edge's relation in the block (the R-GCN paper's norm,
    and DGL's full-graph entity classification, ``dgl.norm_by_dst(g,
    etype)`` per relation). With it each relation's messages are averaged."""
    _check_block(block, "rel_norm")
    n = block.num_edges()
    t = _edge_types(etypes, n, 2**62, "rel_norm etypes")
    if n == 0:
        return torch.empty((0, 1))
    # The (dst, relation) pairs keyed as dst * m + t, unless that could wrap
    # int64 (huge relation ids) and merge pairs: then as rows (slower).
    m = int(t.max()) + 1
    pairs, dim = ((block.edge_dst * m + t, None) if block.num_dst_nodes() * m < 2**63
                  else (torch.stack([block.edge_dst, t], 1), 0))
    _, inverse, counts = torch.unique(pairs, dim=dim, return_inverse=True, return_counts=True)
    return (1.0 / counts.index_select(0, inverse).to(torch.float32)).unsqueeze(1)


def block_etypes(g, block):
    """The relation id of each edge of a (homogeneous-id) block of ``g``:
    ``g.get_partition_book().map_to_per_etype(block.edata[EID])[0]``."""
    return g.get_partition_book().map_to_per_etype(block.edata[EID])[0]


class RGCN(nn.Module):
    """The R-GCN of DGL's distributed entity classification (its
    ``EntityClassify``): ``RelGraphConv(h_dim, h_dim)`` with ReLU and dropout
    (and layer norm if asked), ``num_hidden_layers`` more of them, then
    ``RelGraphConv(h_dim, out_dim)`` without activation or dropout; every
    layer with ``regularizer`` ("basis" as DGL) and ``num_bases`` (None or
    < 0: num_rels). ``forward(blocks, feats, etypes, norms=None)`` runs layer
    l over ``blocks[l]`` with relation ids ``etypes[l]`` and ``norms[l]``;
    ``feats`` are the first block's source rows. Over typed ``Block``s:
    ``forward(blocks, {ntype: rows})`` without etypes (``norms[l]`` as
    RelGraphConv's hetero ``norm``; default "right") returns ``{ntype: rows}``."""

    def __init__(self, h_dim, out_dim, num_rels, num_bases=None, num_hidden_layers=1, dropout=0.0,
                 use_self_loop=False, layer_norm=False, regularizer="basis"):
        super().__init__()
        if num_bases is not None and num_bases < 0:
            num_bases = None
        self.h_dim, self.out_dim, self.num_rels = h_dim, out_dim, num_rels
        self.num_bases, self.num_hidden_layers = num_bases, num_hidden_layers
        hidden = dict(regularizer=regularizer, num_bases=num_bases, activation=F.relu,
                      self_loop=use_self_loop, dropout=dropout, layer_norm=layer_norm)
        self.layers = nn.ModuleList(
            [RelGraphConv(h_dim, h_dim, num_rels, **hidden) for _ in range(1 + num_hidden_layers)])
        self.layers.append(RelGraphConv(h_dim, out_dim, num_rels, regularizer, num_bases,
                                        activation=None, self_loop=use_self_loop))

    def forward(self, blocks, feats, etypes=None, norms=None):
        n = len(self.layers)
        hetero = len(blocks) > 0 and _is_typed(blocks[0])
        if len(blocks) != n or (etypes is None and not hetero) or (
                etypes is not None and len(etypes) != n) or (
                norms is not None and len(norms) != n):
            raise _C.TesseraError(f"RGCN: {n} layers, got {len(blocks)} blocks, " +
                                  ("no etypes" if etypes is None else f"{len(etypes)} etypes") +
                                  ("" if norms is None else f", {len(norms)} norms"))
        h = feats
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h, None if etypes is None else etypes[i],
                      None if norms is None else norms[i])
        return h


class WeightBasis(nn.Module):
    """Basis decomposition (DGL's WeightBasis): ``num_outputs`` weights of
    ``shape``, each a learned combination ``w_comp`` of ``num_bases`` bases
    ``weight`` (Xavier-uniform with ReLU gain, as DGL). ``forward()``
    returns ``[num_outputs, *shape]``."""

    def __init__(self, shape, num_bases, num_outputs):
        super().__init__()
        self.shape, self.num_bases, self.num_outputs = tuple(shape), int(num_bases), int(
            num_outputs)
        if self.num_bases < 1 or self.num_outputs < 1:
            raise _C.TesseraError(f"WeightBasis: num_bases and num_outputs must be >= 1, got "
                                  f"{num_bases}, {num_outputs}")
        self.weight = nn.Parameter(torch.empty(self.num_bases, *self.shape))
        nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.w_comp = nn.Parameter(torch.empty(self.num_outputs, self.num_bases))
        nn.init.xavier_uniform_(self.w_comp, gain=nn.init.calculate_gain("relu"))

    def forward(self):
        weight = self.w_comp @ self.weight.view(self.num_bases, -1)
        return weight.view(self.num_outputs, *self.shape)


class RelationBlock(Block):
    """One relation of a typed ``Block`` as a block of one relation
    (``block[etype]``, sharing its frames), what ``HeteroGraphConv`` gives
    each module: ``num_src_nodes()`` / ``num_dst_nodes()`` of the relation's
    source / destination type, ``srcdata[NID]`` / ``dstdata[NID]`` their
    per-type ids, ``edata[EID]`` the relation's edge ids. ``edges()``,
    ``indices`` and ``edge_dst`` keep the relation's edge order (that of
    per-edge arguments such as ``edge_weight``); ``indptr`` with
    ``csr_indices`` is the CSR over destinations, ``csr_perm`` the edge at
    each CSR position (None when the relation's edges are already in
    destination order). Destinations are not a prefix of the sources here:
    pass modules a ``(src, dst)`` feature pair."""

    def __init__(self, block, etype):
        c = _canonical(block, etype, "RelationBlock")
        self.__dict__.update(block[c].__dict__)
        self.canonical_etype, self.srctype, self.dsttype = c, c[0], c[2]

    def __repr__(self):
        return (f"RelationBlock({self.canonical_etype}, num_src_nodes={self.num_src_nodes()}, "
                f"num_dst_nodes={self.num_dst_nodes()}, num_edges={self.num_edges()})")


def _stack_aggregate(tensors, dsttype):
    return torch.stack(tensors, dim=1)


def _aggregate_fn(agg):
    reduce = {"sum": torch.sum, "mean": torch.mean,
              "max": lambda x, dim: torch.max(x, dim=dim)[0],
              "min": lambda x, dim: torch.min(x, dim=dim)[0]}
    if agg == "stack":
        return _stack_aggregate
    if agg not in reduce:
        raise _C.TesseraError(f"HeteroGraphConv: aggregate must be \"sum\", \"max\", "
                              f"\"min\", \"mean\", \"stack\" or a callable, got {agg!r}")
    fn = reduce[agg]
    return lambda tensors, dsttype: fn(torch.stack(tensors, dim=0), dim=0)


class HeteroGraphConv(nn.Module):
    """DGL's HeteroGraphConv: one module per relation (``mods`` keyed by
    relation name or canonical triple; a triple's module wins), each called
    as ``mod(RelationBlock(g, relation), (src rows of its source type, dst
    rows of its destination type), *mod_args[rel], **mod_kwargs[rel])``
    (``mod_args`` / ``mod_kwargs`` keyed by relation name as DGL, or by
    triple), then each destination type's results combined by ``aggregate``:
    "sum", "max", "min", "mean" (element-wise over relations), "stack"
    (``[N, num_relations, ...]``, relations in ``g.canonical_etypes`` order)
    or ``f(tensors, dsttype)``. A relation is skipped when its source or
    destination type has no input; a relation without edges is still
    computed (DGL since 0.7.2: SAGEConv then gives its self term, GraphConv
    its bias). Modules with ``set_allow_zero_in_degree`` get it set to True.
    ``forward(g, inputs)`` on a typed ``Block``: ``inputs`` is ``{ntype:
    source rows}`` (destinations: the first ``num_dst_nodes(ntype)`` rows)
    or a ``(src dict, dst dict)`` pair; returns ``{dst ntype: tensor}`` for
    the types some relation reached."""

    def __init__(self, mods, aggregate="sum"):
        super().__init__()
        self.mod_dict = dict(mods)
        self.mods = nn.ModuleDict({str(k): v for k, v in mods.items()})
        for mod in self.mods.values():
            allow = getattr(mod, "set_allow_zero_in_degree", None)
            if callable(allow):
                allow(True)
        if isinstance(aggregate, str):
            self.agg_fn = _aggregate_fn(aggregate)
        elif callable(aggregate):
            self.agg_fn = aggregate
        else:
            raise _C.TesseraError(f"HeteroGraphConv: aggregate must be a name or a callable, "
                                  f"got {aggregate!r}")

    def _get_module(self, c):
        for key in (c, c[1]):
            if key in self.mod_dict:
                return self.mod_dict[key]
        raise KeyError(f"Cannot find module with edge type {c}")

    def forward(self, g, inputs, mod_args=None, mod_kwargs=None):
        if (not hasattr(g, "canonical_etypes") or not hasattr(g, "num_dst_nodes")
                or list(g.canonical_etypes) == [("_N", "_E", "_N")]):
            raise _C.TesseraError(f"HeteroGraphConv: expected a typed graph or block (named "
                                  f"relations, such as a loader's blocks with dict seeds), "
                                  f"got {g!r}")
        mod_args, mod_kwargs = mod_args or {}, mod_kwargs or {}
        if isinstance(inputs, tuple):
            src_inputs, dst_inputs = inputs
        elif g.is_block:
            src_inputs = inputs
            dst_inputs = {t: x[:g.num_dst_nodes(t)] for t, x in inputs.items()}
        else:  # A graph's nodes are both (DGL's; a uni-bipartite graph's types are one or other).
            src_inputs = dst_inputs = inputs
        outputs = {t: [] for t in g.dsttypes}
        for c in (tuple(c) for c in g.canonical_etypes):
            if c[0] not in src_inputs or c[2] not in dst_inputs:
                continue
            # A block's destination type without destination nodes gets no
            # output: DGL's distributed loaders build blocks only of the
            # relations that have sampled edges, so DGL's R-GCN example
            # expects only the seeds' types out of its last layer.
            if g.is_block and g.num_dst_nodes(c[2]) == 0:
                continue
            args = mod_args.get(c, mod_args.get(c[1], ()))
            kwargs = mod_kwargs.get(c, mod_kwargs.get(c[1], {}))
            outputs[c[2]].append(self._get_module(c)(
                RelationBlock(g, c), (src_inputs[c[0]], dst_inputs[c[2]]), *args, **kwargs))
        return {t: self.agg_fn(out, t) for t, out in outputs.items() if out}


__all__ = ["SAGEConv", "GraphConv", "GATConv", "RelGraphConv", "TypedLinear", "RGCN",
           "WeightBasis", "HeteroGraphConv", "RelationBlock", "mean_aggregate", "sum_aggregate",
           "edge_softmax", "norm_by_dst", "rel_norm", "block_etypes", "functional"]


def __getattr__(name):
    return _submodule(__name__, name)
