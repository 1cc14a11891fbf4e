"""GNN layers on blocks (dgl.nn.pytorch's SAGEConv, GraphConv, GATConv), as
ordinary ``torch.nn.Module``s with DGL's constructor arguments and
parameter initialisation. ``forward(block, feat)`` takes the block's source
features (or a ``(src, dst)`` pair) and returns one row per destination.
The mean aggregation runs in tessera's C++ kernel; autograd flows through
every layer.
"""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from tessera import _C


def _check_block(graph, what):
    if not hasattr(graph, "indptr") or not hasattr(graph, "indices"):
        raise _C.TesseraError(f"{what}: expected a Block (a loader's blocks), got "
                              f"{type(graph).__name__}")


def _split_feat(graph, feat):
    if isinstance(feat, (tuple, list)):
        return feat[0], feat[1]
    return feat, feat[:graph.num_dst_nodes()]


def _check_rows(graph, h_src, in_feats, what):
    if h_src.dim() < 2 or h_src.shape[0] != graph.num_src_nodes():
        raise _C.TesseraError(f"{what}: {tuple(h_src.shape)} source rows for a block of "
                              f"{graph.num_src_nodes()} sources")
    if in_feats is not None and h_src.shape[-1] != in_feats:
        raise _C.TesseraError(f"{what}: input has {h_src.shape[-1]} features, the layer "
                              f"expects {in_feats}")


def mean_aggregate(block, h_src):
    """out[d] = mean of h_src[s] over the block's edges s -> d (0 without edges)."""
    return _C.mean_aggregate(block.indptr, block.indices, h_src)


def sum_aggregate(block, h_src):
    """out[d] = sum of h_src[s] over the block's edges s -> d."""
    out = h_src.new_zeros((block.num_dst_nodes(),) + tuple(h_src.shape[1:]))
    return out.index_add(0, block.edge_dst, h_src.index_select(0, block.indices))


class SAGEConv(nn.Module):
    """GraphSAGE (DGL's SAGEConv; aggregator "mean" or "gcn"):
    h_dst' = W_self h_dst + W_neigh mean(h_src) + b."""

    def __init__(self, in_feats, out_feats, aggregator_type="mean", feat_drop=0.0, bias=True,
                 norm=None, activation=None):
        super().__init__()
        if aggregator_type not in ("mean", "gcn"):
            raise _C.TesseraError(f"SAGEConv: aggregator_type \"{aggregator_type}\" is not "
                                  "supported (mean, gcn)")
        if isinstance(in_feats, tuple):
            self._in_src_feats, self._in_dst_feats = in_feats
        else:
            self._in_src_feats = self._in_dst_feats = in_feats
        self._out_feats = out_feats
        self._aggre_type = aggregator_type
        self.feat_drop = nn.Dropout(feat_drop)
        self.norm, self.activation = norm, activation
        self.fc_neigh = nn.Linear(self._in_src_feats, out_feats, bias=False)
        if aggregator_type != "gcn":
            self.fc_self = nn.Linear(self._in_dst_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)
        if self._aggre_type != "gcn":
            nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, graph, feat):
        _check_block(graph, "SAGEConv")
        h_src, h_dst = _split_feat(graph, feat)
        _check_rows(graph, h_src, self._in_src_feats, "SAGEConv")
        if self.feat_drop.p > 0:
            h_src, h_dst = self.feat_drop(h_src), self.feat_drop(h_dst)
        if self._aggre_type == "mean":
            if self._in_src_feats > self._out_feats:  # Aggregate the narrower side.
                h_neigh = mean_aggregate(graph, self.fc_neigh(h_src))
            else:
                h_neigh = self.fc_neigh(mean_aggregate(graph, h_src))
            rst = self.fc_self(h_dst) + h_neigh
        else:  # gcn: (sum of neighbours + self) / (in-degree + 1)
            deg = graph.in_degrees().to(h_src.dtype).unsqueeze(1)
            h = (sum_aggregate(graph, h_src) + h_dst) / (deg + 1)
            rst = self.fc_neigh(h)
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

    def forward(self, graph, feat, weight=None, edge_weight=None):
        _check_block(graph, "GraphConv")
        h_src, _ = _split_feat(graph, feat)
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
            h_src = h_src @ w
            w = None
        if edge_weight is not None:
            msg = h_src.index_select(0, graph.indices) * edge_weight.view(-1, 1)
            rst = h_src.new_zeros((graph.num_dst_nodes(),) + tuple(h_src.shape[1:]))
            rst = rst.index_add(0, graph.edge_dst, msg)
        else:
            rst = sum_aggregate(graph, h_src)
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


def edge_softmax(block, scores):
    """Softmax of per-edge scores [E, H] over each destination's in-edges."""
    dst = block.edge_dst
    heads = scores.shape[1:]
    index = dst.view(-1, *([1] * len(heads))).expand_as(scores)
    fill = torch.full((block.num_dst_nodes(),) + tuple(heads), float("-inf"),
                      dtype=scores.dtype)
    with warnings.catch_warnings():  # torch 1.13 calls scatter_reduce "beta".
        warnings.simplefilter("ignore", UserWarning)
        peak = fill.scatter_reduce(0, index, scores.detach(), reduce="amax", include_self=True)
    e = torch.exp(scores - peak.index_select(0, dst))
    total = scores.new_zeros(fill.shape).index_add(0, dst, e)
    return e / total.index_select(0, dst)


class GATConv(nn.Module):
    """Graph attention (DGL's GATConv): returns [num_dst, num_heads, out_feats]."""

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0,
                 negative_slope=0.2, residual=False, activation=None,
                 allow_zero_in_degree=False, bias=True):
        super().__init__()
        if isinstance(in_feats, tuple):
            raise _C.TesseraError("GATConv: pass one in_feats (shared source/destination)")
        self._num_heads, self._in_feats, self._out_feats = num_heads, in_feats, out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self.fc = nn.Linear(in_feats, out_feats * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.feat_drop = nn.Dropout(feat_drop)
        self.attn_drop = nn.Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.bias = nn.Parameter(torch.zeros(num_heads * out_feats)) if bias else None
        if residual:
            self.res_fc = (nn.Identity() if in_feats == num_heads * out_feats
                           else nn.Linear(in_feats, num_heads * out_feats, bias=False))
        else:
            self.res_fc = None
        self.activation = activation
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)

    def forward(self, graph, feat, get_attention=False):
        _check_block(graph, "GATConv")
        h_src, h_dst = _split_feat(graph, feat)
        _check_rows(graph, h_src, self._in_feats, "GATConv")
        if not self._allow_zero_in_degree and bool((graph.in_degrees() == 0).any()):
            raise _C.TesseraError("GATConv: some destination nodes have no in-edges; add "
                                  "self-loops or pass allow_zero_in_degree=True")
        h_src, h_dst = self.feat_drop(h_src), self.feat_drop(h_dst)
        H, Fo = self._num_heads, self._out_feats
        feat_src = self.fc(h_src).view(-1, H, Fo)
        feat_dst = feat_src[:graph.num_dst_nodes()]
        el = (feat_src * self.attn_l).sum(-1)  # [src, H]
        er = (feat_dst * self.attn_r).sum(-1)  # [dst, H]
        e = self.leaky_relu(el.index_select(0, graph.indices) + er.index_select(0, graph.edge_dst))
        a = self.attn_drop(edge_softmax(graph, e))  # [E, H]
        msg = feat_src.index_select(0, graph.indices) * a.unsqueeze(-1)
        rst = feat_src.new_zeros((graph.num_dst_nodes(), H, Fo)).index_add(0, graph.edge_dst, msg)
        if self.res_fc is not None:
            rst = rst + self.res_fc(h_dst).view(h_dst.shape[0], H, Fo)
        if self.bias is not None:
            rst = rst + self.bias.view(1, H, Fo)
        if self.activation is not None:
            rst = self.activation(rst)
        return (rst, a) if get_attention else rst


__all__ = ["SAGEConv", "GraphConv", "GATConv", "mean_aggregate", "sum_aggregate",
           "edge_softmax"]
