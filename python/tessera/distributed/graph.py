"""DistGraph, the partition book, work splitting and graph operations."""
from collections.abc import MutableMapping

import torch

from tessera import _C, EID, NID
from tessera._utils import as_ids, as_tensor
from tessera.distributed.tensor import DistTensor, PartitionPolicy

ALL = "__ALL__"


class GraphPartitionBook:
    """dgl.distributed.GraphPartitionBook for range partitions: partition p owns
    the global node ids [node_offsets[p], node_offsets[p+1]) (edges alike)."""

    def __init__(self, handle=None, node_offsets=None, edge_offsets=None, partid=0):
        self._book = handle
        if handle is not None:
            node_offsets, edge_offsets, partid = (handle.node_offsets(), handle.edge_offsets(),
                                                  handle.partid)
        self._nodes = as_tensor(node_offsets).to(torch.int64)
        self._edges = as_tensor(edge_offsets).to(torch.int64)
        self._partid = int(partid)

    @property
    def partid(self):
        return self._partid

    def num_nodes(self):
        return int(self._nodes[-1])

    def num_edges(self):
        return int(self._edges[-1])

    def num_partitions(self):
        return self._nodes.numel() - 1

    @property
    def ntypes(self):
        return ["_N"]

    @property
    def etypes(self):
        return ["_E"]

    @property
    def canonical_etypes(self):
        return [("_N", "_E", "_N")]

    def metadata(self):
        return [{"machine_id": p,
                 "num_nodes": int(self._nodes[p + 1] - self._nodes[p]),
                 "num_edges": int(self._edges[p + 1] - self._edges[p])}
                for p in range(self.num_partitions())]

    def _owner(self, offsets, ids, what):
        ids, _ = as_ids(ids, what)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= int(offsets[-1])):
            raise _C.TesseraError(f"{what}: ids must be in [0, {int(offsets[-1])})")
        return torch.searchsorted(offsets, ids, right=True) - 1

    def nid2partid(self, nids, ntype="_N"):
        return self._owner(self._nodes, nids, "nid2partid")

    def eid2partid(self, eids, etype="_E"):
        return self._owner(self._edges, eids, "eid2partid")

    def partid2nids(self, partid, ntype="_N"):
        return torch.arange(int(self._nodes[partid]), int(self._nodes[partid + 1]))

    def partid2eids(self, partid, etype="_E"):
        return torch.arange(int(self._edges[partid]), int(self._edges[partid + 1]))

    def nid2localnid(self, nids, partid, ntype="_N"):
        ids, _ = as_ids(nids, "nid2localnid")
        return ids - self._nodes[partid]

    def eid2localeid(self, eids, partid, etype="_E"):
        ids, _ = as_ids(eids, "eid2localeid")
        return ids - self._edges[partid]

    def map_to_per_ntype(self, ids):
        ids, _ = as_ids(ids, "map_to_per_ntype")
        return torch.zeros_like(ids), ids

    def map_to_per_etype(self, ids):
        ids, _ = as_ids(ids, "map_to_per_etype")
        return torch.zeros_like(ids), ids

    def map_to_homo_nid(self, ids, ntype="_N"):
        return as_ids(ids, "map_to_homo_nid")[0]

    def map_to_homo_eid(self, ids, etype="_E"):
        return as_ids(ids, "map_to_homo_eid")[0]

    def _native(self):
        if self._book is None:
            raise _C.TesseraError("this partition book is not the one of a DistGraph")
        return self._book


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
    """g.ndata / g.edata: the graph's tensors by name. Assignment registers a
    DistTensor under a name in this process only (as in DGL)."""

    def __init__(self, graph, kind):
        self._graph, self._kind, self._local, self._cache = graph, kind, {}, {}

    def _names(self):
        schemes = (self._graph._g.node_attr_schemes() if self._kind == "node"
                   else self._graph._g.edge_attr_schemes())
        return [n for n in schemes if not n.startswith("anonymous-")] + [
            n for n in self._local if n not in schemes]

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"{self._kind} data names are strings, got {type(name).__name__}")
        if name in self._local:
            return self._local[name]
        if name not in self._cache:
            try:
                handle = (self._graph._g.ndata(name) if self._kind == "node"
                          else self._graph._g.edata(name))
            except _C.TesseraError as e:
                raise KeyError(f"{self._kind} data '{name}' does not exist: {e}") from None
            self._cache[name] = DistTensor._wrap(handle)
        return self._cache[name]

    def __setitem__(self, name, value):
        if not isinstance(value, DistTensor):
            raise TypeError(f"g.{self._kind[0]}data['{name}'] must be a DistTensor, got "
                            f"{type(value).__name__} (create one with DistTensor(...))")
        want = self._graph.num_nodes() if self._kind == "node" else self._graph.num_edges()
        if value.shape[0] != want:
            raise _C.TesseraError(f"g.{self._kind[0]}data['{name}']: the tensor has "
                                  f"{value.shape[0]} rows, the graph {want} {self._kind}s")
        self._local[name] = value

    def __delitem__(self, name):
        if name in self._local:
            del self._local[name]
        else:
            raise KeyError(f"{self._kind} data '{name}' was not assigned in this process")

    def __contains__(self, name):
        return isinstance(name, str) and name in self._names()

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def __repr__(self):
        return f"{{{', '.join(repr(n) for n in self._names())}}}"


class _TypeView:
    def __init__(self, data):
        self.data = data


class _TypeAccess:
    """g.nodes[ntype].data / g.edges[etype].data for the single type."""

    def __init__(self, graph, kind):
        self._graph, self._kind = graph, kind

    def __getitem__(self, key):
        valid = ("_N", None) if self._kind == "node" else ("_E", ("_N", "_E", "_N"), None)
        if key not in valid:
            raise KeyError(f"unknown {self._kind} type {key!r}: this graph is homogeneous "
                           f"({valid[0]})")
        return _TypeView(self._graph.ndata if self._kind == "node" else self._graph.edata)


class SampledGraph:
    """The edges a sampling call returned, over every node of the graph (DGL's
    frontier): ``edges()`` in global ids, ``edata[EID]`` the global edge ids."""

    def __init__(self, src, dst, eids, num_nodes):
        self._src, self._dst, self._num_nodes = src, dst, num_nodes
        self.edata = {EID: eids}
        self.ndata = {}

    def edges(self, form="uv"):
        if form == "uv":
            return self._src, self._dst
        if form == "eid":
            return self.edata[EID]
        if form == "all":
            return self._src, self._dst, self.edata[EID]
        raise ValueError(f"edges(form=...) must be 'uv', 'eid' or 'all', got {form!r}")

    def num_edges(self):
        return self._src.numel()

    def num_nodes(self):
        return self._num_nodes

    number_of_edges = num_edges
    number_of_nodes = num_nodes


class EdgeSubgraph(SampledGraph):
    """edge_subgraph's result: relabelled nodes; ``ndata[NID]`` their global ids."""

    def __init__(self, src, dst, nodes, eids):
        super().__init__(src, dst, eids, nodes.numel())
        self.ndata = {NID: nodes}


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
        self._g = _C.DistGraph(graph_name, part_config or "")
        self._book = GraphPartitionBook(self._g.partition_book())
        self.ndata = _DataView(self, "node")
        self.edata = _DataView(self, "edge")
        self.nodes = _TypeAccess(self, "node")
        self.edges = _TypeAccess(self, "edge")

    graph_name = property(lambda self: self._g.graph_name())
    ntypes = property(lambda self: ["_N"])
    etypes = property(lambda self: ["_E"])
    canonical_etypes = property(lambda self: [("_N", "_E", "_N")])
    idtype = property(lambda self: torch.int64)
    device = property(lambda self: torch.device("cpu"))
    is_homogeneous = property(lambda self: True)

    def num_nodes(self, ntype=None):
        return self._g.num_nodes()

    def num_edges(self, etype=None):
        return self._g.num_edges()

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def node_attr_schemes(self):
        return {n: Scheme(s, d) for n, (s, d) in self._g.node_attr_schemes().items()
                if not n.startswith("anonymous-")}

    def edge_attr_schemes(self):
        return {n: Scheme(s, d) for n, (s, d) in self._g.edge_attr_schemes().items()
                if not n.startswith("anonymous-")}

    def get_partition_book(self):
        return self._book

    def get_node_partition_policy(self, ntype="_N"):
        return PartitionPolicy("node~_N", self._book)

    def get_edge_partition_policy(self, etype="_E"):
        return PartitionPolicy("edge~_N:_E:_N", self._book)

    def rank(self):
        return self._g.rank()

    def barrier(self):
        self._g.barrier()

    def find_edges(self, edges, etype=None):
        ids, _ = as_ids(edges, "find_edges")
        return self._g.find_edges(ids)

    def in_degrees(self, v=ALL):
        if isinstance(v, str) and v == ALL:
            return self._g.in_degrees(None)
        ids, scalar = as_ids(v, "in_degrees")
        out = self._g.in_degrees(ids)
        return int(out[0]) if scalar else out

    def out_degrees(self, u=ALL):
        if isinstance(u, str) and u == ALL:
            return self._g.out_degrees(None)
        ids, scalar = as_ids(u, "out_degrees")
        out = self._g.out_degrees(ids)
        return int(out[0]) if scalar else out

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
    if isinstance(nodes, dict):
        if len(nodes) != 1 or next(iter(nodes)) != "_N":
            raise _C.TesseraError(f"{what}: this graph has one node type '_N'; got node types "
                                  f"{list(nodes)}")
        nodes = next(iter(nodes.values()))
    return as_ids(nodes, what)[0]


def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, exclude_edges=None,
                     replace=False, use_graphbolt=False, seed=None):
    """Up to ``fanout`` (-1: all) in- (or out-) edges of each node, sampled
    where the nodes live. ``prob`` names an edge tensor of weights. Excluded
    edges are never sampled and the fanout is still filled (DGL filters
    after sampling, which leaves fewer neighbours)."""
    seeds = _seed_ids(g, nodes, "sample_neighbors")
    if isinstance(fanout, dict):
        if len(fanout) != 1:
            raise _C.TesseraError("sample_neighbors: per-relation fanouts need a heterograph")
        fanout = next(iter(fanout.values()))
    exclude = None if exclude_edges is None else as_ids(exclude_edges, "exclude_edges")[0]
    if prob is not None and not isinstance(prob, str):
        raise TypeError("sample_neighbors: prob must be the name of an edge tensor")
    src, dst, eids = _C.sample_neighbors(g._g, seeds, int(fanout), edge_dir, prob or "",
                                         exclude, bool(replace), seed)
    return SampledGraph(src, dst, eids, g.num_nodes())


def in_subgraph(g, nodes):
    """Every in-edge of ``nodes``."""
    src, dst, eids = _C.in_subgraph(g._g, _seed_ids(g, nodes, "in_subgraph"))
    return SampledGraph(src, dst, eids, g.num_nodes())


def edge_subgraph(g, edges, relabel_nodes=True):
    """The edges ``edges`` with their endpoints relabelled 0..n-1."""
    src, dst, nodes, eids = _C.edge_subgraph(g._g, as_ids(edges, "edge_subgraph")[0])
    return EdgeSubgraph(src, dst, nodes, eids)


def find_edges(g, edge_ids):
    return g.find_edges(edge_ids)


def _split(kind, items, partition_book, rank, force_even, trainer_ids):
    native = _C.node_split if kind == "node" else _C.edge_split
    native_dist = _C.node_split_dist if kind == "node" else _C.edge_split_dist
    if isinstance(trainer_ids, DistTensor):
        trainer_ids = trainer_ids[torch.arange(len(trainer_ids))]
    elif trainer_ids is not None:
        trainer_ids = as_tensor(trainer_ids)
    r = -1 if rank is None else int(rank)
    if isinstance(items, DistTensor):
        book = (partition_book or GraphPartitionBook(items._t.book()))._native()
        return native_dist(items._t, book, bool(force_even), trainer_ids, r, -1)
    if partition_book is None:
        raise _C.TesseraError(f"{kind}_split: pass partition_book with a local tensor")
    items = as_tensor(items)
    total = (partition_book.num_nodes() if kind == "node" else partition_book.num_edges())
    # DGL reads a local tensor as a mask: an integer 0/1 vector of one entry per
    # node (edge) is one, not ids.
    if (items.dim() == 1 and items.numel() == total and not items.is_floating_point()
            and items.dtype != torch.bool and bool(((items == 0) | (items == 1)).all())):
        items = items.bool()
    return native(items, partition_book._native(), bool(force_even), trainer_ids, r, -1)


def node_split(nodes, partition_book=None, ntype="_N", rank=None, force_even=True,
               node_trainer_ids=None):
    """This trainer's share of the nodes selected by ``nodes`` (a boolean mask
    over all nodes, as a DistTensor or tensor, or node ids): every node goes to
    exactly one trainer, own-partition nodes first; with ``force_even`` the
    counts differ by at most one."""
    return _split("node", nodes, partition_book, rank, force_even, node_trainer_ids)


def edge_split(edges, partition_book=None, etype="_E", rank=None, force_even=True,
               edge_trainer_ids=None):
    """This trainer's share of the edges selected by ``edges`` (see node_split)."""
    return _split("edge", edges, partition_book, rank, force_even, edge_trainer_ids)
