"""DGL's ``dgl.sampling.sample_neighbors`` and ``dgl.sampling.select_topk``
(python/dgl/sampling/neighbor.py of DGL 1.1.3) on in-memory graphs.

Both give a graph with every node of ``g`` (its node data with
``copy_ndata``) and the chosen edges of each relation, grouped by seed in
the order the seeds are given (a repeated seed is sampled again), with
``edata[EID]`` their ids in ``g`` and ``g``'s edge data (``copy_edata``;
without it no edge data, not even ``EID``, as DGL). Draws use torch's
generator (``torch.manual_seed``): the distribution is DGL's, the draws
are not. On a ``DistGraph``, use ``tessera.distributed.sample_neighbors``.
"""
import math
from collections.abc import Mapping

import torch

from tessera import _C, EID
from tessera.heterograph import Graph, _Relation, _nodes_of
from tessera._utils import as_ids

_PROB_DTYPES = (torch.float32, torch.float64, torch.bool, torch.int8, torch.uint8)
_WEIGHT_DTYPES = (torch.int32, torch.int64, torch.float32, torch.float64)


def _check_graph(g, what):
    if not isinstance(g, Graph):
        from tessera import distributed
        if what == "sample_neighbors" and isinstance(g, getattr(distributed, "DistGraph", ())):
            raise _C.TesseraError("sample_neighbors: g is a DistGraph; use "
                                  "tessera.distributed.sample_neighbors")
        raise _C.TesseraError(f"{what}: expected a graph, got {type(g).__name__}")
    if g.is_block:
        raise _C.TesseraError(f"{what}: expected a graph, got a block")


def _seeds(g, nodes, what):
    """{ntype: int64 seeds} of ``nodes`` (ids on a one-type graph, or a dict)."""
    if not isinstance(nodes, Mapping):
        if len(g.ntypes) > 1:
            raise _C.TesseraError("Must specify node type when the graph is not homogeneous.")
        nodes = {g.ntypes[0]: nodes}
    if len(nodes) == 0:
        raise ValueError("Got an empty dictionary in the nodes argument. "
                         "Please pass in a dictionary with empty tensors as values instead.")
    out = {}
    for t, ids in nodes.items():
        if t not in g.ntypes:
            raise _C.TesseraError(f"{what}: unknown node type {t!r}; the graph has {g.ntypes}")
        out[t] = _nodes_of(ids, g.num_nodes(t), t, f'{what} nodes["{t}"]')[0]
    return out


def _per_relation(g, value, name, what):
    """An int for every relation, or ``{etype: int}`` naming each of them."""
    if not isinstance(value, Mapping):
        return {c: int(value) for c in g.canonical_etypes}
    if len(value) != len(g.canonical_etypes):
        raise _C.TesseraError(f"{name} must be specified for each edge type if a dict is "
                              f"provided.")
    out = {g.to_canonical_etype(k): int(v) for k, v in value.items()}
    if len(out) != len(g.canonical_etypes):
        raise _C.TesseraError(f"{what}: {name} names a relation twice")
    return out


def _edge_dir(edge_dir):
    if edge_dir not in ("in", "out"):
        raise _C.TesseraError(f'Invalid edge direction {edge_dir!r}. Must be "in" or "out".')
    return edge_dir == "out"


def _result(g, eids, copy_ndata, copy_edata):
    """The graph of all of g's nodes and its edges ``eids`` ({relation: ids})."""
    rels = [_Relation(g._rel[c].num_src, g._rel[c].num_dst,
                      g._rel[c].src.index_select(0, eids[c]),
                      dst=g._rel[c].dst.index_select(0, eids[c])) for c in g.canonical_etypes]
    out = Graph({t: f.num_rows for t, f in g._nodef.items()}, g.canonical_etypes, rels)
    if copy_ndata:
        for t, f in g._nodef.items():
            out._nodef[t].data.update(f.data)
    if copy_edata:
        for c in g.canonical_etypes:
            out._ef[c].data.update(g._ef[c].subframe(eids[c], "").data)
            out._ef[c].data[EID] = eids[c]
    return out


def _rank_in_group(group, num_groups):
    """For entries sorted by ``group``, each one's position within its group."""
    count = torch.bincount(group, minlength=num_groups)
    start = torch.cumsum(count, 0) - count
    return torch.arange(group.numel(), dtype=torch.int64) - start.index_select(0, group)


def _sort_within(group, key, num_groups, descending=False):
    """The order that sorts entries by ``group`` (stable), then ``key``
    (stable: ties keep their order), and the rank of each sorted entry in
    its group."""
    order = torch.sort(key, stable=True, descending=descending).indices
    order = order.index_select(0, torch.sort(group.index_select(0, order), stable=True).indices)
    return order, _rank_in_group(group.index_select(0, order), num_groups)


def _edge_weights(g, c, name, what):
    w = g._ef[c].data[name]
    if w.dim() > 1 and math.prod(w.shape[1:]) != 1:
        raise _C.TesseraError(f"{what}: edge data {name!r} of relation {c} must have one "
                              f"value per edge, got shape {tuple(w.shape)}")
    return w.reshape(-1)


def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, replace=False,
                     copy_ndata=True, copy_edata=True, exclude_edges=None,
                     output_device=None):
    """DGL's ``dgl.sampling.sample_neighbors`` on an in-memory graph: for
    each seed of ``nodes`` (ids, or ``{ntype: ids}``), in each relation
    ending at its type (starting, ``edge_dir="out"``), ``fanout`` of its
    in-edges (out-edges) drawn at random: all of them when there are no
    more than ``fanout`` (-1: always all, in edge id order), else
    ``fanout`` distinct ones; with ``replace``, ``fanout`` draws with
    replacement (none for a seed without edges). ``fanout`` may be
    ``{etype: int}`` naming every relation. ``prob`` names edge data (one
    float or bool per edge; relations without it are uniform): edges are
    drawn proportionally to it (without replacement: successive draws
    among the edges left, as DGL's), and a zero-weight edge never.
    ``exclude_edges`` (ids, or ``{etype: ids}``) are never drawn."""
    _check_graph(g, "sample_neighbors")
    out_dir = _edge_dir(edge_dir)
    seeds = _seeds(g, nodes, "sample_neighbors")
    fanouts = _per_relation(g, fanout, "Fan-out", "sample_neighbors")
    for c, k in fanouts.items():
        if k < -1:
            raise ValueError(f"sample_neighbors: fanout of {c} is {k}; it must be -1 (all "
                             f"edges) or at least 0")
    excluded = {}
    if exclude_edges is not None:
        if not isinstance(exclude_edges, Mapping):
            if len(g.canonical_etypes) > 1:
                raise _C.TesseraError("Must specify etype when the graph is not homogeneous.")
            exclude_edges = {g.canonical_etypes[0]: exclude_edges}
        for k, ids in exclude_edges.items():
            c = g.to_canonical_etype(k)
            excluded[c] = as_ids(ids, f'sample_neighbors exclude_edges["{c}"]')[0]

    def pick(c, k, s, e, place):
        keep = None
        if c in excluded:
            keep = ~torch.isin(e, excluded[c])
        w = None
        if prob is not None and prob in g._ef[c].data:
            w = _edge_weights(g, c, prob, "sample_neighbors")
            if w.dtype not in _PROB_DTYPES:
                raise _C.TesseraError(f"sample_neighbors: prob {prob!r} of relation {c} is "
                                      f"{w.dtype}; probability or mask can only be int8, "
                                      f"uint8, bool, float32 or float64")
            w = w.index_select(0, e).to(torch.float64)
            keep = w > 0 if keep is None else keep & (w > 0)
        if keep is not None:
            e, place = e[keep], place[keep]
            w = None if w is None else w[keep]
        if k == -1:
            return e
        if replace:
            return _draw_with_replacement(e, place, w, s.numel(), k)
        return _draw_without_replacement(e, place, w, s.numel(), k)

    res = _result(g, _each_relation(g, seeds, fanouts, out_dir, pick), copy_ndata, copy_edata)
    return res if output_device is None else res.to(output_device)


def _each_relation(g, seeds, counts, out_dir, pick):
    """{relation: edge ids}: ``pick(c, count, s, e, place)`` for each
    relation c whose seed type has seeds ``s`` and whose count is not 0
    (``e``: the seeds' edges of c, grouped by seed, ``place``: each edge's
    seed); no edges for the others."""
    empty = torch.empty(0, dtype=torch.int64)
    eids = {}
    for c in g.canonical_etypes:
        t = c[0] if out_dir else c[2]
        if t not in seeds or counts[c] == 0:
            eids[c] = empty
            continue
        e, place = g._rel[c].edges_at(seeds[t], out=out_dir, places=True)
        eids[c] = pick(c, counts[c], seeds[t], e, place)
    return eids


def _draw_without_replacement(e, place, w, num_seeds, k):
    """Per seed (``place``, the candidates grouped by it) ``k`` distinct
    candidates, all of them when there are no more; with weights ``w``,
    Efraimidis-Spirakis keys (the distribution of successive weighted
    draws among the edges left)."""
    count = torch.bincount(place, minlength=num_seeds)
    big = count.index_select(0, place) > k  # Seeds with no more than k edges keep them all.
    if not bool(big.any()):
        return e
    at = torch.nonzero(big).reshape(-1)
    group = place.index_select(0, at)
    u = torch.rand(at.numel(), dtype=torch.float64)
    if w is None:  # One sort: by seed, then a uniform key in [0, 1).
        order = torch.sort(group.to(torch.float64) + u).indices
        rank = _rank_in_group(group.index_select(0, order), num_seeds)
    else:  # The k largest u ** (1 / w), compared as log(u) / w.
        key = torch.log(u.clamp(min=1e-300)) / w.index_select(0, at)
        order, rank = _sort_within(group, key, num_seeds, descending=True)
    big[at.index_select(0, order[rank >= k])] = False
    big |= count.index_select(0, place) <= k
    return e[big]  # In edge order within each seed.


def _draw_with_replacement(e, place, w, num_seeds, k):
    """Per seed with candidates ``k`` draws among them (weighted by ``w``)."""
    count = torch.bincount(place, minlength=num_seeds)
    start = torch.cumsum(count, 0) - count
    group = torch.repeat_interleave(torch.nonzero(count > 0).reshape(-1), k)
    first, n = start.index_select(0, group), count.index_select(0, group)
    u = torch.rand(group.numel(), dtype=torch.float64)
    if w is None:
        return e.index_select(0, first + torch.minimum((u * n).to(torch.int64), n - 1))
    cum = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(w, 0)])
    low, high = cum.index_select(0, first), cum.index_select(0, first + n)
    # The edge whose slice of [low, high) holds the draw (clamped to the
    # seed's own edges against rounding).
    pos = torch.searchsorted(cum, low + u * (high - low), right=True) - 1
    return e.index_select(0, torch.minimum(torch.maximum(pos, first), first + n - 1))


def select_topk(g, k, weight, nodes=None, edge_dir="in", ascending=False,
                copy_ndata=True, copy_edata=True, output_device=None):
    """DGL's ``dgl.sampling.select_topk``: for each seed of ``nodes``
    (default: every node of every type), in each relation ending at its
    type (starting, ``edge_dir="out"``), its ``k`` in-edges (out-edges) of
    largest edge data ``weight`` (smallest with ``ascending``; -1 or more
    than its edges: all), ordered by weight, ties in edge id order. ``k``
    may be ``{etype: int}`` naming every relation; every relation must
    have ``weight``."""
    _check_graph(g, "select_topk")
    if nodes is None:
        nodes = {t: torch.arange(g.num_nodes(t), dtype=torch.int64) for t in g.ntypes}
    elif not isinstance(nodes, Mapping) and len(g.ntypes) > 1:
        raise _C.TesseraError("Must specify node type when the graph is not homogeneous.")
    seeds = _seeds(g, nodes, "select_topk") if not (
        isinstance(nodes, Mapping) and len(nodes) == 0) else {}
    ks = _per_relation(g, k, "K value", "select_topk")
    weights = {}
    for c in g.canonical_etypes:
        if weight not in g._ef[c].data:
            raise _C.TesseraError(f'Edge weights "{weight}" do not exist for relation graph '
                                  f'"{c}".')
        weights[c] = _edge_weights(g, c, weight, "select_topk")
        if weights[c].dtype not in _WEIGHT_DTYPES:
            raise _C.TesseraError(f"select_topk: weight {weight!r} of relation {c} is "
                                  f"{weights[c].dtype}; weight can only be int32, int64, "
                                  f"float32 or float64")
    out_dir = _edge_dir(edge_dir)

    def pick(c, kc, s, e, place):
        order, rank = _sort_within(place, weights[c].index_select(0, e), s.numel(),
                                   descending=not ascending)
        return e.index_select(0, order if kc < 0 else order[rank < kc])

    res = _result(g, _each_relation(g, seeds, ks, out_dir, pick), copy_ndata, copy_edata)
    return res if output_device is None else res.to(output_device)


__all__ = ["sample_neighbors", "select_topk"]


# As DGL's DGLGraph methods.
Graph.sample_neighbors = sample_neighbors
Graph.select_topk = select_topk


def __getattr__(name):
    from tessera._utils import missing_name
    raise missing_name(__name__, name)
