"""Graph objects with DGL's frames and message passing: ``Graph`` (DGL's
``DGLGraph``: in-memory graphs, subgraphs and sampling frontiers, pair
graphs), ``Block`` (a message-passing layer, DGL's ``DGLBlock``), and
``to_block``, ``graph`` and ``heterograph``.

Every graph is typed: node types, and relations ``(src type, name, dst
type)`` whose edges are block-local (or graph-local) node indices. A graph
with one node type and one relation is DGL's homogeneous graph (``_N``,
``_E``). Data lives in frames, one per node type (a block has one per
source type and one per destination type) and one per relation; the views
``ndata`` / ``srcdata`` / ``dstdata`` / ``edata`` give a tensor when they
span one type and ``{type: tensor}`` when they span several, as DGL's do.
Message passing (``apply_edges``, ``update_all``, ``multi_update_all``) is
in ``tessera.function``.
"""
import contextlib
import warnings
from collections.abc import Mapping, MutableMapping

import torch

from tessera import _C, EID, NID
from tessera._utils import as_ids

ALL = "__ALL__"


class _Relation:
    """One relation's edges, local node indices: in edge order ``src`` /
    ``dst``; the CSR over destinations, ``indptr`` with the sources in CSR
    order ``csr_indices`` and ``csr_perm`` the edge at each CSR position
    (None when the edges are in destination order, as a loader's are).
    Built from either form; the other is derived when first read."""

    def __init__(self, num_src, num_dst, src, dst=None, indptr=None):
        self.num_src, self.num_dst, self.src = num_src, num_dst, src
        self._dst, self._indptr, self._perm, self._csr_src = dst, indptr, None, None
        self._arange = self._out = self._keys = None

    @property
    def dst(self):
        if self._dst is None:
            self._dst = torch.repeat_interleave(
                torch.arange(self.num_dst, dtype=torch.int64), self.indptr[1:] - self.indptr[:-1])
        return self._dst

    @property
    def indptr(self):
        if self._indptr is None:
            dst = self._dst
            deg = torch.bincount(dst, minlength=self.num_dst)
            indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
            if dst.numel() > 1 and not bool((dst[1:] >= dst[:-1]).all()):
                self._perm = torch.argsort(dst, stable=True)
            # Published last: another thread that sees indptr sees the perm.
            self._indptr = indptr
        return self._indptr

    @property
    def csr_perm(self):
        self.indptr  # noqa: B018 (computes the permutation)
        return self._perm

    @property
    def csr_indices(self):
        if self._csr_src is None:
            perm = self.csr_perm
            self._csr_src = self.src if perm is None else self.src.index_select(0, perm)
        return self._csr_src

    @property
    def csr_positions(self):
        """The edge at each CSR position: ``csr_perm``, or 0..E-1 (made once)."""
        if self.csr_perm is not None:
            return self._perm
        if self._arange is None:
            self._arange = torch.arange(self.num_edges(), dtype=torch.int64)
        return self._arange

    def num_edges(self):
        return self.src.numel()

    def edges_at(self, ids, out, places=False):
        """The edge ids of nodes ``ids``: their in-edges (out-edges with
        ``out``) grouped by node in the order given (a repeated node
        repeats them), in edge id order within a node, as DGL's. With
        ``places``, also the place in ``ids`` each edge was found from."""
        if out:
            if self._out is None:
                deg = torch.bincount(self.src, minlength=self.num_src)
                self._out = (torch.cat([deg.new_zeros(1), deg.cumsum(0)]),
                             torch.argsort(self.src, stable=True))
            indptr, positions = self._out
        else:
            indptr, positions = self.indptr, self.csr_positions
        begin, end = indptr[ids], indptr[ids + 1]
        edges = positions.index_select(0, _expand_ranges(begin, end))
        if not places:
            return edges
        return edges, torch.repeat_interleave(torch.arange(ids.numel(), dtype=torch.int64),
                                              end - begin)

    def find(self, u, v, every=False):
        """For each pair (u[i], v[i]) the lowest id of an edge u -> v, -1 if
        none; or with ``every`` all their edges (pair by pair, by edge id)."""
        if self._keys is None:
            if self.num_src * max(self.num_dst, 1) >= 1 << 62:
                raise _C.TesseraError("edge lookups need num_src * num_dst below 2**62")
            keys = self.src * self.num_dst + self.dst
            order = torch.argsort(keys, stable=True)
            self._keys = (keys.index_select(0, order), order)
        keys, order = self._keys
        query = u * self.num_dst + v
        first = torch.searchsorted(keys, query)
        if every:
            return order.index_select(
                0, _expand_ranges(first, torch.searchsorted(keys, query, right=True)))
        none = torch.full_like(query, -1)
        if keys.numel() == 0:
            return none
        at = first.clamp(max=keys.numel() - 1)
        return torch.where(keys.index_select(0, at) == query, order.index_select(0, at), none)


def _expand_ranges(begin, end):
    """The concatenation of ``range(begin[i], end[i])`` over i."""
    count = end - begin
    shift = torch.repeat_interleave(begin - (count.cumsum(0) - count), count)
    return torch.arange(shift.numel(), dtype=torch.int64) + shift


class _Frame:
    """One node type's or relation's tensors by name, each of ``num_rows`` rows."""

    __slots__ = ("num_rows", "data", "what")

    def __init__(self, num_rows, what, data=None):
        self.num_rows, self.what, self.data = num_rows, what, dict(data or {})

    def check(self, name, value, rows=None):
        """``value`` as data ``name``: a tensor of a row per row (per id of
        ``rows``, when given)."""
        if not isinstance(value, torch.Tensor):
            raise _C.TesseraError(f"{self.what} data {name!r} must be a tensor, got "
                                  f"{type(value).__name__}")
        count = self.num_rows if rows is None else rows.numel()
        if value.dim() < 1 or value.shape[0] != count:
            raise _C.TesseraError(f"{self.what} data {name!r}: a tensor of shape "
                                  f"{tuple(value.shape)} for {count} "
                                  f"{'rows' if rows is None else 'ids'}")
        return value

    def write_rows(self, name, rows, value):
        """Data ``name`` with ``value`` at ``rows`` (DGL's ``update_row``):
        other rows keep theirs, or are 0 when the name is new; the rows'
        dtype and shape must be the name's."""
        old = self.data.get(name)
        if old is not None and (old.dtype != value.dtype or old.shape[1:] != value.shape[1:]):
            raise _C.TesseraError(f"{self.what} data {name!r} holds {old.dtype} "
                                  f"{tuple(old.shape[1:])} per row; got {value.dtype} "
                                  f"{tuple(value.shape[1:])}")
        if old is None:
            old = value.new_zeros((self.num_rows, *value.shape[1:]))
        self.data[name] = old.index_copy(0, rows, value)

    def subframe(self, rows, what):
        """The rows ``rows`` of every tensor (DGL's subgraph frames)."""
        return _Frame(rows.numel(), what, {k: v.index_select(0, rows)
                                           for k, v in self.data.items()})


class _DataView(MutableMapping):
    """``ndata`` / ``srcdata`` / ``dstdata`` / ``edata``, and a type's
    ``.data``: over one frame a tensor per name; over several ``{type:
    tensor}`` of the types that have the name (DGL). ``resolve`` maps a key
    of an assigned dict to a frame key (a relation name to its triple).
    ``rows`` (one frame only; checked ids): the view reads and writes those
    rows (``g.nodes[ids].data``), deletes whole names (DGL's)."""

    def __init__(self, frames, keys, resolve, rows=None):
        self._frames, self._keys, self._resolve = frames, list(keys), resolve
        self._rows = rows

    def _one(self):
        return len(self._keys) == 1

    def __getitem__(self, name):
        if self._one():
            frame = self._frames[self._keys[0]]
            if name not in frame.data:
                raise KeyError(f"{frame.what} has no data {name!r} (it has "
                               f"{sorted(frame.data)})")
            if self._rows is not None:
                return frame.data[name].index_select(0, self._rows)
            return frame.data[name]
        out = {k: self._frames[k].data[name] for k in self._keys
               if name in self._frames[k].data}
        if not out:
            raise KeyError(f"no type has data {name!r}")
        return out

    def __setitem__(self, name, value):
        if self._one():
            frame = self._frames[self._keys[0]]
            if self._rows is not None:
                frame.write_rows(name, self._rows, frame.check(name, value, self._rows))
                return
            frame.data[name] = frame.check(name, value)
            return
        if not isinstance(value, Mapping):
            raise _C.TesseraError(f"data {name!r}: this graph has several types "
                                  f"{self._keys}; assign {{type: tensor}}")
        checked = {}
        for k, v in value.items():
            key = self._resolve(k)
            if key not in self._keys:
                raise _C.TesseraError(f"data {name!r}: unknown type {k!r}; here are "
                                      f"{self._keys}")
            checked[key] = self._frames[key].check(name, v)
        for key, v in checked.items():
            self._frames[key].data[name] = v

    def __delitem__(self, name):
        hit = [k for k in self._keys if name in self._frames[k].data]
        if not hit:
            raise KeyError(f"no data {name!r}")
        for k in hit:
            del self._frames[k].data[name]

    def __contains__(self, name):
        return any(name in self._frames[k].data for k in self._keys)

    def __iter__(self):
        return iter(dict.fromkeys(n for k in self._keys for n in self._frames[k].data))

    def __len__(self):
        return len(list(iter(self)))

    def __repr__(self):
        return repr({n: self[n] for n in self})


class _TypeView:
    """``g.nodes[ntype]`` / ``g.edges[etype]``: ``.data`` of one type."""

    def __init__(self, data):
        self.data = data


def _full_slice(key, view):
    """DGL's views take ``:`` (every node or edge), no other slice."""
    if not (key.start is None and key.stop is None and key.step is None):
        raise _C.TesseraError(f'{view}: only the full slice ":" is supported (DGL\'s), '
                              f'got {key}; give the ids')


class _NodeView:
    """``g.nodes`` (``g.srcnodes``, ``g.dstnodes``): callable for the node
    indices of a type, subscripted as DGL's for data: ``[ntype]`` (or
    ``[:]``, ``[None]``: the only type) a type's, ``[ids]`` (of the only
    type) or ``[(ids, ntype)]`` those nodes' rows."""

    def __init__(self, graph, side):
        self._graph, self._side = graph, side

    def _frames(self):
        g = self._graph
        return {"src": g._srcf, "dst": g._dstf, "all": g._nodef}[self._side]

    def __getitem__(self, key):
        frames, ids, ntype = self._frames(), None, key
        if isinstance(key, slice):
            _full_slice(key, "nodes[...]")
            ntype = None
        elif isinstance(key, tuple):
            if len(key) != 2 or not (key[1] is None or isinstance(key[1], str)):
                raise _C.TesseraError(f"nodes[...]: a tuple is (ids, node type), as DGL's; "
                                      f"got {key!r}")
            ids, ntype = key
        elif key is not None and not isinstance(key, str):
            ids, ntype = key, None
        if ntype is None:
            ntype = self._graph._one_type(list(frames), "node")
        if ntype not in frames:
            raise KeyError(f"unknown node type {ntype!r}; the graph has {list(frames)}")
        rows = None
        if ids is not None:
            rows = _nodes_of(ids, frames[ntype].num_rows, ntype, "nodes[ids]")[0]
        return _TypeView(_DataView(frames, [ntype], str, rows))

    def __call__(self, ntype=None):
        frames = self._frames()
        t = self._graph._one_type(list(frames), "node") if ntype is None else ntype
        return torch.arange(frames[t].num_rows, dtype=torch.int64)


class _EdgeView:
    """``g.edges``: callable as DGL's ``g.edges(form, order, etype)``,
    subscripted as DGL's for data: ``[etype]`` (a name or a canonical
    triple; ``[:]``, ``[None]``: the only relation) a relation's, ``[eids]``
    or ``[(u, v)]`` (endpoint pairs) those edges' rows, of the only
    relation."""

    def __init__(self, graph):
        self._graph = graph

    def __getitem__(self, key):
        g, edges, etype = self._graph, None, key
        if isinstance(key, slice):
            _full_slice(key, "edges[...]")
            etype = None
        elif isinstance(key, list) and len(key) == 3 and all(isinstance(k, str) for k in key):
            etype = tuple(key)  # A triple as a list, as tessera's relations take it.
        elif not (key is None or isinstance(key, str)
                  or isinstance(key, tuple) and len(key) == 3):
            edges, etype = key, None  # Edge ids, or a pair (u, v) of endpoints.
        c = g.to_canonical_etype(etype)
        rows = None
        if isinstance(edges, tuple):
            if len(edges) != 2:
                raise _C.TesseraError(f"edges[...]: a tuple is (u, v) endpoints or a canonical "
                                      f"edge type, as DGL's; got {len(edges)} items")
            rows = torch.as_tensor(g.edge_ids(edges[0], edges[1], etype=c)).reshape(-1)
        elif edges is not None:
            rows = _nodes_of(edges, g._rel[c].num_edges(), c, "edges[ids]", kind="edge")[0]
        return _TypeView(_DataView(g._ef, [c], g.to_canonical_etype, rows))

    def __call__(self, form="uv", order="eid", etype=None):
        return self._graph.all_edges(form, order, etype)


class Graph:
    """DGL's ``DGLGraph``: node types with a frame each, relations with
    their edges and a frame each. Built by :func:`graph`,
    :func:`heterograph`, sampling (``sample_neighbors`` gives a frontier over
    every node of a ``DistGraph``) and the loaders (pair graphs)."""

    is_block = False
    _what = "graph"

    def __init__(self, num_nodes=(), canonical_etypes=None, relations=None, **kwargs):
        """``num_nodes``: {ntype: count} (in type order); ``relations``: one
        ``_Relation`` per canonical triple. A uni-bipartite graph (no type
        both a source and a destination) has DGL's source types (those that
        are no relation's destination) and destination types.

        ``DGLGraph((u, v))`` and ``DGLGraph()``, DGL's deprecated forms, are
        ``tessera.graph((u, v))`` (its nodes: the largest endpoint + 1; DGL
        ignores ``num_nodes=``) and an empty graph. Other keyword arguments
        are ignored with DGL's warning."""
        if kwargs:
            warnings.warn(f"Keyword arguments {list(kwargs)} are deprecated in v0.5, and can be "
                          f"safely removed in all cases.", stacklevel=2)
        if relations is None:
            if isinstance(num_nodes, Graph):
                raise _C.TesseraError("The input is already a DGLGraph. No need to create "
                                      "it again.")
            if isinstance(num_nodes, Mapping) or not isinstance(num_nodes, (tuple, list)):
                raise _C.TesseraError(f"Unsupported graph data type: {type(num_nodes)}")
            self.__dict__.update(graph(num_nodes if len(num_nodes) else ([], [])).__dict__)
            return
        frames = {t: _Frame(int(n), f"node type {t!r}") for t, n in num_nodes.items()}
        dsttypes = {c[2] for c in canonical_etypes}
        if len(frames) > 1 and dsttypes.isdisjoint(c[0] for c in canonical_etypes):
            self._ntypes = list(frames)  # In type order, not sources first.
            self._srcf = {t: f for t, f in frames.items() if t not in dsttypes}
            self._dstf = {t: f for t, f in frames.items() if t in dsttypes}
        else:
            self._srcf = self._dstf = frames
        self._set_relations(canonical_etypes, relations)

    # ------------------------------------------------------------ structure

    def _set_relations(self, canonical_etypes, relations):
        self.canonical_etypes = [tuple(c) for c in canonical_etypes]
        self._rel = dict(zip(self.canonical_etypes, relations))
        self._ef = {c: _Frame(r.num_edges(), f"relation {c}") for c, r in self._rel.items()}

    @property
    def ntypes(self):
        order = self.__dict__.get("_ntypes")
        return list(order) if order is not None else list(
            dict.fromkeys(list(self._srcf) + list(self._dstf)))

    @property
    def _nodef(self):
        """Every node type's frame, in type order."""
        if self._dstf is self._srcf:
            return self._srcf
        return {t: self._srcf[t] if t in self._srcf else self._dstf[t] for t in self.ntypes}

    is_unibipartite = property(lambda self: self._dstf is not self._srcf)

    srctypes = property(lambda self: list(self._srcf))
    dsttypes = property(lambda self: list(self._dstf))
    etypes = property(lambda self: [c[1] for c in self.canonical_etypes])
    idtype = property(lambda self: torch.int64)
    device = property(lambda self: torch.device("cpu"))
    is_homogeneous = property(lambda self: len(self.ntypes) == 1
                              and len(self.canonical_etypes) == 1)

    def metagraph(self):
        """DGL's metagraph: a networkx ``MultiDiGraph`` with an edge (src
        type, dst type, key relation name) per relation."""
        import networkx
        meta = networkx.MultiDiGraph()
        for src, rel, dst in self.canonical_etypes:
            meta.add_edge(src, dst, rel)
        return meta

    def _one_type(self, types, kind):
        if len(types) != 1:
            raise _C.TesseraError(f"this {self._what} has several {kind} types {types}: "
                                  f"give the type")
        return types[0]

    def to_canonical_etype(self, etype):
        """The triple of relation ``etype`` (a name, a triple or "src:rel:dst")."""
        if etype is None:
            return self._one_type(self.canonical_etypes, "edge")
        key = tuple(etype.split(":")) if isinstance(etype, str) and ":" in etype else etype
        if isinstance(key, (tuple, list)) and tuple(key) in self._rel:
            return tuple(key)
        hits = [c for c in self.canonical_etypes if c[1] == key]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise _C.TesseraError(f"relation {etype!r} is ambiguous: {hits}")
        raise _C.TesseraError(f"unknown relation {etype!r}; the {self._what} has "
                              f"{self.canonical_etypes}")

    def get_ntype_id(self, ntype):
        if ntype not in self.ntypes:
            raise _C.TesseraError(f"unknown node type {ntype!r}; the {self._what} has "
                                  f"{self.ntypes}")
        return self.ntypes.index(ntype)

    def get_etype_id(self, etype):
        return self.canonical_etypes.index(self.to_canonical_etype(etype))

    def _relation(self, etype):
        return self._rel[self.to_canonical_etype(etype)]

    def _count(self, frames, ntype, side, types):
        if ntype is None:
            return sum(f.num_rows for f in frames.values())
        if ntype not in frames:
            raise _C.TesseraError(f"unknown {side}node type {ntype!r}; the {self._what} has "
                                  f"{types}")
        return frames[ntype].num_rows

    def num_nodes(self, ntype=None):
        # A graph's source and destination frames are one dict, or hold
        # disjoint types (a Block counts its own).
        return self._count({**self._srcf, **self._dstf}, ntype, "", self.ntypes)

    def num_src_nodes(self, ntype=None):
        """Source nodes of ``ntype``; without a type, of every source type (DGL)."""
        return self._count(self._srcf, ntype, "source ", self.srctypes)

    def num_dst_nodes(self, ntype=None):
        """Destination nodes of ``ntype``; without a type, of every destination
        type (DGL)."""
        return self._count(self._dstf, ntype, "destination ", self.dsttypes)

    def num_edges(self, etype=None):
        if etype is None:
            return sum(r.num_edges() for r in self._rel.values())
        return self._relation(etype).num_edges()

    number_of_nodes = num_nodes
    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes
    number_of_edges = num_edges

    def all_edges(self, form="uv", order="eid", etype=None):
        r = self._relation(etype)
        src, dst, eid = r.src, r.dst, None
        if order == "srcdst":
            eid = torch.argsort(src * max(r.num_dst, 1) + dst, stable=True)
            src, dst = src.index_select(0, eid), dst.index_select(0, eid)
        elif order != "eid":
            raise ValueError(f"edges(order=...) must be 'eid' or 'srcdst', got {order!r}")
        if form in ("eid", "all") and eid is None:
            eid = torch.arange(r.num_edges(), dtype=torch.int64)
        if form == "uv":
            return src, dst
        if form == "eid":
            return eid
        if form == "all":
            return src, dst, eid
        raise ValueError(f"edges(form=...) must be 'uv', 'eid' or 'all', got {form!r}")

    def find_edges(self, eid, etype=None):
        r, (ids, _) = self._relation(etype), as_ids(eid, "find_edges")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= r.num_edges()):
            raise _C.TesseraError(f"find_edges: edge id out of range [0, {r.num_edges()})")
        return r.src.index_select(0, ids), r.dst.index_select(0, ids)

    def in_edges(self, v, form="uv", etype=None):
        """The in-edges of ``v``, grouped by node in the order given (DGL's)."""
        r = self._relation(etype)
        v = _nodes_of(v, r.num_dst, self.to_canonical_etype(etype)[2], "in_edges v")[0]
        return self._edges_of(r, r.edges_at(v, out=False), form)

    def out_edges(self, u, form="uv", etype=None):
        """The out-edges of ``u``, grouped by node in the order given (DGL's)."""
        r = self._relation(etype)
        u = _nodes_of(u, r.num_src, self.to_canonical_etype(etype)[0], "out_edges u")[0]
        return self._edges_of(r, r.edges_at(u, out=True), form)

    def predecessors(self, v, etype=None):
        return self.in_edges(v, etype=etype)[0]

    def successors(self, v, etype=None):
        return self.out_edges(v, etype=etype)[1]

    def _pairs(self, u, v, etype, what):
        c, r = self.to_canonical_etype(etype), self._relation(etype)
        (u, u_scalar), (v, v_scalar) = (_nodes_of(u, r.num_src, c[0], f"{what} u"),
                                        _nodes_of(v, r.num_dst, c[2], f"{what} v"))
        if u.numel() != v.numel() and 1 not in (u.numel(), v.numel()):
            raise _C.TesseraError(f"{what}: u has {u.numel()} nodes and v {v.numel()}")
        u, v = torch.broadcast_tensors(u, v)
        return r, u, v, u_scalar and v_scalar

    def has_edges_between(self, u, v, etype=None):
        """Whether an edge u[i] -> v[i] exists (bool, or a bool tensor)."""
        r, u, v, scalar = self._pairs(u, v, etype, "has_edges_between")
        found = r.find(u, v) >= 0
        return bool(found[0]) if scalar else found

    has_edge_between = has_edges_between

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """The id of an edge u[i] -> v[i] (the lowest of parallel edges), an
        error if there is none; with ``return_uv``, (src, dst, eid) of every
        edge between the pairs (DGL's)."""
        r, u, v, scalar = self._pairs(u, v, etype, "edge_ids")
        if return_uv:
            return self._edges_of(r, r.find(u, v, every=True), "all")
        eid = r.find(u, v)
        missing = torch.nonzero(eid < 0).reshape(-1)
        if missing.numel():
            i = int(missing[0])
            raise _C.TesseraError(f"edge_ids: ({int(u[i])}, {int(v[i])}) does not form a valid "
                                  f"edge of {self.to_canonical_etype(etype)}")
        return int(eid[0]) if scalar else eid

    def has_nodes(self, vid, ntype=None):
        t = self._one_type(self.ntypes, "node") if ntype is None else ntype
        ids, scalar = as_ids(vid, "has_nodes")
        if ids.numel() and int(ids.min()) < 0:
            raise _C.TesseraError("has_nodes: all IDs must be non-negative integers")
        found = ids < self.num_nodes(t)
        return bool(found[0]) if scalar else found

    @staticmethod
    def _edges_of(r, eid, form):
        src, dst = r.src.index_select(0, eid), r.dst.index_select(0, eid)
        if form not in ("uv", "eid", "all"):
            raise _C.TesseraError(f"form must be 'uv', 'eid' or 'all', got {form!r}")
        return {"uv": (src, dst), "eid": eid, "all": (src, dst, eid)}[form]

    def in_degrees(self, v=ALL, etype=None):
        return self._degrees(v, etype, False)

    def out_degrees(self, u=ALL, etype=None):
        return self._degrees(u, etype, True)

    def _degrees(self, ids, etype, out):
        r, c = self._relation(etype), self.to_canonical_etype(etype)
        deg = torch.bincount(r.src, minlength=r.num_src) if out else r.indptr[1:] - r.indptr[:-1]
        if isinstance(ids, str) and ids == ALL:
            return deg
        ids, scalar = _nodes_of(ids, deg.numel(), c[0] if out else c[2],  # No negative ids (DGL).
                                "out_degrees u" if out else "in_degrees v")
        return int(deg[ids][0]) if scalar else deg[ids]

    # The only relation's CSR and edges, what tessera.nn's layers read (on
    # a block, a full graph or one relation of either).
    def _only(self):
        return self._rel[self.to_canonical_etype(None)]

    indptr = property(lambda self: self._only().indptr)
    indices = property(lambda self: self._only().src)
    edge_dst = property(lambda self: self._only().dst,
                        doc="The local destination of each edge.")
    csr_indices = property(lambda self: self._only().csr_indices)
    csr_perm = property(lambda self: self._only().csr_perm)

    # ------------------------------------------------------------ data

    def _view(self, frames, types, what):
        if not types:
            raise _C.TesseraError(f"this {self._what} has no {what}")
        return _DataView(frames, types, str)

    @property
    def ndata(self):
        if self.is_block:
            raise _C.TesseraError("a block has no ndata: use srcdata / dstdata")
        return self._view(self._nodef, list(self._nodef), "node types")

    srcdata = property(lambda self: self._view(self._srcf, list(self._srcf), "source types"))
    dstdata = property(lambda self: self._view(self._dstf, list(self._dstf), "destination types"))
    edata = property(lambda self: _DataView(self._ef, list(self._ef), self.to_canonical_etype))
    nodes = property(lambda self: _NodeView(self, "src" if self.is_block else "all"))
    srcnodes = property(lambda self: _NodeView(self, "src"))
    dstnodes = property(lambda self: _NodeView(self, "dst"))
    edges = property(lambda self: _EdgeView(self))

    def _frames(self):
        """Every frame dict (node frames once when they are shared)."""
        return [self._srcf] + ([] if self._dstf is self._srcf else [self._dstf]) + [self._ef]

    @contextlib.contextmanager
    def local_scope(self):
        """Data set inside the ``with`` block is gone after it (tensors
        changed in place stay changed, as in DGL)."""
        saved = [{k: dict(f.data) for k, f in frames.items()} for frames in self._frames()]
        try:
            yield
        finally:
            for frames, data in zip(self._frames(), saved):
                for k, f in frames.items():
                    f.data = data[k]

    def local_var(self):
        """A graph of the same structure whose frames are copies: data set
        on it does not reach this graph."""
        g = self.__class__.__new__(self.__class__)
        g.__dict__.update(self.__dict__)
        g._srcf = {k: _Frame(f.num_rows, f.what, f.data) for k, f in self._srcf.items()}
        g._dstf = g._srcf if self._dstf is self._srcf else {
            k: _Frame(f.num_rows, f.what, f.data) for k, f in self._dstf.items()}
        g._ef = {k: _Frame(f.num_rows, f.what, f.data) for k, f in self._ef.items()}
        return g

    def to(self, device, **kwargs):
        if torch.device(device).type != "cpu":
            raise _C.TesseraError(f"{type(self).__name__}.to({device}): tessera's "
                                  f"{self._what}s live on the CPU")
        return self

    def long(self):
        return self

    def int(self):
        """DGL's int() makes ids int32; tessera's ids stay int64 (the same graph)."""
        return self

    cpu = long

    def __getitem__(self, etype):
        """The relation ``etype`` as a graph of its own types (DGL's
        ``g[etype]``), sharing this graph's frames."""
        c = self.to_canonical_etype(etype)
        g = self.__class__.__new__(self.__class__)
        g.__dict__.update(self.__dict__)
        g.__dict__.pop("_ntypes", None)
        if self._dstf is self._srcf and c[0] == c[2]:
            g._srcf = g._dstf = {c[0]: self._srcf[c[0]]}
        else:  # Its sources and destinations are of one type each (DGL's).
            g._srcf, g._dstf = {c[0]: self._srcf[c[0]]}, {c[2]: self._dstf[c[2]]}
        g.canonical_etypes = [c]
        g._rel, g._ef = {c: self._rel[c]}, {c: self._ef[c]}
        return g

    def __repr__(self):
        if self.is_homogeneous and not self.is_block:
            return (f"Graph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()}, "
                    f"ndata_schemes={list(self.ndata)}, edata_schemes={list(self.edata)})")
        return (f"{type(self).__name__}(num_nodes={ {t: self.num_nodes(t) for t in self.ntypes} }"
                f", num_edges={ {c: self.num_edges(c) for c in self.canonical_etypes} }, "
                f"metagraph={self.canonical_etypes})")


def _checked_csr(src_nodes, indptr, indices, eids):
    """A one-relation block's arrays as int64, or an error naming what is
    wrong: the kernels and message passing trust a block's CSR."""
    src_nodes, indptr, indices = (as_ids(t, f"Block {name}")[0].reshape(-1).contiguous()
                                  for t, name in ((src_nodes, "src_nodes"), (indptr, "indptr"),
                                                  (indices, "indices")))
    num_src, num_dst, num_edges = src_nodes.numel(), indptr.numel() - 1, indices.numel()
    if num_dst < 0 or num_dst > num_src:
        raise _C.TesseraError(f"Block: indptr has {indptr.numel()} entries, for {num_dst} "
                              f"destinations; they are the first of the {num_src} sources")
    if int(indptr[0]) != 0 or int(indptr[-1]) != num_edges or bool((indptr[1:] < indptr[:-1])
                                                                   .any()):
        raise _C.TesseraError(f"Block: indptr must rise from 0 to the {num_edges} edges, got "
                              f"{indptr.tolist() if num_dst < 10 else indptr}")
    if num_edges and (int(indices.min()) < 0 or int(indices.max()) >= num_src):
        raise _C.TesseraError(f"Block: a source index is outside [0, {num_src}) (from "
                              f"{int(indices.min())} to {int(indices.max())})")
    if eids is not None:
        eids = as_ids(eids, "Block eids")[0].reshape(-1)
        if eids.numel() != num_edges:
            raise _C.TesseraError(f"Block: {eids.numel()} edge ids for {num_edges} edges")
    return src_nodes, indptr, indices, eids


class Block(Graph):
    """One message-passing layer (DGL's block): per source type its nodes
    (``srcdata[NID]``), per destination type its nodes (``dstdata[NID]``; in
    a loader's blocks and ``to_block``'s the first sources of their type),
    per relation its edges in block-local ids (``edges(etype=...)``) and ids
    (``edata[EID]``), with the CSR over destinations. Source and destination
    data are separate frames (``srcdata`` / ``dstdata``), as in DGL.

    ``Block(src_nodes, indptr, indices, eids)`` builds a block of one type
    and one relation from a CSR (a loader's blocks over global ids);
    ``Block.typed(g, ...)`` a typed one. The blocks of a typed loader hold
    per-type node ids and per-relation edge ids (as DGL; ``g.map_to_homo_eid``
    gives global ones) and ``srcdata["_homo_nid"]`` the sources' global ids.
    ``tessera.nn.RelationBlock(block, etype)`` (or ``block[etype]``) is one
    relation of it."""

    is_block = True
    _what = "block"

    def __init__(self, src_nodes, indptr, indices, eids, srcdata=None, dstdata=None, *,
                 _trusted=False):
        if not _trusted:  # (A loader's blocks come checked from C++.)
            src_nodes, indptr, indices, eids = _checked_csr(src_nodes, indptr, indices, eids)
        num_dst = indptr.numel() - 1
        self._build(["_N"], ["_N"], [("_N", "_E", "_N")], {"_N": src_nodes},
                    {"_N": src_nodes[:num_dst]},
                    [_Relation(src_nodes.numel(), num_dst, indices, indptr=indptr)], [eids])
        self.srcdata.update(srcdata or {})
        self.dstdata.update(dstdata or {})

    def _build(self, srctypes, dsttypes, canonical_etypes, src, dst, relations, eids,
               homo_src_nodes=None):
        """Per type the node ids (``src`` / ``dst``), per relation its
        ``_Relation`` and edge ids: the frames start with NID / EID."""
        self._srcf = {t: _Frame(src[t].numel(), f"source node type {t!r}", {NID: src[t]})
                      for t in srctypes}
        self._dstf = {t: _Frame(dst[t].numel(), f"destination node type {t!r}", {NID: dst[t]})
                      for t in dsttypes}
        if homo_src_nodes is not None:
            for t, ids in homo_src_nodes.items():
                self._srcf[t].data["_homo_nid"] = ids
        self._set_relations(canonical_etypes, relations)
        for c, e in zip(self.canonical_etypes, eids):
            if e is not None:
                self._ef[c].data[EID] = e

    @classmethod
    def typed(cls, g, src_nodes, dst_nodes, homo_src_nodes, edges):
        """A typed block of ``g``'s types and relations: per node type
        (``g.ntypes`` order) its sources (destinations first), destinations
        and the sources' global ids (or None); per relation
        (``g.canonical_etypes`` order) ``(src, dst, eids)`` in block-local
        ids, in any order (that is the block's edge order)."""
        ntypes, rels = list(g.ntypes), [tuple(c) for c in g.canonical_etypes]
        src, dst = dict(zip(ntypes, src_nodes)), dict(zip(ntypes, dst_nodes))
        relations = [_Relation(src[c[0]].numel(), dst[c[2]].numel(), e[0], dst=e[1])
                     for c, e in zip(rels, edges)]
        b = cls.__new__(cls)
        b._build(ntypes, ntypes, rels, src, dst, relations, [e[2] for e in edges],
                 None if homo_src_nodes is None else dict(zip(ntypes, homo_src_nodes)))
        return b

    @property
    def ntypes(self):
        """DGL's block: the source types, then the destination types."""
        return self.srctypes + self.dsttypes

    def num_nodes(self, ntype=None):
        """DGL's block: sources plus destinations; of a type, its sources."""
        if ntype is None:
            return sum(f.num_rows for f in self._srcf.values()) + sum(
                f.num_rows for f in self._dstf.values())
        return self.num_src_nodes(ntype)

    number_of_nodes = num_nodes

    def __repr__(self):
        if len(self.srctypes) == 1 and len(self.canonical_etypes) == 1:
            return (f"Block(num_src_nodes={self.num_src_nodes()}, "
                    f"num_dst_nodes={self.num_dst_nodes()}, num_edges={self.num_edges()})")
        return (f"Block(num_src_nodes={ {t: self.num_src_nodes(t) for t in self.srctypes} }, "
                f"num_dst_nodes={ {t: self.num_dst_nodes(t) for t in self.dsttypes} }, "
                f"num_edges={ {c: self.num_edges(c) for c in self.canonical_etypes} })")


class PairGraph(Graph):
    """The positive (or negative) pairs of an edge batch over the batch's
    nodes (the last block's destinations): ``edges(etype=...)`` in local
    ids, ``ndata[NID]`` the nodes' ids (per type on a typed batch),
    ``edata[EID]`` the positive pairs' edge ids. DGL's pair graph, with its
    frames and message passing (``apply_edges(fn.u_dot_v(...))``)."""

    _what = "pair graph"

    def __init__(self, src, dst, nodes, eids=None):
        self._build({"_N": nodes}, [("_N", "_E", "_N")], [(src, dst, eids)])

    def _build(self, nodes, canonical_etypes, pairs):
        self._srcf = {t: _Frame(n.numel(), f"node type {t!r}", {NID: n}) for t, n in nodes.items()}
        self._dstf = self._srcf
        self._set_relations(canonical_etypes, [
            _Relation(nodes[c[0]].numel(), nodes[c[2]].numel(), s, dst=d)
            for c, (s, d, _) in zip(canonical_etypes, pairs)])
        for c, (_, _, e) in zip(self.canonical_etypes, pairs):
            if e is not None:
                self._ef[c].data[EID] = e

    @classmethod
    def _native(cls, raw, typed, positive):
        """The PairGraph of a C++ one. Typed, it has every node type; the
        negative graph every relation, the positive one (DGL's edge subgraph
        of the batch's edges) only those with edges in the batch, so that one
        relation gives an untyped ``edata``."""
        ntypes, rels = raw.ntypes, [tuple(c) for c in raw.canonical_etypes]
        if not typed:
            ntypes, rels = ["_N"], [("_N", "_E", "_N")]
        keep = [i for i, e in enumerate(raw.edges)
                if not (typed and positive) or e.src.numel()]
        pairs = [(raw.edges[i].src, raw.edges[i].dst, raw.edges[i].eids if positive else None)
                 for i in keep]
        g = cls.__new__(cls)
        g._build(dict(zip(ntypes, raw.nodes)), [rels[i] for i in keep], pairs)
        return g


def _nodes_of(ids, count, ntype, what, kind="node"):
    """(ids, was_scalar), every id a node of ``ntype`` (``count`` nodes; with
    ``kind="edge"`` an edge of relation ``ntype``)."""
    ids, scalar = as_ids(ids, what)
    bad = torch.nonzero((ids < 0) | (ids >= count)).reshape(-1)
    if bad.numel():
        owner = "type" if kind == "node" else "relation"
        raise _C.TesseraError(f"{what}: {kind} {int(ids[bad[0]])} does not exist "
                              f"({owner} {ntype!r} has {count} {kind}s)")
    return ids, scalar


def _is_typed(graph):
    """Whether ``graph`` has several source types, destination types or
    relations: features then come per type (``{ntype: tensor}``)."""
    return isinstance(graph, Graph) and (len(graph._srcf) > 1 or len(graph._dstf) > 1
                                         or len(graph.canonical_etypes) > 1)


def graph(data, num_nodes=None, idtype=None, device=None, row_sorted=False, col_sorted=False):
    """A graph of one node type and one relation from ``(u, v)`` (DGL's
    ``dgl.graph``): node ids 0 .. num_nodes - 1 (default: the largest
    endpoint + 1). ``row_sorted`` / ``col_sorted`` are hints tessera does
    not need."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise _C.TesseraError("tessera.graph: data is (u, v), two tensors of endpoints")
    u, v = as_ids(data[0], "graph u")[0], as_ids(data[1], "graph v")[0]
    return heterograph({("_N", "_E", "_N"): (u, v)},
                       None if num_nodes is None else {"_N": int(num_nodes)}, device=device)


def heterograph(data_dict, num_nodes_dict=None, idtype=None, device=None):
    """A typed graph from ``{(src type, relation, dst type): (u, v)}`` (DGL's
    ``dgl.heterograph``); ``num_nodes_dict`` gives types' node counts
    (default: the largest id used + 1)."""
    if device is not None and torch.device(device).type != "cpu":
        raise _C.TesseraError("tessera.heterograph: graphs live on the CPU")
    rels, ends = [], []
    for key, value in data_dict.items():
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(x, str) for x in key)):
            raise _C.TesseraError(f"heterograph: a relation is (src type, name, dst type), "
                                  f"got {key!r}")
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise _C.TesseraError(f"heterograph: relation {key} needs (u, v)")
        u, v = as_ids(value[0], f"heterograph {key} u")[0], as_ids(value[1],
                                                                  f"heterograph {key} v")[0]
        if u.numel() != v.numel():
            raise _C.TesseraError(f"heterograph: relation {key} has {u.numel()} sources and "
                                  f"{v.numel()} destinations")
        rels.append(key)
        ends.append((u, v))
    counts = {}
    for (s, _, d), (u, v) in zip(rels, ends):
        for t, ids in ((s, u), (d, v)):
            if ids.numel() and int(ids.min()) < 0:
                raise _C.TesseraError(f"heterograph: negative node id in type {t!r}")
            counts[t] = max(counts.get(t, 0), int(ids.max()) + 1 if ids.numel() else 0)
    for t, n in (num_nodes_dict or {}).items():
        if t not in counts:
            counts[t] = 0
        if int(n) < counts[t]:
            raise _C.TesseraError(f"heterograph: num_nodes of {t!r} is {n}, but id "
                                  f"{counts[t] - 1} is used")
        counts[t] = int(n)
    # Types and relations sorted, as DGL orders them (relation ids follow).
    ntypes = sorted(counts)
    order = sorted(range(len(rels)), key=lambda i: rels[i])
    rels, ends = [rels[i] for i in order], [ends[i] for i in order]
    return Graph({t: counts[t] for t in ntypes}, rels,
                 [_Relation(counts[s], counts[d], u, dst=v)
                  for (s, _, d), (u, v) in zip(rels, ends)])


def norm_by_dst(g, etype=None):
    """DGL's ``dgl.norm_by_dst``: for each edge of relation ``etype``, one
    over the in-degree of its destination in that relation (float32 ``[E]``)."""
    v = g.edges(etype=etype)[1]
    _, inverse, count = torch.unique(v, return_inverse=True, return_counts=True)
    return 1.0 / count.index_select(0, inverse).to(torch.float32)


def to_bidirected(g, copy_ndata=False, readonly=None):
    """DGL's ``dgl.to_bidirected``: every relation (whose source and
    destination types are one) with each edge in both directions, as a
    simple graph (no duplicate edges; edges ordered by source, then
    destination). ``copy_ndata`` keeps the node data; edge data is dropped,
    as in DGL."""
    if not isinstance(g, Graph) or g.is_block:
        raise _C.TesseraError(f"to_bidirected: expected a graph, got {type(g).__name__}")
    rels = []
    for c in g.canonical_etypes:
        if c[0] != c[2]:
            raise _C.TesseraError(f"to_bidirected: relation {c} joins two node types; every "
                                  f"relation must stay within one type")
        r, n = g._rel[c], g.num_nodes(c[0])
        key = torch.unique(torch.cat([r.src * n + r.dst, r.dst * n + r.src]))
        rels.append(_Relation(n, n, key // max(n, 1), dst=key % max(n, 1)))
    out = Graph({t: f.num_rows for t, f in g._nodef.items()}, g.canonical_etypes, rels)
    if copy_ndata:
        for t, f in g._nodef.items():
            out._nodef[t].data.update(f.data)
    return out


def _plain_graph(g, what):
    if not isinstance(g, Graph) or g.is_block:
        raise _C.TesseraError(f"{what}: expected a graph, got {type(g).__name__}")


def _with_relation(g, c, rel, edata):
    """``g`` (node data shared) with relation ``c`` replaced by ``rel`` and
    its edge data by ``edata``; other relations keep theirs."""
    rels = [rel if x == c else g._rel[x] for x in g.canonical_etypes]
    out = Graph({t: f.num_rows for t, f in g._nodef.items()}, g.canonical_etypes, rels)
    for t, f in g._nodef.items():
        out._nodef[t].data.update(f.data)
    for x in g.canonical_etypes:
        out._ef[x].data.update(edata if x == c else g._ef[x].data)
    return out


def _one_type_relation(g, etype, what):
    c = g.to_canonical_etype(etype)
    if c[0] != c[2]:
        raise _C.TesseraError(f"{what}: relation {c} joins two node types; it needs one type "
                              f"at both ends")
    return c


def add_self_loop(g, edge_feat_names=None, fill_data=1.0, etype=None):
    """DGL's ``dgl.add_self_loop``: a new graph with an edge v -> v for every
    node v of relation ``etype``'s type, after the existing edges (ids E ..
    E + N - 1). Their data: ``fill_data`` for the ``edge_feat_names``
    (default: all), or with "sum" / "mean" / "max" / "min" that reduction of
    the node's in-edges' data; 0 for the other names."""
    _plain_graph(g, "add_self_loop")
    c = _one_type_relation(g, etype, "add_self_loop")
    reducers = ("sum", "mean", "max", "min")
    if isinstance(fill_data, str) and fill_data not in reducers:
        raise _C.TesseraError(f"add_self_loop: fill_data {fill_data!r} is not a number or one "
                              f"of {reducers}")
    r, old = g._rel[c], g._ef[c].data
    n = r.num_src
    names = list(old) if edge_feat_names is None else list(edge_feat_names)
    loops = {}
    for k in names:
        if k not in old:
            raise _C.TesseraError(f"add_self_loop: relation {c} has no edge data {k!r}")
        if isinstance(fill_data, str):
            from tessera import function
            with g.local_scope():
                g.update_all(function.copy_e(k, "h"), getattr(function, fill_data)("h", "h"),
                             etype=c)
                loops[k] = g._dstf[c[2]].data["h"]
        else:
            loops[k] = torch.full((n, *old[k].shape[1:]), fill_data, dtype=old[k].dtype)
    nodes = torch.arange(n, dtype=torch.int64)
    edata = {k: torch.cat([v, loops[k] if k in loops else v.new_zeros((n, *v.shape[1:]))])
             for k, v in old.items()}
    return _with_relation(g, c, _Relation(n, n, torch.cat([r.src, nodes]),
                                          dst=torch.cat([r.dst, nodes])), edata)


def remove_self_loop(g, etype=None):
    """DGL's ``dgl.remove_self_loop``: a new graph without relation
    ``etype``'s edges v -> v; the other edges keep their order and data."""
    _plain_graph(g, "remove_self_loop")
    c = _one_type_relation(g, etype, "remove_self_loop")
    r = g._rel[c]
    keep = torch.nonzero(r.src != r.dst).reshape(-1)
    return _with_relation(g, c, _Relation(r.num_src, r.num_dst, r.src.index_select(0, keep),
                                          dst=r.dst.index_select(0, keep)),
                          {k: v.index_select(0, keep) for k, v in g._ef[c].data.items()})


def reverse(g, copy_ndata=True, copy_edata=False, *, share_ndata=None, share_edata=None):
    """DGL's ``dgl.reverse``: every edge u -> v of relation (s, r, d)
    becomes v -> u of (d, r, s), with the same id; node data is kept with
    ``copy_ndata``, edge data with ``copy_edata``."""
    _plain_graph(g, "reverse")
    copy_ndata = copy_ndata if share_ndata is None else share_ndata
    copy_edata = copy_edata if share_edata is None else share_edata
    flipped = [(d, e, s) for s, e, d in g.canonical_etypes]
    out = Graph({t: f.num_rows for t, f in g._nodef.items()}, flipped,
                [_Relation(r.num_dst, r.num_src, r.dst, dst=r.src)
                 for r in (g._rel[c] for c in g.canonical_etypes)])
    if copy_ndata:
        for t, f in g._nodef.items():
            out._nodef[t].data.update(f.data)
    if copy_edata:
        for c, x in zip(g.canonical_etypes, flipped):
            out._ef[x].data.update(g._ef[c].data)
    return out


def _per_type(g, ids, kinds, what):
    """``ids`` (a tensor or bool mask on a graph of one type / relation, or
    ``{type: ids}``) as {type: int64 ids}, each checked against its count."""
    names = g.ntypes if kinds == "node" else g.canonical_etypes
    if not isinstance(ids, Mapping):
        if len(names) != 1:
            raise _C.TesseraError(f"{what}: the graph has several {kinds} types {names}; give "
                                  f"{{type: ids}}")
        ids = {names[0]: ids}
    out = {}
    for key, value in ids.items():
        t = key if kinds == "node" else g.to_canonical_etype(key)
        if t not in names:
            raise _C.TesseraError(f"{what}: unknown {kinds} type {t!r}; the graph has {names}")
        count = g.num_nodes(t) if kinds == "node" else g.num_edges(t)
        mask = torch.as_tensor(value) if not isinstance(value, torch.Tensor) else value
        if mask.dtype == torch.bool:
            if mask.numel() != count:
                raise _C.TesseraError(f"{what}: a mask of {mask.numel()} for {count} {kinds}s "
                                      f"of {t!r}")
            out[t] = torch.nonzero(mask.reshape(-1)).reshape(-1)
        else:
            out[t] = _nodes_of(value, count, t, what, "node" if kinds == "node" else "edge")[0]
    return out


def _first_seen(ids):
    """The distinct values of ``ids`` in the order they first appear."""
    order = torch.argsort(ids, stable=True)  # Equal values keep their positions' order.
    ranked = ids.index_select(0, order)
    first = torch.ones_like(ranked, dtype=torch.bool)
    first[1:] = ranked[1:] != ranked[:-1]
    return ids.index_select(0, torch.sort(order[first]).values)


def _subgraph(g, eids, nodes, store_ids, sources=None):
    """The graph of ``g``'s edges ``eids`` ({relation: ids}, in that order;
    none of a relation not given) over ``nodes`` ({type: ids}, relabelled in
    that order), or over all of g's nodes when ``nodes`` is None; data and,
    with ``store_ids``, NID / EID as DGL's subgraphs. ``sources`` may give a
    relation's new source ids (node_subgraph's, for repeated nodes)."""
    empty = torch.empty(0, dtype=torch.int64)
    eids = {c: eids.get(c, empty) for c in g.canonical_etypes}
    frames = g._nodef
    counts = {t: frames[t].num_rows if nodes is None else nodes[t].numel() for t in g.ntypes}
    rels = []
    for c in g.canonical_etypes:
        r, e = g._rel[c], eids[c]
        src, dst = r.src.index_select(0, e), r.dst.index_select(0, e)
        if nodes is not None:
            src = (sources[c] if sources is not None else
                   _lookup(nodes[c[0]], src, f"subgraph sources of {c}"))
            dst = _lookup(nodes[c[2]], dst, f"subgraph destinations of {c}")
        rels.append(_Relation(counts[c[0]], counts[c[2]], src, dst=dst))
    out = Graph(counts, g.canonical_etypes, rels)
    for t, f in out._nodef.items():
        f.data.update(frames[t].data if nodes is None else frames[t].subframe(nodes[t], "").data)
        if store_ids and nodes is not None:
            f.data[NID] = nodes[t]
    for c in g.canonical_etypes:
        out._ef[c].data.update(g._ef[c].subframe(eids[c], "").data)
        if store_ids:
            out._ef[c].data[EID] = eids[c]
    return out


def _relabelled(g, eids):
    """Per type the nodes of the edges ``eids``, relation by relation (in
    relation order) its sources, then its destinations, in the order they
    first appear (DGL's relabelling)."""
    ends = {t: [] for t in g.ntypes}
    for c in g.canonical_etypes:
        if c in eids:
            r = g._rel[c]
            ends[c[0]].append(r.src.index_select(0, eids[c]))
            ends[c[2]].append(r.dst.index_select(0, eids[c]))
    return {t: _first_seen(torch.cat(x)) if x else torch.empty(0, dtype=torch.int64)
            for t, x in ends.items()}


def node_subgraph(g, nodes, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``dgl.node_subgraph``: the edges among ``nodes`` (ids, a bool
    mask, or ``{ntype: ...}``), grouped by source in the order given; nodes
    relabelled in that order (``ndata[NID]``), ``edata[EID]`` the edges'."""
    _plain_graph(g, "node_subgraph")
    nodes = _per_type(g, nodes, "node", "node_subgraph")
    nodes = {t: nodes.get(t, torch.empty(0, dtype=torch.int64)) for t in g.ntypes}
    eids, sources = {}, {}
    for c in g.canonical_etypes:
        r = g._rel[c]
        # Each edge's source is the place of the node it was found from (a
        # repeated node's edges come again, from each place, as DGL's).
        e, place = r.edges_at(nodes[c[0]], out=True, places=True)
        keep = torch.isin(r.dst.index_select(0, e), nodes[c[2]])
        eids[c], sources[c] = e[keep], place[keep]
    return _subgraph(g, eids, nodes if relabel_nodes else None, store_ids,
                     sources if relabel_nodes else None)


def edge_subgraph(g, edges, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``dgl.edge_subgraph``: the edges ``edges`` (ids, a bool mask, or
    ``{etype: ...}``) in that order; with ``relabel_nodes`` only their nodes
    (sources, then destinations, by first appearance: ``ndata[NID]``)."""
    if not isinstance(g, Graph):  # A DistGraph: tessera.distributed's.
        from tessera import distributed
        return distributed.edge_subgraph(g, edges, relabel_nodes=relabel_nodes)
    _plain_graph(g, "edge_subgraph")
    eids = _per_type(g, edges, "relation", "edge_subgraph")
    return _subgraph(g, eids, _relabelled(g, eids) if relabel_nodes else None, store_ids)


def _adjacent_subgraph(g, nodes, out, relabel_nodes, store_ids, what):
    _plain_graph(g, what)
    nodes = _per_type(g, nodes, "node", what)
    eids = {c: g._rel[c].edges_at(nodes[c[0] if out else c[2]], out=out)
            for c in g.canonical_etypes if (c[0] if out else c[2]) in nodes}
    return _subgraph(g, eids, _relabelled(g, eids) if relabel_nodes else None, store_ids)


def in_subgraph(g, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``dgl.in_subgraph``: every in-edge of ``nodes``, grouped by node
    in the order given, over all of g's nodes (or only theirs with
    ``relabel_nodes``); ``edata[EID]`` the edges' ids. A DistGraph's is
    ``tessera.distributed.in_subgraph``."""
    if not isinstance(g, Graph):
        from tessera import distributed
        return distributed.in_subgraph(g, nodes)
    return _adjacent_subgraph(g, nodes, False, relabel_nodes, store_ids, "in_subgraph")


def out_subgraph(g, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``dgl.out_subgraph``: every out-edge of ``nodes``, as
    :func:`in_subgraph`."""
    return _adjacent_subgraph(g, nodes, True, relabel_nodes, store_ids, "out_subgraph")


Graph.subgraph = node_subgraph
Graph.edge_subgraph = edge_subgraph
Graph.in_subgraph = in_subgraph
Graph.out_subgraph = out_subgraph
Graph.add_self_loop = add_self_loop
Graph.remove_self_loop = remove_self_loop
Graph.reverse = reverse


def _lookup(nodes, ids, what):
    """The position of each of ``ids`` in ``nodes`` (distinct ids); an
    error naming ``what`` for an id that is not there."""
    sorted_nodes, order = torch.sort(nodes, stable=True)  # A repeated id: its first place.
    pos = torch.searchsorted(sorted_nodes, ids).clamp(max=max(nodes.numel() - 1, 0))
    if nodes.numel() == 0:
        hit = torch.zeros_like(ids, dtype=torch.bool)
    else:
        hit = sorted_nodes.index_select(0, pos) == ids
    if not bool(hit.all()):
        bad = int(ids[~hit][0])
        raise _C.TesseraError(f"{what}: node {bad} is not among them")
    return order.index_select(0, pos)


def _type_dict(g, nodes, what):
    """``nodes`` (a tensor on a one-type graph, else {ntype: ids}) per type."""
    if nodes is None:
        return None
    if not isinstance(nodes, Mapping):
        if len(g.ntypes) > 1:
            raise _C.TesseraError(f"to_block: the graph has several node types {g.ntypes}; "
                                  f"give {what} as {{ntype: ids}}")
        nodes = {g.ntypes[0]: nodes}
    out = {}
    for t, ids in nodes.items():
        if t not in g.ntypes:
            raise _C.TesseraError(f"to_block: {what} names unknown node type {t!r}; the graph "
                                  f"has {g.ntypes}")
        ids = as_ids(ids, f"to_block {what}")[0]
        if ids.numel() != torch.unique(ids).numel():
            raise _C.TesseraError(f"to_block: {what} of type {t!r} repeat a node")
        out[t] = ids
    return out


def to_block(g, dst_nodes=None, include_dst_in_src=True, src_nodes=None):
    """DGL's ``dgl.to_block``: the block whose destinations are
    ``dst_nodes`` (a tensor, or ``{ntype: ids}``; default: every node with
    an in-edge) and whose edges are all of ``g``'s (every edge must end at
    one of them). Sources: the destinations first (``include_dst_in_src``),
    then the other sources of each type in increasing id order (the
    loaders' order), or exactly ``src_nodes`` when given. ``srcdata`` /
    ``dstdata`` / ``edata`` hold ``g``'s data at those nodes and edges, with
    ``NID`` / ``EID`` the nodes' and edges' ids in ``g``, as DGL (a
    DistGraph frontier's nodes are the graph's; its edges' global ids are
    ``frontier.edata[EID][block.edata[EID]]``). Edges keep ``g``'s order."""
    if not isinstance(g, Graph) or g.is_block:
        raise _C.TesseraError(f"to_block: expected a graph (a frontier or subgraph), got "
                              f"{type(g).__name__}")
    ntypes = g.ntypes
    dst = _type_dict(g, dst_nodes, "dst_nodes")
    if dst is None:
        dst = {t: torch.unique(torch.cat([g._rel[c].dst for c in g.canonical_etypes
                                          if c[2] == t] or [torch.empty(0, dtype=torch.int64)]))
               for t in ntypes}
    dst = {t: dst.get(t, torch.empty(0, dtype=torch.int64)) for t in ntypes}
    for t, ids in dst.items():
        n = g.num_nodes(t)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n):
            raise _C.TesseraError(f"to_block: dst_nodes of type {t!r} are outside the graph's "
                                  f"{n} nodes")
    given_src = _type_dict(g, src_nodes, "src_nodes")
    src = {}
    for t in ntypes:
        if given_src is not None:
            src[t] = given_src.get(t, torch.empty(0, dtype=torch.int64))
            continue
        used = torch.unique(torch.cat([g._rel[c].src for c in g.canonical_etypes if c[0] == t]
                                      or [torch.empty(0, dtype=torch.int64)]))
        if include_dst_in_src:
            src[t] = torch.cat([dst[t], used[~torch.isin(used, dst[t])]])
        else:
            src[t] = used
    relations, eids = [], []
    for c in g.canonical_etypes:
        r = g._rel[c]
        u = _lookup(src[c[0]], r.src, f"to_block: the sources of type {c[0]!r} of relation {c}")
        v = _lookup(dst[c[2]], r.dst, f"to_block: the destinations of relation {c} "
                                      f"(dst_nodes of type {c[2]!r})")
        relations.append(_Relation(src[c[0]].numel(), dst[c[2]].numel(), u, dst=v))
        eids.append(None)
    b = Block.__new__(Block)
    b._build(ntypes, ntypes, g.canonical_etypes, src, dst, relations, eids)
    # g's data at the block's nodes and edges; NID / EID are the nodes' and
    # edges' ids in g (DGL's: a frontier's own EID is replaced by positions
    # in the frontier; its node ids are the DistGraph's).
    for t in ntypes:
        frame = g._nodef[t]
        for side, ids in ((b._srcf[t], src[t]), (b._dstf[t], dst[t])):
            side.data.update(frame.subframe(ids, side.what).data)
            side.data[NID] = ids
    for c in g.canonical_etypes:
        b._ef[c].data.update(g._ef[c].data)
        b._ef[c].data[EID] = torch.arange(g.num_edges(c), dtype=torch.int64)
    return b
