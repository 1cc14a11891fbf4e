"""DistGraph, work splitting and graph operations (the partition book is in
partition_book.py)."""
import os
import weakref
from collections.abc import MutableMapping

import torch

from tessera import _C, EID, NID
from tessera._utils import as_ids, as_seed, as_tensor, check_text
from tessera.distributed import context
from tessera.distributed.partition_book import GraphPartitionBook, _etype_str
from tessera.distributed.tensor import DistTensor, PartitionPolicy
from tessera.heterograph import Graph, _Relation

ALL = "__ALL__"
_made = []  # Weak references to the DistGraphs made (tessera.distributed.checkpoint's default).


class Scheme:
    """Shape of one row and dtype of a tensor (DGL's attribute scheme)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    def __eq__(self, other):
        return isinstance(other, Scheme) and (self.shape, self.dtype) == (other.shape,
                                                                            other.dtype)

    def __repr__(self):
        return f"Scheme(shape={self.shape}, dtype={self.dtype})"


class _DataView(MutableMapping):
    """g.ndata / g.edata, or with a type g.nodes[ntype].data / g.edges[etype].data
    (rows addressed by per-type ids): the graph's data by name, as DGL's view.

    It lists the partition's arrays of its type (read from the partition
    config; DGL lists the graph data that exists when the DistGraph is made)
    plus what this process assigned, less what it deleted: other named
    tensors of the job (a ``DistTensor`` made by name, a ``DistEmbedding``,
    optimizer state) are not listed. Assignment and ``del`` change this
    process's view only (as in DGL; the tensors themselves stay). Reading a
    name it does not list still gives the job's tensor of that name, if one
    exists (a tessera extension; DGL raises ``KeyError``)."""

    def __init__(self, graph, kind, type_name=None):
        self._graph, self._kind, self._type = graph, kind, type_name
        self._items = None  # name -> DistTensor, or None until first read.
        self._others = {}   # Tensors read by names the view does not list.

    def _what(self, name):
        if self._type is None:
            return f"g.{self._kind[0]}data['{name}']"
        return f"data['{name}'] of {self._kind} type '{self._type}'"

    def _entries(self):
        if self._items is None:
            self._items = dict.fromkeys(self._graph._graph_data(self._kind, self._type))
        return self._items

    def _names(self):
        return list(self._entries())

    def _fetch(self, name):
        g, node = self._graph._g, self._kind == "node"
        try:
            if self._type is not None:
                handle = g.type_data(node, self._type, name)
            else:
                handle = g.ndata(name) if node else g.edata(name)
        except _C.TesseraError as e:
            raise KeyError(f"{self._what(name)} does not exist: {e}") from None
        return DistTensor._wrap(handle)

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"{self._kind} data names are strings, got {type(name).__name__}")
        items = self._entries()
        if name in items:
            if items[name] is None:
                items[name] = self._fetch(name)
            return items[name]
        if name not in self._others:
            self._others[name] = self._fetch(name)
        return self._others[name]

    def __setitem__(self, name, value):
        if not isinstance(name, str):
            raise TypeError(f"{self._kind} data names are strings, got {type(name).__name__}")
        check_text(name, f"{self._kind} data name")
        if not isinstance(value, DistTensor):
            raise TypeError(f"{self._what(name)} must be a DistTensor, got "
                            f"{type(value).__name__} (create one with DistTensor(...))")
        count = self._graph.num_nodes if self._kind == "node" else self._graph.num_edges
        want = count() if self._type is None else count(self._type)
        if value.shape[0] != want:
            whose = "the graph" if self._type is None else "the type"
            raise _C.TesseraError(f"{self._what(name)}: the tensor has {value.shape[0]} rows, "
                                  f"{whose} {want} {self._kind}s")
        self._entries()[name] = value

    def __delitem__(self, name):
        """Removes ``name`` from this process's view (DGL); the tensor stays."""
        items = self._entries()
        if name not in items:
            raise KeyError(f"{self._what(name)}: no such {self._kind} data in this view")
        del items[name]
        self._others.pop(name, None)

    def __contains__(self, name):
        return isinstance(name, str) and name in self._entries()

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._entries())

    def __repr__(self):
        return f"{{{', '.join(repr(n) for n in self._names())}}}"


class _TypeView:
    def __init__(self, data, type_name=None):
        self.data = data
        self.type_name = type_name


class _TypeAccess:
    """g.nodes[ntype].data / g.edges[etype].data (etype: a relation name or a
    canonical (src, relation, dst) tuple)."""

    def __init__(self, graph, kind):
        self._graph, self._kind, self._views = graph, kind, {}

    def __getitem__(self, key):
        g = self._graph
        if g.is_homogeneous:  # One type: "_N", or the name the partition keeps.
            c = g.canonical_etypes[0]
            valid = (("_N", g.ntypes[0], None) if self._kind == "node" else
                     ("_E", ("_N", "_E", "_N"), "_N:_E:_N", c[1], c, ":".join(c), None))
            if key not in valid:
                raise KeyError(f"unknown {self._kind} type {key!r}: this graph is homogeneous "
                               f"({valid[0]})")
            return _TypeView(g.ndata if self._kind == "node" else g.edata, valid[0])
        if key is None:
            types = g.ntypes if self._kind == "node" else g.canonical_etypes
            if len(types) != 1:
                raise _C.TesseraError(f"g.{self._kind}s[None]: the graph has several "
                                      f"{self._kind} types {types}; name one")
            key = types[0]
        if self._kind == "node" and not isinstance(key, str):
            raise TypeError(f"a node type is a string, got {key!r}")
        text = key if self._kind == "node" else _etype_str(key)
        try:
            name = g._g.type_name_of(self._kind == "node", text)
        except _C.TesseraError as e:
            raise KeyError(str(e)) from None
        if name not in self._views:
            self._views[name] = _TypeView(_DataView(g, self._kind, name), name)
        return self._views[name]


def _frontier(g, per_relation, typed):
    """The graph of sampled edges over every node of ``g`` (DGL's frontier):
    per relation ``(src, dst, eids)`` in per-type ids, ``edata[EID]`` the
    edge ids; or, given one ``(src, dst, eids)`` of homogeneous ids (seeds
    given as a tensor, also on a typed graph), a graph of one node type and
    one relation over the homogeneous ids (``typed`` False; docs/python.md)."""
    if not typed:
        counts, rels = {"_N": g.num_nodes()}, [("_N", "_E", "_N")]
    else:
        counts = {t: g.num_nodes(t) if len(g.ntypes) > 1 else g.num_nodes() for t in g.ntypes}
        rels = g.canonical_etypes
    out = Graph(counts, rels, [_Relation(counts[c[0]], counts[c[2]], s, dst=d)
                               for c, (s, d, _) in zip(rels, per_relation)])
    for c, (_, _, e) in zip(rels, per_relation):
        out._ef[c].data[EID] = e
    return out


class _KVClient:
    """What DGL's scripts reach of its KVClient through ``g._client`` (DGL's
    own examples call ``g._client.barrier()``): the job's barrier and this
    client's ids. The rest of DGL's KVClient is internal to it."""

    def __init__(self, graph):
        self._graph = weakref.ref(graph)  # No cycle: the graph keeps this one.

    def barrier(self):
        self._graph().barrier()

    @property
    def client_id(self):
        return self._graph().rank()

    @property
    def machine_id(self):
        return context.info()["machine_id"]


class DistGraph:
    """The partitioned graph: structure and data served by the job's servers
    (or, standalone, a one-part partition loaded in process).

    ``DistGraph(graph_name, part_config=None)``; ``part_config`` is needed
    standalone. There is one graph per job; construct it after
    :func:`initialize`.
    """

    def __init__(self, graph_name, gpb=None, part_config=None):
        if not isinstance(graph_name, str):
            raise TypeError(f"DistGraph: graph_name must be a string, got {graph_name!r}")
        check_text(graph_name, "DistGraph: graph_name")
        if part_config is not None:
            check_text(str(part_config), "DistGraph: part_config")
        self._g = _C.DistGraph(graph_name, part_config or "")
        _made.append(weakref.ref(self))  # For tessera.distributed.checkpoint.
        self._book = GraphPartitionBook(self._g.partition_book())
        self._ntypes = list(self._g.ntypes())
        self._canonical = [tuple(e) for e in self._g.canonical_etypes()]
        info = context._state["info"]
        # The config the servers (standalone: this process) loaded, absolute
        # (local_partition must not follow a later chdir).
        config = (info["part_config"] if info and not info["standalone"]
                  and info["part_config"] else part_config)
        self._part_config = os.path.abspath(str(config)) if config else None
        self._gdata = self._read_graph_data()
        self._local_partition = None
        self._ndata = _DataView(self, "node")
        self._edata = _DataView(self, "edge")
        self.nodes = _TypeAccess(self, "node")
        self.edges = _TypeAccess(self, "edge")

    def _read_graph_data(self):
        """{(kind, type name): [names]}: the partition's arrays, by the
        config's ``tessera.node_feats`` / ``edge_feats`` ("<type>/<name>" on a
        typed partition). Without them (a config tessera cannot read here),
        the tensors of the job when the graph is made, as DGL's rule."""
        node_types = list(self._ntypes)
        edge_types = [":".join(c) for c in self._canonical]
        out = {("node", t): [] for t in node_types}
        out.update({("edge", t): [] for t in edge_types})
        try:
            lists = dict(zip(("node", "edge"), _C.partition_array_names(self._part_config)))
        except (TypeError, _C.TesseraError):  # (TypeError: None, not tessera's config.)
            for kind, types in (("node", node_types), ("edge", edge_types)):
                for t in types:
                    out[(kind, t)] = [n for n in self._g.type_schemes(kind == "node", t)
                                      if not n.startswith("anonymous-")]
            return out
        typed = not self._book.is_homogeneous
        for kind, names in lists.items():
            for name in names:
                if typed:
                    type_, _, name = str(name).rpartition("/")
                else:
                    type_ = node_types[0] if kind == "node" else edge_types[0]
                if (kind, type_) in out:
                    out[(kind, type_)].append(str(name))
        return out

    def _graph_data(self, kind, type_name):
        """The names of the partition's arrays of ``type_name`` (None: the
        graph's only node type or relation)."""
        if type_name is None:
            type_name = self._ntypes[0] if kind == "node" else ":".join(self._canonical[0])
        return list(self._gdata.get((kind, type_name), []))

    graph_name = property(lambda self: self._g.graph_name())
    ntypes = property(lambda self: list(self._ntypes))
    etypes = property(lambda self: [e[1] for e in self._canonical])
    canonical_etypes = property(lambda self: list(self._canonical))
    idtype = property(lambda self: torch.int64)
    device = property(lambda self: torch.device("cpu"))
    is_homogeneous = property(lambda self: len(self._ntypes) == 1 and len(self._canonical) == 1)

    @property
    def ndata(self):
        """The node data of a graph with one node type (as DGL asserts)."""
        if len(self._ntypes) != 1:
            raise _C.TesseraError(f"g.ndata only works for a graph with one node type; this "
                                  f"graph has {self._ntypes}: use g.nodes[ntype].data")
        return self._ndata

    @property
    def edata(self):
        """The edge data of a graph with one relation (as DGL asserts)."""
        if len(self._canonical) != 1:
            raise _C.TesseraError(f"g.edata only works for a graph with one edge type; this "
                                  f"graph has {self._canonical}: use g.edges[etype].data")
        return self._edata

    def num_nodes(self, ntype=None):
        """Nodes of type ``ntype`` (None: of every type)."""
        if ntype is None:
            return self._g.num_nodes()
        if not isinstance(ntype, str):
            raise TypeError(f"a node type is a string, got {ntype!r}")
        return self._g.num_nodes_of(ntype)

    def num_edges(self, etype=None):
        """Edges of relation ``etype`` (a name or canonical tuple; None: every edge)."""
        if etype is None:
            return self._g.num_edges()
        return self._g.num_edges_of(_etype_str(etype))

    def get_ntype_id(self, ntype):
        if not isinstance(ntype, str):
            raise TypeError(f"a node type is a string, got {ntype!r}")
        return self._g.get_ntype_id(ntype)

    def get_etype_id(self, etype):
        return self._g.get_etype_id(_etype_str(etype))

    def to_canonical_etype(self, etype):
        return tuple(self._g.to_canonical_etype(_etype_str(etype)))

    def map_to_per_ntype(self, ids):
        return self._book.map_to_per_ntype(ids)

    def map_to_per_etype(self, ids):
        return self._book.map_to_per_etype(ids)

    def map_to_homo_nid(self, ids, ntype):
        return self._book.map_to_homo_nid(ids, ntype)

    def map_to_homo_eid(self, ids, etype):
        return self._book.map_to_homo_eid(ids, etype)

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def _schemes(self, kind):
        """The schemes of the tensors the data views list (DGL reads them
        from ``g.ndata``); with several types, keyed "<type>/<name>"."""
        types = self._ntypes if kind == "node" else self._canonical
        if len(types) == 1:
            view = self._ndata if kind == "node" else self._edata
            return {n: Scheme(view[n].shape[1:], view[n].dtype) for n in view}
        access = self.nodes if kind == "node" else self.edges
        out = {}
        for t in types:
            view = access[t].data
            prefix = t if kind == "node" else ":".join(t)
            out.update({f"{prefix}/{n}": Scheme(view[n].shape[1:], view[n].dtype)
                        for n in view})
        return out

    def node_attr_schemes(self):
        """``{name: Scheme}`` of ``g.ndata`` (what it lists, in this process)."""
        return self._schemes("node")

    def edge_attr_schemes(self):
        """``{name: Scheme}`` of ``g.edata``."""
        return self._schemes("edge")

    @property
    def local_partition(self):
        """This machine's partition as DGL's local graph (``load_partition``'s
        graph: the inner nodes and their HALO neighbours, ``NID`` / ``EID``,
        ``inner_node`` / ``inner_edge``). Read from the partition files on
        first use and kept: a copy in this process (DGL maps the server's
        shared memory)."""
        if self._local_partition is None:
            from tessera.partition import load_partition
            if not self._part_config:
                raise _C.TesseraError("DistGraph.local_partition: no partition config is known "
                                      "to this process")
            self._local_partition = load_partition(self._part_config, self._book.partid,
                                                   load_feats=False)[0]
        return self._local_partition

    def get_partition_book(self):
        return self._book

    def get_node_partition_policy(self, ntype="_N"):
        if ntype == "_N" and self.is_homogeneous:
            return PartitionPolicy("node~_N", self._book)
        return PartitionPolicy(f"node~{self._book.ntypes[self._book.get_ntype_id(ntype)]}",
                               self._book)

    def get_edge_partition_policy(self, etype="_E"):
        if self.is_homogeneous:
            self._book.get_etype_id(etype)
            return PartitionPolicy("edge~_N:_E:_N", self._book)
        return PartitionPolicy("edge~" + ":".join(self._book.to_canonical_etype(etype)),
                               self._book)

    def rank(self):
        return self._g.rank()

    def barrier(self):
        self._g.barrier()

    @property
    def _client(self):
        if "_kvclient" not in self.__dict__:
            self._kvclient = _KVClient(self)
        return self._kvclient

    def find_edges(self, edges, etype=None):
        """Endpoints of edges. With ``etype``, per-relation edge ids in and the
        endpoints' per-type ids out (DGL); without, homogeneous ids."""
        ids, _ = as_ids(edges, "find_edges")
        if etype is None:
            return self._g.find_edges(ids)
        return self._g.find_edges_of(ids, _etype_str(etype))

    def _degrees(self, v, etype, what):
        # One id (an int) gives a one-element tensor, as DGL's DistGraph
        # (its docstring promises an int; DGLGraph's in-memory degrees do).
        ids = None if isinstance(v, str) and v == ALL else as_ids(v, what)[0]
        if etype is None:
            return getattr(self._g, what)(ids)
        return getattr(self._g, what + "_of")(ids, _etype_str(etype))

    def in_degrees(self, v=ALL, etype=None):
        """In-degrees; with ``etype``, in-edges of that relation only, ``v`` in
        per-type ids of its destination type (DGL's heterograph in_degrees)."""
        return self._degrees(v, etype, "in_degrees")

    def out_degrees(self, u=ALL, etype=None):
        """Out-degrees; with ``etype``, of that relation only, ``u`` in per-type
        ids of its source type."""
        return self._degrees(u, etype, "out_degrees")

    def sample_neighbors(self, seed_nodes, fanout, edge_dir="in", prob=None,
                         exclude_edges=None, replace=False, etype_sorted=True,
                         output_device=None):
        return sample_neighbors(self, seed_nodes, fanout, edge_dir, prob, exclude_edges, replace)

    def edge_subgraph(self, edges, relabel_nodes=True, store_ids=True):
        if not relabel_nodes:
            raise ValueError("edge_subgraph: only relabel_nodes=True is supported (as in DGL)")
        return edge_subgraph(self, edges)

    def __repr__(self):
        return (f"DistGraph(name='{self.graph_name}', num_nodes={self.num_nodes()}, "
                f"num_edges={self.num_edges()})")


def _seed_ids(g, nodes, what):
    if isinstance(nodes, dict) and not g.is_homogeneous:
        return {str(k): as_ids(v, what)[0] for k, v in nodes.items()}
    if isinstance(nodes, dict):
        if len(nodes) != 1 or next(iter(nodes)) not in ("_N", g.ntypes[0]):
            raise _C.TesseraError(f"{what}: this graph has one node type {g.ntypes[0]!r}; got "
                                  f"node types {list(nodes)}")
        nodes = next(iter(nodes.values()))
    return as_ids(nodes, what)[0]


def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, exclude_edges=None,
                     replace=False, use_graphbolt=False, seed=None):
    """Up to ``fanout`` (-1: all) in- (or out-) edges of each node, sampled
    where the nodes live. ``prob`` names an edge tensor of weights. Excluded
    edges are never sampled and the fanout is still filled (DGL 1.1.3's
    ``DistGraph.sample_neighbors`` ignores ``exclude_edges``, and its
    ``dgl.distributed.sample_neighbors`` has no such argument)."""
    from tessera.distributed.loader import _fanout_arg
    seeds = _seed_ids(g, nodes, "sample_neighbors")
    fanout, fanouts = _fanout_arg(g, fanout, "sample_neighbors")
    if isinstance(exclude_edges, dict):
        # DGL: {etype: per-relation ids} -> homogeneous ids.
        exclude_edges = torch.cat([g.map_to_homo_eid(as_ids(v, "exclude_edges")[0], k)
                                   for k, v in exclude_edges.items()] or
                                  [torch.empty(0, dtype=torch.int64)])
    exclude = None if exclude_edges is None else as_ids(exclude_edges, "exclude_edges")[0]
    if prob is not None and not isinstance(prob, str):
        raise TypeError("sample_neighbors: prob must be the name of an edge tensor")
    if seed is not None:
        seed = as_seed(seed, "sample_neighbors: seed")
    out = _C.sample_neighbors_typed(g._g, seeds, fanout, fanouts, edge_dir, prob or "",
                                    exclude, bool(replace), seed)
    typed = isinstance(seeds, dict)
    return _frontier(g, out if typed else [out], typed)


def in_subgraph(g, nodes):
    """Every in-edge of ``nodes`` (typed nodes {ntype: ids}: by relation)."""
    seeds = _seed_ids(g, nodes, "in_subgraph")
    if isinstance(seeds, dict):
        return sample_neighbors(g, seeds, -1, seed=0)
    return _frontier(g, [_C.in_subgraph(g._g, seeds)], False)


def edge_subgraph(g, edges, relabel_nodes=True):
    """The edges ``edges`` with their endpoints relabelled 0..n-1:
    ``ndata[NID]`` their ids in ``g``, ``edata[EID]`` the edges'."""
    src, dst, nodes, eids = _C.edge_subgraph(g._g, as_ids(edges, "edge_subgraph")[0])
    out = Graph({"_N": nodes.numel()}, [("_N", "_E", "_N")],
                [_Relation(nodes.numel(), nodes.numel(), src, dst=dst)])
    out.ndata[NID], out.edata[EID] = nodes, eids
    return out


def manual_seed(seed):
    """Seeds the stream that sampling calls without a seed of their own draw
    from (as ``torch.manual_seed``: a negative seed is taken modulo 2**64)."""
    _C.manual_seed(as_seed(seed, "manual_seed: seed"))


def find_edges(g, edge_ids):
    return g.find_edges(edge_ids)


def _split(kind, items, partition_book, rank, force_even, trainer_ids, type_=None):
    native = _C.node_split if kind == "node" else _C.edge_split
    native_dist = _C.node_split_dist if kind == "node" else _C.edge_split_dist
    if isinstance(trainer_ids, DistTensor):
        trainer_ids = trainer_ids[torch.arange(len(trainer_ids))]
    elif trainer_ids is not None:
        trainer_ids = as_tensor(trainer_ids)
    r = -1 if rank is None else int(rank)
    if isinstance(items, DistTensor):
        if items.dtype.is_floating_point or items.dtype.is_complex:
            # As a local float mask: never a mask read through int(value).
            raise _C.TesseraError(f"{kind}_split: the mask DistTensor '{items.name}' is "
                                  f"{items.dtype}; a mask is bool or integer (0 / 1)")
        book = (partition_book or GraphPartitionBook(items._t.book()))._native()
        return native_dist(items._t, book, bool(force_even), trainer_ids, r, -1, "")
    if partition_book is None:
        raise _C.TesseraError(f"{kind}_split: pass partition_book with a local tensor")
    items = as_tensor(items)
    if type_ is not None:  # Checks the name (a clear error for an unknown type).
        partition_book.get_ntype_id(type_) if kind == "node" else partition_book.get_etype_id(type_)
    total = (partition_book.num_nodes(type_) if kind == "node"
             else partition_book.num_edges(type_))
    # DGL reads a local tensor as a mask: an integer 0/1 vector of one entry per
    # node (edge) is one, not ids.
    if (items.dim() == 1 and items.numel() == total and not items.is_floating_point()
            and items.dtype != torch.bool and bool(((items == 0) | (items == 1)).all())):
        items = items.bool()
    return native(items, partition_book._native(), bool(force_even), trainer_ids, r, -1,
                  "" if type_ is None else (type_ if kind == "node" else _etype_str(type_)))


def node_split(nodes, partition_book=None, ntype="_N", rank=None, force_even=True,
               node_trainer_ids=None):
    """This trainer's share of the nodes selected by ``nodes`` (a boolean mask
    over all nodes, as a DistTensor or tensor, or node ids): every node goes to
    exactly one trainer, own-partition nodes first; with ``force_even`` the
    counts differ by at most one. On a heterograph, ``ntype`` names the node
    type the mask (or ids) is of, and the result is per-type ids of it."""
    return _split("node", nodes, partition_book, rank, force_even, node_trainer_ids,
                  None if ntype == "_N" else ntype)


def edge_split(edges, partition_book=None, etype="_E", rank=None, force_even=True,
               edge_trainer_ids=None):
    """This trainer's share of the edges selected by ``edges`` (see node_split)."""
    if etype in ("_E", ("_N", "_E", "_N"), "_N:_E:_N"):
        etype = None
    return _split("edge", edges, partition_book, rank, force_even, edge_trainer_ids, etype)
