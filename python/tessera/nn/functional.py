"""DGL's ``dgl.nn.functional``: ``edge_softmax`` on graphs and blocks."""
from collections.abc import Mapping

import torch

from tessera import _C
from tessera._utils import flat_rows
from tessera.heterograph import ALL
from tessera.ops import _to_csr_order, _to_edge_order


def _scatter_softmax(groups, num_groups, x):
    """Softmax of ``x`` ([E, ...]) within each group ``groups[e]``."""
    # Each group's maximum (tessera's max kernel over the groups' CSR); the
    # shift changes neither the result nor its gradient: no gradient through it.
    order = torch.argsort(groups, stable=True)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64),
                        torch.bincount(groups, minlength=num_groups).cumsum(0)])
    top = _C.aggregate(indptr, order, flat_rows(x.detach()), "max", None)
    e = torch.exp(x - top.reshape(num_groups, *x.shape[1:]).index_select(0, groups))
    total = x.new_zeros((num_groups, *x.shape[1:])).index_add(0, groups, e)
    return e / total.index_select(0, groups)


def edge_softmax(graph, logits, eids=ALL, norm_by="dst"):
    """Softmax of per-edge ``logits`` over each destination's in-edges
    (``norm_by="src"``: each source's out-edges), as DGL's ``edge_softmax``.
    On a graph of several relations ``logits`` is ``{etype: [E_r, ...]}`` and
    the softmax runs over all in-edges of a node, whatever their relation;
    the result is a dict too. One relation by destination runs in tessera's
    CSR kernel; autograd flows through both forms."""
    if not (isinstance(eids, str) and eids == ALL):
        raise _C.TesseraError("edge_softmax: only eids=ALL is supported")
    if norm_by not in ("dst", "src"):
        raise _C.TesseraError(f"edge_softmax: norm_by must be 'dst' or 'src', got {norm_by!r}")
    typed = isinstance(logits, Mapping)
    if not typed:
        c = graph.to_canonical_etype(None)
        logits = {c: logits}
    by = {graph.to_canonical_etype(k): v for k, v in logits.items()}
    for c, x in by.items():
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[0] != graph.num_edges(c):
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise _C.TesseraError(f"edge_softmax: logits {shape} of relation {c} with "
                                  f"{graph.num_edges(c)} edges")
    if len(by) == 1 and norm_by == "dst" and next(iter(by.values())).is_floating_point():
        (c, x), = by.items()
        r = graph._rel[c]
        flat = flat_rows(x)
        out = _to_edge_order(r, _C.edge_softmax(r.indptr, _to_csr_order(r, flat))).reshape(x.shape)
        return {c: out} if typed else out
    # Several relations (or by source): one scatter softmax per node type.
    side = 2 if norm_by == "dst" else 0
    out = {}
    for t in dict.fromkeys(c[side] for c in by):
        rels = [c for c in by if c[side] == t]
        groups = torch.cat([(graph._rel[c].dst if side == 2 else graph._rel[c].src)
                            for c in rels])
        n = graph._rel[rels[0]].num_dst if side == 2 else graph._rel[rels[0]].num_src
        res = _scatter_softmax(groups, n, torch.cat([by[c] for c in rels]))
        out.update(zip(rels, torch.split(res, [by[c].shape[0] for c in rels])))
    return out if typed else out[next(iter(by))]
