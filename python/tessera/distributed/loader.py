"""Blocks, the neighbour sampler and the data loaders (dgl.dataloading)."""
import torch

from tessera import _C, EID, NID
from tessera._utils import as_ids
from tessera.distributed import _prefetch, context
from tessera.distributed.partition_book import _etype_str


class _Relation:
    """One relation's edges: in edge order the block-local ``src`` / ``dst``
    and the ``eids``; the CSR over destinations, ``indptr`` with the sources
    in CSR order ``csr_indices`` and ``csr_perm`` the edge at each CSR
    position (None when the edges are in destination order, as a loader's
    are). Built from either form; the other is derived when first read."""

    def __init__(self, num_src, num_dst, eids, src, dst=None, indptr=None):
        self.num_src, self.num_dst, self.eids, self.src = num_src, num_dst, eids, src
        self._dst, self._indptr, self._perm = dst, indptr, None

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
            self._indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
            if dst.numel() > 1 and not bool((dst[1:] >= dst[:-1]).all()):
                self._perm = torch.argsort(dst, stable=True)
        return self._indptr

    @property
    def csr_perm(self):
        self.indptr  # noqa: B018 (computes the permutation)
        return self._perm

    @property
    def csr_indices(self):
        perm = self.csr_perm
        return self.src if perm is None else self.src.index_select(0, perm)


class _NodeSpace:
    """``block.srcnodes[ntype].data`` / ``block.dstnodes[ntype].data``."""

    def __init__(self, data_by_type):
        self._data = data_by_type

    def __getitem__(self, ntype):
        class _View:
            pass
        view = _View()
        view.data = self._data[ntype]
        return view


class _Relations:
    """What blocks and pair graphs share: relations by name (a name, a
    canonical tuple or "src:rel:dst", as DGL), their edges and counts.
    ``self._rel`` maps each canonical relation to its ``_Relation``."""

    _what = "graph"

    def _set_relations(self, canonical_etypes, relations):
        self.canonical_etypes = [tuple(c) for c in canonical_etypes]
        self.etypes = [c[1] for c in self.canonical_etypes]
        self._rel = dict(zip(self.canonical_etypes, relations))

    def to_canonical_etype(self, etype):
        if etype is None:
            if len(self.canonical_etypes) != 1:
                raise _C.TesseraError(f"this {self._what} has several edge types: give etype")
            return self.canonical_etypes[0]
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

    def num_edges(self, etype=None):
        if etype is None:
            return sum(r.src.numel() for r in self._rel.values())
        return self._rel[self.to_canonical_etype(etype)].src.numel()

    number_of_edges = num_edges

    def edges(self, form="uv", order="eid", etype=None):
        r = self._rel[self.to_canonical_etype(etype)]
        if form == "uv":
            return r.src, r.dst
        if form == "eid":
            return torch.arange(r.src.numel(), dtype=torch.int64)
        if form == "all":
            return r.src, r.dst, torch.arange(r.src.numel(), dtype=torch.int64)
        raise ValueError(f"edges(form=...) must be 'uv', 'eid' or 'all', got {form!r}")

    def _types_of(self, ntype, types):
        if ntype is None:
            if len(types) != 1:
                raise _C.TesseraError(f"this {self._what} has several node types: give ntype")
            return types[0]
        if ntype not in types:
            raise _C.TesseraError(f"unknown node type {ntype!r}; the {self._what} has {types}")
        return ntype

    def to(self, device, **kwargs):
        if torch.device(device).type != "cpu":
            raise _C.TesseraError(f"{type(self).__name__}.to({device}): tessera's "
                                  f"{self._what}s live on the CPU")
        return self


class Block(_Relations):
    """One message-passing layer (DGL's block). Per source type its nodes
    (``srcdata[NID]``), per destination type its nodes (``dstdata[NID]``; in
    a loader's blocks the first sources of their type), per relation its
    edges in block-local ids (``edges(etype=...)``) and ids
    (``edata[EID]``), with the CSR over destinations.

    An untyped block (``Block(src_nodes, indptr, indices, eids)``, the
    blocks of a loader over global ids) has one type and one relation:
    ``srcdata[NID]`` / ``dstdata[NID]`` / ``edata[EID]`` are tensors of
    global ids, and ``indptr`` / ``indices`` / ``edge_dst`` its CSR. A typed
    block (a loader's with dict seeds or edges) holds them per type and per
    relation: ``srcdata[NID][ntype]`` per-type ids, ``edata[EID][canonical]``
    per-relation ids (as DGL; ``g.map_to_homo_eid`` gives global ones),
    ``srcdata["_homo_nid"]`` the sources' homogeneous ids,
    ``num_src_nodes(ntype)``; ``tessera.nn.RelationBlock(block, etype)`` is
    one relation of it as an untyped block."""

    is_block = True
    _what = "block"

    def __init__(self, src_nodes, indptr, indices, eids, srcdata=None, dstdata=None):
        num_dst = indptr.numel() - 1
        self._init(["_N"], ["_N"], [("_N", "_E", "_N")], {"_N": src_nodes},
                   {"_N": src_nodes[:num_dst]},
                   [_Relation(src_nodes.numel(), num_dst, eids, indices, indptr=indptr)], False)
        self.srcdata.update(srcdata or {})
        self.dstdata.update(dstdata or {})

    def _init(self, srctypes, dsttypes, canonical_etypes, src, dst, relations, typed,
              homo_src_nodes=None):
        self.srctypes, self.dsttypes = list(srctypes), list(dsttypes)
        self.ntypes = list(dict.fromkeys(self.srctypes + self.dsttypes))
        self._set_relations(canonical_etypes, relations)
        self._typed = typed
        self._src, self._dst = dict(src), dict(dst)
        if typed:
            self.srcdata = {NID: dict(src)}
            if homo_src_nodes is not None:
                self.srcdata["_homo_nid"] = dict(homo_src_nodes)
            self.dstdata = {NID: dict(dst)}
            self.edata = {EID: {c: r.eids for c, r in self._rel.items()}}
        else:
            self.srcdata = {NID: src[self.srctypes[0]]}
            self.dstdata = {NID: dst[self.dsttypes[0]]}
            self.edata = {EID: relations[0].eids}
        self.srcnodes = _NodeSpace({t: {NID: ids} for t, ids in self._src.items()})
        self.dstnodes = _NodeSpace({t: {NID: ids} for t, ids in self._dst.items()})

    @classmethod
    def typed(cls, g, src_nodes, dst_nodes, homo_src_nodes, edges):
        """A typed block of ``g``'s types and relations: per node type
        (``g.ntypes`` order) its sources (destinations first), destinations
        and the sources' homogeneous ids; per relation
        (``g.canonical_etypes`` order) ``(src, dst, eids)`` in block-local
        ids, in any order (that is the block's edge order)."""
        ntypes, rels = list(g.ntypes), [tuple(c) for c in g.canonical_etypes]
        src, dst = dict(zip(ntypes, src_nodes)), dict(zip(ntypes, dst_nodes))
        relations = [_Relation(src[c[0]].numel(), dst[c[2]].numel(), e[2], e[0], dst=e[1])
                     for c, e in zip(rels, edges)]
        b = cls.__new__(cls)
        b._init(ntypes, ntypes, rels, src, dst, relations, True, dict(zip(ntypes, homo_src_nodes)))
        return b

    def num_src_nodes(self, ntype=None):
        return self._src[self._types_of(ntype, self.srctypes)].numel()

    def num_dst_nodes(self, ntype=None):
        return self._dst[self._types_of(ntype, self.dsttypes)].numel()

    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes

    def in_degrees(self, v=None, etype=None):
        indptr = self._rel[self.to_canonical_etype(etype)].indptr
        deg = indptr[1:] - indptr[:-1]
        return deg if v is None else deg[as_ids(v, "in_degrees")[0]]

    def out_degrees(self, u=None, etype=None):
        r = self._rel[self.to_canonical_etype(etype)]
        deg = torch.bincount(r.src, minlength=r.num_src)
        return deg if u is None else deg[as_ids(u, "out_degrees")[0]]

    # The block's only relation: its CSR and edges, what the layers read.
    def _only(self):
        return self._rel[self.to_canonical_etype(None)]

    indptr = property(lambda self: self._only().indptr)
    indices = property(lambda self: self._only().src)
    edge_dst = property(lambda self: self._only().dst,
                        doc="The block-local destination of each edge.")
    csr_indices = property(lambda self: self._only().csr_indices)
    csr_perm = property(lambda self: self._only().csr_perm)

    def __repr__(self):
        if not self._typed:
            return (f"Block(num_src_nodes={self.num_src_nodes()}, "
                    f"num_dst_nodes={self.num_dst_nodes()}, num_edges={self.num_edges()})")
        return (f"Block(num_src_nodes={ {t: self.num_src_nodes(t) for t in self.srctypes} }, "
                f"num_dst_nodes={ {t: self.num_dst_nodes(t) for t in self.dsttypes} }, "
                f"num_edges={ {c: self.num_edges(c) for c in self.canonical_etypes} })")


def _is_typed(graph):
    """Whether ``graph`` is a typed block or pair graph (data per type)."""
    return getattr(graph, "_typed", False)


def _blocks(raw, typed):
    """The Blocks of the C++ blocks."""
    out = []
    for b in raw:
        src_nodes = b.src_nodes
        if not typed:
            e = b.edges[0]
            out.append(Block(src_nodes[0], e.indptr, e.indices, e.eids, b.srcdata, b.dstdata))
            continue
        ntypes, rels = b.ntypes, b.canonical_etypes
        src = dict(zip(ntypes, src_nodes))
        dst = {t: n[:c] for t, n, c in zip(ntypes, src_nodes, b.dst_counts)}
        relations = [_Relation(src[c[0]].numel(), dst[c[2]].numel(), e.eids, e.indices,
                               indptr=e.indptr) for c, e in zip(rels, b.edges)]
        block = Block.__new__(Block)
        block._init(ntypes, ntypes, rels, src, dst, relations, True,
                    dict(zip(ntypes, b.homo_src_nodes)))
        out.append(block)
    return out


def _each(native_loader):
    """The batches of one epoch of a C++ loader (a generator)."""
    it = iter(native_loader)
    while True:
        try:
            yield next(it)
        except StopIteration:
            return


class PairGraph(_Relations):
    """The positive (or negative) pairs of an edge batch over the batch's
    nodes (the last block's destinations). Untyped: ``edges()`` in local
    ids, ``ndata[NID]`` the nodes' global ids, ``edata[EID]`` the positive
    edges' global ids. Typed (DGL's heterograph pair graph): per node type
    ``ndata[NID][ntype]`` per-type ids and ``num_nodes(ntype)``; per
    relation ``edges(etype=...)`` as indices into its source type's and
    destination type's nodes and, in the positive graph,
    ``edata[EID][canonical]`` the per-relation id of each pair's edge."""

    _what = "pair graph"

    def __init__(self, src, dst, nodes, eids=None):
        self._init({"_N": nodes}, [("_N", "_E", "_N")], [(src, dst, eids)], False)

    def _init(self, nodes, canonical_etypes, pairs, typed):
        self.ntypes = list(nodes)
        self._nodes, self._typed = dict(nodes), typed
        self._set_relations(canonical_etypes, [
            _Relation(self._nodes[c[0]].numel(), self._nodes[c[2]].numel(), e, s, dst=d)
            for c, (s, d, e) in zip(canonical_etypes, pairs)])
        positive = any(e is not None for _, _, e in pairs)
        if typed:
            self.ndata = {NID: dict(nodes)}
            self.edata = {EID: {c: r.eids for c, r in self._rel.items()}} if positive else {}
        else:
            self.ndata = {NID: nodes[self.ntypes[0]]}
            self.edata = {EID: pairs[0][2]} if positive else {}
        self.nodes = _NodeSpace({t: {NID: ids} for t, ids in self._nodes.items()})

    @classmethod
    def _native(cls, raw, typed, positive):
        """The PairGraph of a C++ one (typed: with the batch's relations)."""
        ntypes, rels = raw.ntypes, raw.canonical_etypes
        if not typed:
            ntypes, rels = ["_N"], [("_N", "_E", "_N")]
        pairs = [(e.src, e.dst, e.eids if positive else None) for e in raw.edges]
        g = cls.__new__(cls)
        g._init(dict(zip(ntypes, raw.nodes)), rels, pairs, typed)
        return g

    def num_nodes(self, ntype=None):
        if ntype is None and self._typed:
            return sum(n.numel() for n in self._nodes.values())
        return self._nodes[self._types_of(ntype, self.ntypes)].numel()

    number_of_nodes = num_nodes

    def __repr__(self):
        if not self._typed:
            return f"PairGraph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()})"
        return (f"PairGraph(num_nodes={ {t: self.num_nodes(t) for t in self.ntypes} }, "
                f"num_edges={ {c: self.num_edges(c) for c in self.canonical_etypes} })")


class NeighborSampler:
    """Multi-layer neighbour sampling (dgl.dataloading.NeighborSampler):
    ``fanouts[l]`` neighbours per node at layer l, input layer first; -1 takes
    all. ``prefetch_node_feats`` / ``prefetch_labels`` (node tensor names, as
    DGL): the loader's sampler threads pull them ahead into
    ``blocks[0].srcdata`` (at the input nodes) / ``blocks[-1].dstdata`` (at
    the seeds); homogeneous node and edge loaders."""

    def __init__(self, fanouts, edge_dir="in", prob=None, replace=False,
                 prefetch_node_feats=None, prefetch_labels=None, prefetch_edge_feats=None,
                 **kwargs):
        if prefetch_edge_feats:
            raise _C.TesseraError("NeighborSampler: prefetch_edge_feats is not supported; "
                                  "read edge data in the training loop")
        self.prefetch_node_feats = [str(n) for n in (prefetch_node_feats or [])]
        self.prefetch_labels = [str(n) for n in (prefetch_labels or [])]
        if isinstance(fanouts, int):
            raise TypeError("NeighborSampler: fanouts is a list, one per layer")
        for f in fanouts:
            if not isinstance(f, (int, dict)):
                raise TypeError(f"NeighborSampler: each fanout is an int or a dict of "
                                f"relation -> int, got {f!r}")
        if prob is not None and not isinstance(prob, str):
            raise TypeError("NeighborSampler: prob must be the name of an edge tensor")
        self.fanouts, self.edge_dir, self.prob, self.replace = (list(fanouts), edge_dir,
                                                                prob or "", replace)

    def _layers(self, g):
        """(int fanouts, []) or ([], per-layer {relation: fanout}) for C++: on a
        graph with several relations an int fanout is per relation (DGL), and
        a dict must name every relation."""
        if not any(isinstance(f, dict) for f in self.fanouts):
            return [int(f) for f in self.fanouts], []
        if g.is_homogeneous:
            fl = []
            for f in self.fanouts:
                if isinstance(f, dict):
                    if len(f) != 1:
                        raise _C.TesseraError(f"NeighborSampler: this graph has one relation; "
                                              f"got fanouts for {list(f)}")
                    f = next(iter(f.values()))
                fl.append(int(f))
            return fl, []
        layers = []
        for f in self.fanouts:
            if isinstance(f, dict):
                layers.append({_etype_str(k): int(v) for k, v in f.items()})
            else:
                layers.append({":".join(c): int(f) for c in g.canonical_etypes})
        return [], layers


MultiLayerNeighborSampler = NeighborSampler


class MultiLayerFullNeighborSampler(NeighborSampler):
    def __init__(self, num_layers, edge_dir="in", **kwargs):
        super().__init__([-1] * num_layers, edge_dir=edge_dir, **kwargs)


def _prefetch_names(sampler):
    """(prefetch_node_feats, prefetch_labels) of a sampler ([] if it has none)."""
    return (list(getattr(sampler, "prefetch_node_feats", [])),
            list(getattr(sampler, "prefetch_labels", [])))


class Uniform:
    """Uniform negative sampler (dgl.dataloading.negative_sampler.Uniform): k
    random destinations per positive edge."""

    def __init__(self, k):
        if int(k) < 1:
            raise ValueError(f"Uniform negative sampler: k must be >= 1, got {k}")
        self.k = int(k)


def _seed():
    # Follows torch.manual_seed, so a seeded script shuffles reproducibly.
    return int(torch.randint(0, 2**62, (1,)).item())


def _loader_args(kwargs, what):
    known = {"batch_size", "shuffle", "drop_last", "num_workers", "seed", "prefetch",
             "even_batches", "timeout", "device", "pin_memory", "persistent_workers",
             "use_ddp", "queue_size", "auto_prefetch"}
    unknown = set(kwargs) - known
    if unknown:
        raise TypeError(f"{what}: unexpected arguments {sorted(unknown)}")
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        raise _C.TesseraError(f"{what}: device must be the CPU, got {device}")
    nw = kwargs.get("num_workers")
    return dict(batch_size=int(kwargs.get("batch_size", 1)),
                shuffle=bool(kwargs.get("shuffle", False)),
                drop_last=bool(kwargs.get("drop_last", False)),
                seed=int(kwargs["seed"]) if kwargs.get("seed") is not None else _seed(),
                num_workers=context.default_num_workers() if nw is None else int(nw),
                prefetch=int(kwargs.get("prefetch", 0)),
                even_batches=bool(kwargs.get("even_batches", True)),
                timeout=float(kwargs.get("timeout", 600.0)))


def _typed_ids(g, nids, what):
    """{ntype: per-type ids} on a heterograph, else None."""
    if isinstance(nids, dict) and not g.is_homogeneous:
        return {str(k): as_ids(v, what)[0] for k, v in nids.items()}
    return None


def _node_ids(nids, what):
    if isinstance(nids, dict):
        if len(nids) != 1:
            raise _C.TesseraError(f"{what}: dict ids need a heterograph")
        nids = next(iter(nids.values()))
    return as_ids(nids, what)[0]


class DistNodeDataLoader:
    """Mini-batches for node classification: iterating yields ``(input_nodes,
    seeds, blocks)``. Sampling runs in ``num_workers`` C++ threads of this
    process (default: the launcher's ``--num-samplers``, 0 there meaning one
    per 4 cores of the trainer's share; standalone a quarter of the cores, at
    least one), batches come in order. Every trainer gets the same number of batches (``even_batches``),
    so DDP never waits for a trainer that ran out."""

    def __init__(self, g, nids, graph_sampler, device=None, **kwargs):
        a = _loader_args(dict(kwargs, device=device), "DistNodeDataLoader")
        s = graph_sampler
        fanouts, etype_fanouts = s._layers(g)
        typed = _typed_ids(g, nids, "DistNodeDataLoader nids")
        self._g = g
        self._typed = typed is not None
        common = (a["batch_size"], a["shuffle"], a["drop_last"], a["seed"], a["num_workers"],
                  a["prefetch"], a["even_batches"], a["timeout"])
        feats, labels = _prefetch_names(s)
        if self._typed and (feats or labels):
            raise _C.TesseraError("DistNodeDataLoader: prefetch_node_feats / "
                                  "prefetch_labels work on homogeneous loaders only for now")
        seeds = typed if self._typed else _node_ids(nids, "DistNodeDataLoader nids")
        self._loader = _C.NodeLoader(g._g, seeds, fanouts, s.edge_dir, s.replace, s.prob, *common,
                                     etype_fanouts, feats, labels)
        # Rows a script reads at input_nodes / seeds are learned and pulled
        # ahead (tessera/distributed/_prefetch.py): node tensors the graph
        # has now (its partition's data, mostly), never on typed batches.
        self._explicit = set(feats) | set(labels)
        self._auto_prefetch = bool(kwargs.get("auto_prefetch", True)) and not self._typed
        self._learnable = set()
        if self._auto_prefetch:
            try:
                self._learnable = set(g._g.node_attr_schemes())
            except _C.TesseraError:  # A graph whose ndata are typed: nothing to learn.
                self._auto_prefetch = False
        self._learned = set()  # (name, labels) pairs added to the C++ loader.
        if self._auto_prefetch:
            _prefetch.register(self)

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        if self._typed:
            ntypes = self._g.ntypes
            for b in _each(self._loader):
                yield (dict(zip(ntypes, b.input_nodes)), dict(zip(ntypes, b.seeds)),
                       _blocks(b.blocks, True))
            return
        current = None
        try:
            for b in _each(self._loader):
                input_nodes, seeds, blocks = b.input_nodes[0], b.seeds[0], _blocks(b.blocks, False)
                if self._auto_prefetch:
                    current = _prefetch.BatchRows(self, input_nodes, seeds,
                                                  self._take_learned(blocks[0].srcdata),
                                                  self._take_learned(blocks[-1].dstdata))
                    _prefetch.set_current(current)
                yield input_nodes, seeds, blocks
        finally:
            _prefetch.clear(current)

    def _take_learned(self, data):
        """The rows of `data` (a block's srcdata / dstdata) to answer reads
        with: learned ones are moved out (the script did not ask for them in
        its blocks), ones the sampler named stay (and are given out cloned)."""
        rows = {}
        for name in list(data):
            if name == NID:
                continue
            # Anything else the sampler threads pulled was named by the
            # sampler (explicit) or learned (perhaps forgotten since).
            rows[name] = data[name] if name in self._explicit else data.pop(name)
        return rows

    def _learn(self, name, labels):
        """A script read node tensor `name` at this loader's input nodes
        (labels: seeds): pull it ahead for the next batches."""
        if name not in self._learnable or (name, labels) in self._learned:
            return
        try:
            self._loader.add_prefetch(name, labels)
            self._learned.add((name, labels))
        except _C.TesseraError:
            self._learnable.discard(name)

    def _forget(self, name):
        """Tensor `name` was written by this process: stop pulling it ahead."""
        self._learnable.discard(name)
        if any(n == name for n, _ in self._learned):
            self._learned = {(n, l) for n, l in self._learned if n != name}
            self._loader.remove_prefetch(name)


class DistEdgeDataLoader:
    """Mini-batches for link prediction over edges ``eids``. Yields
    ``(input_nodes, pair_graph, blocks)``, or with a ``negative_sampler``
    ``(input_nodes, pos_pair_graph, neg_pair_graph, blocks)``. ``exclude``:
    None, "self" (the batch's edges), "reverse_id" (and their reverses,
    ``reverse_eids``) or "reverse_types" (and the edges of the same
    per-relation id in the reverse relations, ``reverse_etypes``) are never
    sampled into the blocks.

    On a heterograph ``eids`` is ``{etype: per-relation ids}`` (DGL): the pair
    graphs and the blocks are typed, ``input_nodes``
    ``{ntype: ids}``; negatives of an edge come from its relation's
    destination type. ``reverse_eids`` is then ``{etype: ids}`` (the reverse
    of edge i of a relation is edge ``reverse_eids[etype][i]`` of the same
    relation) or a homogeneous tensor over every edge."""

    def __init__(self, g, eids, graph_sampler, device=None, exclude=None, reverse_eids=None,
                 reverse_etypes=None, negative_sampler=None, **kwargs):
        a = _loader_args(dict(kwargs, device=device), "DistEdgeDataLoader")
        if negative_sampler is not None and not isinstance(negative_sampler, Uniform):
            raise _C.TesseraError("DistEdgeDataLoader: negative_sampler must be "
                                  "negative_sampler.Uniform(k)")
        if exclude is not None and not isinstance(exclude, str):
            raise _C.TesseraError("DistEdgeDataLoader: exclude must be None, 'self', "
                                  "'reverse_id' or 'reverse_types'")
        self._g = g
        self._negatives = negative_sampler.k if negative_sampler is not None else 0
        self._typed = isinstance(eids, dict) and not g.is_homogeneous
        s = graph_sampler
        fanouts, etype_fanouts = s._layers(g)
        common = (a["batch_size"], a["shuffle"], a["drop_last"], a["seed"], a["num_workers"],
                  a["prefetch"], a["even_batches"], a["timeout"], self._negatives,
                  exclude or "none")
        if self._typed:
            if any(_prefetch_names(s)):
                raise _C.TesseraError("DistEdgeDataLoader: prefetch_node_feats / "
                                      "prefetch_labels work on homogeneous loaders only for now")
            typed_rev, rev = {}, None
            if isinstance(reverse_eids, dict):
                typed_rev = {_etype_str(k): as_ids(v, "reverse_eids")[0]
                             for k, v in reverse_eids.items()}
            elif reverse_eids is not None:
                rev = as_ids(reverse_eids, "reverse_eids")[0]
            if reverse_etypes is not None and not isinstance(reverse_etypes, dict):
                raise _C.TesseraError("DistEdgeDataLoader: reverse_etypes is a dict "
                                      "{etype: reverse etype}")
            rtypes = {_etype_str(k): _etype_str(v) for k, v in (reverse_etypes or {}).items()}
            self._loader = _C.EdgeLoader(
                g._g, {_etype_str(k): as_ids(v, "DistEdgeDataLoader eids")[0]
                       for k, v in eids.items()},
                fanouts, s.edge_dir, s.replace, s.prob, *common, rev, etype_fanouts, [], [],
                typed_rev, rtypes)
            return
        if reverse_etypes:
            raise _C.TesseraError("DistEdgeDataLoader: reverse_etypes needs a heterograph and "
                                  "eids given as {etype: ids}")
        if isinstance(reverse_eids, dict):
            reverse_eids = _node_ids(reverse_eids, "reverse_eids")
        rev = None if reverse_eids is None else as_ids(reverse_eids, "reverse_eids")[0]
        feats, labels = _prefetch_names(s)
        self._loader = _C.EdgeLoader(g._g, _node_ids(eids, "DistEdgeDataLoader eids"),
                                     fanouts, s.edge_dir, s.replace, s.prob, *common, rev,
                                     etype_fanouts, feats, labels, {}, {})

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        if self._typed:
            ntypes = self._g.ntypes
            for b in _each(self._loader):
                input_nodes = dict(zip(ntypes, b.input_nodes))
                pos = PairGraph._native(b.positive, True, True)
                blocks = _blocks(b.blocks, True)
                if self._negatives:
                    neg = PairGraph._native(b.negative, True, False)
                    yield input_nodes, pos, neg, blocks
                else:
                    yield input_nodes, pos, blocks
            return
        for b in _each(self._loader):
            pos = PairGraph._native(b.positive, False, True)
            blocks = _blocks(b.blocks, False)
            if self._negatives:
                neg = PairGraph._native(b.negative, False, False)
                yield b.input_nodes[0], pos, neg, blocks
            else:
                yield b.input_nodes[0], pos, blocks


def _default_collate(items):
    """A tensor dataset's rows as they are; items of a sequence through
    PyTorch's default_collate (numbers and tensors stacked)."""
    if isinstance(items, torch.Tensor):
        return items
    from torch.utils.data import default_collate
    return default_collate(items)


class DistDataLoader:
    """Batches of any dataset (dgl.distributed.DistDataLoader): a tensor (rows)
    or a sequence (items). ``collate_fn(batch)`` may be any Python callable;
    it runs in tessera's sampler threads (under the GIL) when
    ``num_workers`` > 0, never in other processes."""

    def __init__(self, dataset, batch_size, shuffle=False, collate_fn=None, drop_last=False,
                 queue_size=None, **kwargs):
        a = _loader_args(dict(kwargs, batch_size=batch_size, shuffle=shuffle,
                              drop_last=drop_last), "DistDataLoader")
        collate = collate_fn or _default_collate
        if isinstance(dataset, torch.Tensor):
            def fetch(positions):
                return collate(dataset[positions])
        else:
            def fetch(positions):
                return collate([dataset[i] for i in positions.tolist()])
        self._loader = _C.DataLoader(len(dataset), fetch, a["batch_size"], a["shuffle"],
                                     a["drop_last"], a["seed"], a["num_workers"], a["prefetch"],
                                     a["even_batches"], a["timeout"])

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        return iter(self._loader)
