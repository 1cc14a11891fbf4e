"""DGL's ``dgl.compact_graphs`` (python/dgl/transforms/functional.py of DGL
1.1.3) for in-memory graphs."""
from collections.abc import Iterable, Mapping

import torch

from tessera import _C, NID
from tessera.heterograph import Graph, _Relation, _first_seen, _lookup, _per_type


def compact_graphs(graphs, always_preserve=None, copy_ndata=True, copy_edata=True):
    """DGL's ``dgl.compact_graphs``: ``graphs`` (one graph, or a list of
    graphs of the same node types) without the nodes no edge of any of them
    uses, except ``always_preserve`` (ids, or ``{ntype: ids}``). Every
    result has the same nodes per type, relabelled in DGL's order: the
    preserved nodes as given, then graph by graph, relation by relation,
    its sources then its destinations, by first appearance.
    ``copy_ndata`` keeps the node data at those nodes with ``ndata[NID]``
    their ids in the input; ``copy_edata`` the edge data (no ``EID``: the
    edges are the same)."""
    single = not isinstance(graphs, Iterable)
    graphs = [graphs] if single else list(graphs)
    if not graphs:
        return []
    for g in graphs:
        if not isinstance(g, Graph):
            raise _C.TesseraError(f"compact_graphs: expected graphs, got {type(g).__name__}")
    if graphs[0].is_block:
        raise _C.TesseraError("Compacting a block graph is not allowed.")
    ntypes = graphs[0].ntypes
    for g in graphs:
        if g.ntypes != ntypes or g.is_block:
            raise _C.TesseraError(f"compact_graphs: all graphs should have the same node "
                                  f"types in the same order, got {ntypes} and {g.ntypes}")
    if always_preserve is None:
        always_preserve = {}
    elif not isinstance(always_preserve, Mapping):
        if len(ntypes) > 1:
            raise ValueError("Node type must be given if multiple node types exist.")
        always_preserve = {ntypes[0]: always_preserve}
    keep = _per_type(graphs[0], always_preserve, "node", "compact_graphs always_preserve")
    ends = {t: [keep[t]] if t in keep else [] for t in ntypes}
    for g in graphs:
        for c in g.canonical_etypes:
            r = g._rel[c]
            ends[c[0]].append(r.src)
            ends[c[2]].append(r.dst)
    empty = torch.empty(0, dtype=torch.int64)
    nodes = {t: _first_seen(torch.cat(x)) if x else empty for t, x in ends.items()}
    out = []
    for g in graphs:
        rels = []
        for c in g.canonical_etypes:
            r = g._rel[c]
            rels.append(_Relation(nodes[c[0]].numel(), nodes[c[2]].numel(),
                                  _lookup(nodes[c[0]], r.src, "compact_graphs"),
                                  dst=_lookup(nodes[c[2]], r.dst, "compact_graphs")))
        new = Graph({t: nodes[t].numel() for t in ntypes}, g.canonical_etypes, rels)
        if copy_ndata:
            for t in ntypes:
                f = new._nodef[t]
                f.data.update(g._nodef[t].subframe(nodes[t], f.what).data)
                f.data[NID] = nodes[t]
        if copy_edata:
            for c in g.canonical_etypes:
                new._ef[c].data.update(g._ef[c].data)
        out.append(new)
    return out[0] if single else out


def __getattr__(name):
    from tessera._utils import missing_name
    raise missing_name(__name__, name)
