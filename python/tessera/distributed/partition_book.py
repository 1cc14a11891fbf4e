"""dgl.distributed.GraphPartitionBook (DGL's graph_partition_book.py): which
partition owns which ids. Imported by both graph.py and tensor.py, so that
neither imports the other."""
import torch

from tessera import _C
from tessera._utils import as_ids, as_tensor


def _etype_str(etype):
    """A relation as C++ spells it: a name or "src:rel:dst" (from a tuple)."""
    if isinstance(etype, tuple):
        if len(etype) != 3 or not all(isinstance(x, str) for x in etype):
            raise TypeError(f"a canonical edge type is a (src, relation, dst) tuple of strings, "
                            f"got {etype!r}")
        return ":".join(etype)
    if not isinstance(etype, str):
        raise TypeError(f"an edge type is a string or a (src, relation, dst) tuple, got {etype!r}")
    return etype


class GraphPartitionBook:
    """dgl.distributed.GraphPartitionBook for range partitions: partition p owns
    the global node ids [node_offsets[p], node_offsets[p+1]) (edges alike).

    On a heterograph, the ids of one node type (relation) are also contiguous
    per partition: per-type ids [typed_offsets[p], typed_offsets[p+1]) live in
    partition p. Methods taking ``ntype`` / ``etype`` read ids as per-type ids
    of that type; the default ``"_N"`` / ``"_E"`` means homogeneous ids."""

    def __init__(self, handle=None, node_offsets=None, edge_offsets=None, partid=0):
        self._book = handle
        if handle is not None:
            node_offsets, edge_offsets, partid = (handle.node_offsets(), handle.edge_offsets(),
                                                  handle.partid)
            self._ntypes = list(handle.ntypes())
            self._canonical = [tuple(e) for e in handle.etypes()]
        else:
            self._ntypes, self._canonical = ["_N"], [("_N", "_E", "_N")]
        self._nodes = as_tensor(node_offsets).to(torch.int64)
        self._edges = as_tensor(edge_offsets).to(torch.int64)
        self._partid = int(partid)
        self._typed = {}

    @property
    def partid(self):
        return self._partid

    def num_partitions(self):
        return self._nodes.numel() - 1

    @property
    def ntypes(self):
        return list(self._ntypes)

    @property
    def etypes(self):
        return [e[1] for e in self._canonical]

    @property
    def canonical_etypes(self):
        return list(self._canonical)

    @property
    def is_homogeneous(self):
        return len(self._ntypes) == 1 and len(self._canonical) == 1

    # ---- type names -> ids
    def _ntype_id(self, ntype):
        if not isinstance(ntype, str):
            raise TypeError(f"a node type is a string, got {ntype!r}")
        if ntype in self._ntypes:
            return self._ntypes.index(ntype)
        if ntype == "_N" and len(self._ntypes) == 1:
            return 0
        raise _C.TesseraError(f"unknown node type '{ntype}' (node types: {self._ntypes})")

    def _etype_id(self, etype):
        if isinstance(etype, tuple) and etype == ("_N", "_E", "_N") and len(self._canonical) == 1:
            return 0
        text = _etype_str(etype)
        if text == "_E" and len(self._canonical) == 1:
            return 0
        if ":" in text:
            canon = tuple(text.split(":"))
            if canon in self._canonical:
                return self._canonical.index(canon)
            raise _C.TesseraError(f"unknown edge type {canon} (canonical edge types: "
                                  f"{self._canonical})")
        hits = [i for i, e in enumerate(self._canonical) if e[1] == text]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise _C.TesseraError(f"unknown edge type '{text}' (edge types: {self.etypes})")
        raise _C.TesseraError(f"edge type '{text}' is ambiguous: it names "
                              f"{[self._canonical[i] for i in hits]}; use a canonical edge type")

    def get_ntype_id(self, ntype):
        return self._ntype_id(ntype)

    def get_etype_id(self, etype):
        return self._etype_id(etype)

    def to_canonical_etype(self, etype):
        return self._canonical[self._etype_id(etype)]

    def _typed_offsets(self, kind, t):
        if (kind, t) not in self._typed:
            if self._book is None:
                self._typed[(kind, t)] = self._nodes if kind == "node" else self._edges
            else:
                self._typed[(kind, t)] = (self._book.typed_node_offsets(t) if kind == "node"
                                          else self._book.typed_edge_offsets(t))
        return self._typed[(kind, t)]

    def _node_offsets(self, ntype):
        return self._nodes if ntype == "_N" else self._typed_offsets("node", self._ntype_id(ntype))

    def _edge_offsets(self, etype):
        if etype == "_E" or (self.is_homogeneous and etype in (("_N", "_E", "_N"), "_N:_E:_N")):
            return self._edges
        return self._typed_offsets("edge", self._etype_id(etype))

    def num_nodes(self, ntype=None):
        return int(self._nodes[-1]) if ntype is None else int(self._node_offsets(ntype)[-1])

    def num_edges(self, etype=None):
        return int(self._edges[-1]) if etype is None else int(self._edge_offsets(etype)[-1])

    def _local_type_offset(self, kind, count):
        p = self._partid
        sizes = [int(o[p + 1] - o[p]) for o in (self._typed_offsets(kind, t)
                                                 for t in range(count))]
        out = [0]
        for n in sizes:
            out.append(out[-1] + n)
        return out

    @property
    def local_ntype_offset(self):
        """Where each node type starts among this partition's nodes: ``[0,
        n_0, n_0 + n_1, ...]`` over the node types in id order (a list)."""
        return self._local_type_offset("node", len(self._ntypes))

    @property
    def local_etype_offset(self):
        """As ``local_ntype_offset``, over the canonical edge types."""
        return self._local_type_offset("edge", len(self._canonical))

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

    def _check_part(self, partid):
        if not 0 <= int(partid) < self.num_partitions():
            raise _C.TesseraError(f"partition {partid} out of range [0, {self.num_partitions()})")
        return int(partid)

    def nid2partid(self, nids, ntype="_N"):
        return self._owner(self._node_offsets(ntype), nids, "nid2partid")

    def eid2partid(self, eids, etype="_E"):
        return self._owner(self._edge_offsets(etype), eids, "eid2partid")

    def partid2nids(self, partid, ntype="_N"):
        o, p = self._node_offsets(ntype), self._check_part(partid)
        return torch.arange(int(o[p]), int(o[p + 1]))

    def partid2eids(self, partid, etype="_E"):
        o, p = self._edge_offsets(etype), self._check_part(partid)
        return torch.arange(int(o[p]), int(o[p + 1]))

    @staticmethod
    def _local(offsets, ids, partid, what):
        """``ids`` less partition ``partid``'s first id: an error for an id
        the partition does not own (DGL refuses remote ids too)."""
        begin, end = int(offsets[partid]), int(offsets[partid + 1])
        bad = torch.nonzero((ids < begin) | (ids >= end)).reshape(-1)
        if bad.numel():
            raise _C.TesseraError(f"{what}: id {int(ids[bad[0]])} is not in partition {partid} "
                                  f"(it owns [{begin}, {end}))")
        return ids - begin

    def nid2localnid(self, nids, partid, ntype="_N"):
        ids, _ = as_ids(nids, "nid2localnid")
        partid = self._check_part(partid)
        return self._local(self._node_offsets(ntype), ids, partid, "nid2localnid")

    def eid2localeid(self, eids, partid, etype="_E"):
        ids, _ = as_ids(eids, "eid2localeid")
        partid = self._check_part(partid)
        return self._local(self._edge_offsets(etype), ids, partid, "eid2localeid")

    def map_to_per_ntype(self, ids):
        """Homogeneous node ids -> (node type ids, per-type ids)."""
        ids, _ = as_ids(ids, "map_to_per_ntype")
        if self._book is None:
            self._owner(self._nodes, ids, "map_to_per_ntype")
            return torch.zeros_like(ids), ids
        t, per = self._book.map_to_per_ntype(ids)
        return t, per

    def map_to_per_etype(self, ids):
        """Homogeneous edge ids -> (relation ids, per-relation ids)."""
        ids, _ = as_ids(ids, "map_to_per_etype")
        if self._book is None:
            self._owner(self._edges, ids, "map_to_per_etype")
            return torch.zeros_like(ids), ids
        t, per = self._book.map_to_per_etype(ids)
        return t, per

    def map_to_homo_nid(self, ids, ntype="_N"):
        """Per-type ids of ``ntype`` -> homogeneous node ids."""
        ids, _ = as_ids(ids, "map_to_homo_nid")
        t = self._ntype_id(ntype)
        return ids if self._book is None else self._book.map_to_homo_nid(ids, t)

    def map_to_homo_eid(self, ids, etype="_E"):
        """Per-relation ids of ``etype`` -> homogeneous edge ids."""
        ids, _ = as_ids(ids, "map_to_homo_eid")
        r = self._etype_id(etype)
        return ids if self._book is None else self._book.map_to_homo_eid(ids, r)

    def _native(self):
        if self._book is None:
            raise _C.TesseraError("this partition book is not the one of a DistGraph")
        return self._book
