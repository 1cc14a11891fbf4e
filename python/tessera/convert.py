"""DGL's ``dgl.to_homogeneous`` and ``dgl.to_heterogeneous`` (python/dgl/
convert.py of DGL 1.1.3) for in-memory graphs: the same node and edge
order, ``NID`` / ``EID`` / ``NTYPE`` / ``ETYPE`` fields, feature rules and
errors."""
import torch

from tessera import _C, EID, ETYPE, NID, NTYPE
from tessera.heterograph import Graph, _Relation, heterograph


def _plain(g, what):
    if not isinstance(g, Graph) or g.is_block:
        raise _C.TesseraError(f"{what}: expected a graph, got {type(g).__name__}")


def _scheme(t):
    return f"Scheme(shape={tuple(t.shape[1:])}, dtype={t.dtype})"


def _combine(frames, names):
    """DGL's ``combine_frames``: the columns ``names`` concatenated over the
    frames that have rows; the first such frame must have each name (a
    KeyError otherwise), a later one without it drops the name, one whose
    shape or dtype differs is an error."""
    schemes = None
    for f in frames:
        if f.num_rows == 0:
            continue
        if schemes is None:
            schemes = {k: f.data[k] for k in names}  # KeyError for a missing name (DGL).
            continue
        for k, first in list(schemes.items()):
            if k in f.data:
                if f.data[k].shape[1:] != first.shape[1:] or f.data[k].dtype != first.dtype:
                    raise _C.TesseraError(f"Cannot concatenate column {k} with shape "
                                          f"{_scheme(f.data[k])} and shape {_scheme(first)}")
            else:
                del schemes[k]
    if not schemes:
        return {}
    return {k: torch.cat([f.data[k] for f in frames if f.num_rows > 0]) for k in schemes}


def to_homogeneous(G, ndata=None, edata=None, store_type=True, return_count=False):
    """DGL's ``dgl.to_homogeneous``: one node type ``_N`` and one relation
    ``_E``; the nodes of each type in ``G.ntypes`` order (ids offset by the
    counts of the types before), the edges of each relation in
    ``G.canonical_etypes`` order. ``ndata[NID]`` / ``edata[EID]`` are the
    per-type ids, ``ndata[NTYPE]`` / ``edata[ETYPE]`` the type ids (int64,
    with ``store_type``). Only the features named in ``ndata`` / ``edata``
    are kept (none by default), concatenated over the types that have rows:
    the first such type must have the feature, a later type without it
    drops it, a type whose shape or dtype differs is an error. With
    ``return_count``, also the node count of each type and the edge count
    of each relation."""
    _plain(G, "to_homogeneous")
    ntypes, rels = G.ntypes, G.canonical_etypes
    counts = [G.num_nodes(t) for t in ntypes]
    offset = dict(zip(ntypes, [0] + torch.tensor(counts, dtype=torch.int64).cumsum(0).tolist()))
    ecounts = [G._rel[c].num_edges() for c in rels]
    empty = torch.empty(0, dtype=torch.int64)
    src = torch.cat([G._rel[c].src + offset[c[0]] for c in rels] or [empty])
    dst = torch.cat([G._rel[c].dst + offset[c[2]] for c in rels] or [empty])
    n = sum(counts)
    out = Graph({"_N": n}, [("_N", "_E", "_N")], [_Relation(n, n, src, dst=dst)])
    nf, ef = out._nodef["_N"].data, out._ef[("_N", "_E", "_N")].data
    nf.update(_combine([G._nodef[t] for t in ntypes], list(ndata or [])))
    ef.update(_combine([G._ef[c] for c in rels], list(edata or [])))
    nf[NID] = torch.cat([torch.arange(k, dtype=torch.int64) for k in counts] or [empty])
    ef[EID] = torch.cat([torch.arange(k, dtype=torch.int64) for k in ecounts] or [empty])
    if store_type:
        nf[NTYPE] = torch.repeat_interleave(torch.arange(len(ntypes), dtype=torch.int64),
                                            torch.tensor(counts, dtype=torch.int64))
        ef[ETYPE] = torch.repeat_interleave(torch.arange(len(rels), dtype=torch.int64),
                                            torch.tensor(ecounts, dtype=torch.int64))
    if return_count:
        return out, counts, ecounts
    return out


def _metagraph_triples(metagraph, ntypes, etypes):
    """(src type id, relation id, dst type id) of each edge of a networkx
    MultiDiGraph ``metagraph`` (edges (src type, dst type, relation name)),
    or of each item of a list of canonical triples."""
    if hasattr(metagraph, "edges"):
        triples = [(s, e, d) for s, d, e in metagraph.edges(keys=True)]
    else:
        triples = [tuple(c) for c in metagraph]
    out = []
    for s, e, d in triples:
        for name, names in ((s, ntypes), (e, etypes), (d, ntypes)):
            if name not in names:
                raise _C.TesseraError(f"to_heterogeneous: metagraph names {name!r}, which is "
                                      f"not among {names}")
        out.append((ntypes.index(s), etypes.index(e), ntypes.index(d)))
    return out


def to_heterogeneous(G, ntypes, etypes, ntype_field=NTYPE, etype_field=ETYPE, metagraph=None):
    """DGL's ``dgl.to_heterogeneous``: the typed graph whose node types are
    ``ntypes`` (``G.ndata[ntype_field]`` indexes them) and relations named
    by ``etypes`` (``G.edata[etype_field]``). A type's nodes keep their
    order in ``G`` (``ndata[NID]``: their ids in G); a relation (src type,
    name, dst type) has the edges of that name between those types, in G's
    order (``edata[EID]``); without ``metagraph`` (a networkx
    MultiDiGraph, as DGL's, or a list of canonical triples) only the
    relations that have edges. The other features are split by type."""
    _plain(G, "to_heterogeneous")
    if len(G.ntypes) > 1 or len(G.canonical_etypes) > 1:
        raise _C.TesseraError("The input graph should be homogeneous and have only one "
                              " type of nodes and edges.")
    ntypes, etypes = list(ntypes), list(etypes)
    c0 = G.canonical_etypes[0] if G.canonical_etypes else None
    nframe = G._nodef[G.ntypes[0]].data
    if ntype_field not in nframe:
        raise KeyError(ntype_field)
    eframe = G._ef[c0].data if c0 is not None else {}
    if etype_field not in eframe:
        raise KeyError(etype_field)
    ntype_ids = nframe[ntype_field].reshape(-1).to(torch.int64)
    etype_ids = eframe[etype_field].reshape(-1).to(torch.int64)
    for ids, names, what in ((ntype_ids, ntypes, "ntypes"), (etype_ids, etypes, "etypes")):
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= len(names)):
            bad = int(ids[(ids < 0) | (ids >= len(names))][0])
            raise _C.TesseraError(f"to_heterogeneous: type id {bad} is not an index of "
                                  f"{what} {names}")
    count = torch.bincount(ntype_ids, minlength=len(ntypes))
    order = torch.argsort(ntype_ids, stable=True)
    starts = [0] + count.cumsum(0).tolist()
    groups = [order[starts[i]:starts[i + 1]] for i in range(len(ntypes))]
    local = torch.empty_like(ntype_ids)
    for g in groups:
        local[g] = torch.arange(g.numel(), dtype=torch.int64)
    r = G._rel[c0]
    src, dst = r.src, r.dst
    key = (ntype_ids[src] * len(etypes) + etype_ids) * len(ntypes) + ntype_ids[dst]
    if metagraph is None:
        present = torch.unique(key).tolist()
        triples = [(k // len(ntypes) // len(etypes), k // len(ntypes) % len(etypes),
                    k % len(ntypes)) for k in present]
    else:
        triples = _metagraph_triples(metagraph, ntypes, etypes)
    data, egroups = {}, {}
    for s, e, d in triples:
        c = (ntypes[s], etypes[e], ntypes[d])
        eg = torch.nonzero(key == (s * len(etypes) + e) * len(ntypes) + d).reshape(-1)
        egroups[c] = eg
        data[c] = (local[src[eg]], local[dst[eg]])
    hg = heterograph(data, {t: int(k) for t, k in zip(ntypes, count)})
    ngroup = dict(zip(ntypes, groups))
    for key_, value in nframe.items():
        if key_ in (ntype_field, NID):
            continue
        for t in hg.ntypes:
            hg._nodef[t].data[key_] = value.index_select(0, ngroup[t])
    for key_, value in eframe.items():
        if key_ in (etype_field, EID):
            continue
        for c in hg.canonical_etypes:
            hg._ef[c].data[key_] = value.index_select(0, egroups[c])
    for t in hg.ntypes:
        hg._nodef[t].data[NID] = ngroup[t]
    for c in hg.canonical_etypes:
        hg._ef[c].data[EID] = egroups[c]
    return hg


def __getattr__(name):
    from tessera._utils import missing_name
    raise missing_name(__name__, name)
