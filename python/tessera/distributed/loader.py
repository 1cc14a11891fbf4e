"""Blocks, the neighbour sampler and the data loaders (dgl.dataloading)."""
import math
import threading
import types
from collections.abc import Mapping

import numpy as np
import torch

from tessera import _C, NID
from tessera._utils import INT32_MAX, INT64_MAX, INT64_MIN, as_ids, as_int, as_seed
from tessera.distributed import _prefetch, context
from tessera.distributed.partition_book import _etype_str
from tessera.heterograph import Block, Graph, PairGraph, _Relation


def _blocks(raw, typed):
    """The Blocks of the C++ blocks."""
    out = []
    for b in raw:
        src_nodes = b.src_nodes
        if not typed:
            e = b.edges[0]
            out.append(Block(src_nodes[0], e.indptr, e.indices, e.eids, b.srcdata, b.dstdata,
                             _trusted=True))
            continue
        ntypes, rels = b.ntypes, b.canonical_etypes
        src = dict(zip(ntypes, src_nodes))
        dst = {t: n[:c] for t, n, c in zip(ntypes, src_nodes, b.dst_counts)}
        relations = [_Relation(src[c[0]].numel(), dst[c[2]].numel(), e.indices, indptr=e.indptr)
                     for c, e in zip(rels, b.edges)]
        block = Block.__new__(Block)
        block._build(ntypes, ntypes, rels, src, dst, relations, [e.eids for e in b.edges],
                     dict(zip(ntypes, b.homo_src_nodes)))
        out.append(block)
    return out


class _Resumable:
    """Where a loader is, for checkpoints (tessera; DGL's loaders have no
    state): ``state_dict()`` is the epoch in progress and its next batch,
    ``load_state_dict()`` makes the next iteration continue from there with
    the batches an uninterrupted run would get (they depend only on the
    seed, the epoch and the batch). Saved and restored by
    :mod:`tessera.distributed.checkpoint` when passed as ``loaders``."""

    _position = None
    _resume_batch = 0

    def state_dict(self):
        if self._position is None:
            return {"epoch": self._loader.epoch(), "batch": self._resume_batch}
        return dict(self._position)

    def load_state_dict(self, state):
        epoch, batch = int(state["epoch"]), int(state["batch"])
        self._loader.resume(epoch, batch)
        if batch >= len(self):
            epoch, batch = epoch + 1, 0
        self._position, self._resume_batch = None, batch

    def _each(self):
        """The batches of one epoch of the C++ loader (a generator), counted."""
        it = iter(self._loader)
        self._position = {"epoch": self._loader.epoch(), "batch": self._resume_batch}
        self._resume_batch = 0
        while True:
            try:
                batch = next(it)
            except StopIteration:
                self._position = {"epoch": self._position["epoch"] + 1, "batch": 0}
                return
            except BaseException:
                # The C++ iterator holds the error (a collate_fn's exception,
                # kept by its pipeline), whose traceback holds this frame: a
                # cycle through C++ that the GC cannot see would keep the
                # sampler threads alive for good. Drop the iterator (its
                # threads are stopped and joined) before the error goes on.
                del it
                raise
            self._position["batch"] += 1  # Delivered: a checkpoint now resumes after it.
            yield batch


class NeighborSampler:
    """Multi-layer neighbour sampling (dgl.dataloading.NeighborSampler):
    ``fanouts[l]`` neighbours per node at layer l, input layer first; -1 takes
    all, 0 none. ``prefetch_node_feats`` / ``prefetch_labels`` (node tensor
    names, as DGL): the loader's sampler threads pull them ahead into
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
            for v in (f.values() if isinstance(f, dict) else [f]):
                _fanout_value(v, "NeighborSampler: fanout")
        if prob is not None and not isinstance(prob, str):
            raise TypeError("NeighborSampler: prob must be the name of an edge tensor")
        self.fanouts, self.edge_dir, self.prob, self.replace = (list(fanouts), edge_dir,
                                                                prob or "", replace)

    def _layers(self, g):
        """(int fanouts, []) or ([], per-layer {relation: fanout}) for C++: on a
        graph with several relations an int fanout is per relation (DGL), and
        a dict must name every relation."""
        per = [_fanout_arg(g, f, "NeighborSampler") for f in self.fanouts]
        if all(m is None for _, m in per):
            return [f for f, _ in per], []
        return [], [{":".join(c): f for c in g.canonical_etypes} if m is None else m
                    for f, m in per]


MultiLayerNeighborSampler = NeighborSampler


def _fanout_value(v, what):
    """A fanout as an int (C++ int64; -1 takes all, 0 none): never a float
    cut short."""
    if isinstance(v, float):
        raise TypeError(f"{what} must be an integer (-1 for all neighbours), got {v!r}")
    f = as_int(v, what, INT64_MIN, INT64_MAX)
    if f < -1:
        raise ValueError(f"{what} {f}: a fanout is -1 (all neighbours), 0 (none) or positive")
    return f


def _fanout_arg(g, fanout, what):
    """(int fanout, None) or (-1, {relation: fanout}) for C++. On a graph with
    several relations an int fanout is per relation (DGL); a dict must name
    every relation (a name or canonical tuple)."""
    if isinstance(fanout, dict):
        if g.is_homogeneous:
            if len(fanout) != 1:
                raise _C.TesseraError(f"{what}: this graph has one relation; got fanouts for "
                                      f"{list(fanout)}")
            (key, value), = fanout.items()
            check_relation(g, key, f"{what} fanout")
            return _fanout_value(value, f"{what}: fanout"), None
        return -1, {_etype_str(k): _fanout_value(v, f"{what}: fanout of {k!r}")
                    for k, v in fanout.items()}
    return _fanout_value(fanout, f"{what}: fanout"), None


def check_relation(g, key, what):
    """On a graph of one relation: ``key`` must name it (its name, its
    canonical tuple or "src:rel:dst"), as on a heterograph."""
    c = tuple(g.canonical_etypes[0])
    if key in (c[1], c, ":".join(c)) or (isinstance(key, (tuple, list)) and tuple(key) == c):
        return
    raise _C.TesseraError(f"{what}: no relation {key!r}; this graph has one relation {c}")


def check_node_type(g, key, what):
    """On a graph of one node type: ``key`` must name it ("_N" always does)."""
    if key in ("_N", g.ntypes[0]):
        return
    raise _C.TesseraError(f"{what}: no node type {key!r}; this graph has one node type "
                          f"{g.ntypes[0]!r}")


class MultiLayerFullNeighborSampler(NeighborSampler):
    def __init__(self, num_layers, edge_dir="in", **kwargs):
        super().__init__([-1] * num_layers, edge_dir=edge_dir, **kwargs)


def _prefetch_names(sampler):
    """(prefetch_node_feats, prefetch_labels) of a sampler ([] if it has none)."""
    return (list(getattr(sampler, "prefetch_node_feats", [])),
            list(getattr(sampler, "prefetch_labels", [])))


def _is_homogeneous(g):
    return len(g.ntypes) == 1 and len(g.canonical_etypes) == 1


def _type_nodes(g, ntype):
    """Nodes of type ``ntype`` (the only type's count on a homogeneous graph)."""
    return g.num_nodes() if _is_homogeneous(g) else g.num_nodes(ntype)


def _ends(g, eids, etype):
    """(src, dst) of per-relation edge ids of ``etype``, per-type node ids."""
    if _is_homogeneous(g):
        return g.find_edges(eids)
    return g.find_edges(eids, etype=etype)


class _BaseNegativeSampler:
    """dgl.dataloading.negative_sampler's base: ``sampler(g, eids)`` is the
    negative ``(src, dst)`` pairs of edges ``eids`` (a tensor on a graph of
    one relation), or ``{canonical etype: (src, dst)}`` given ``{etype:
    per-relation ids}``. ``g``: a DistGraph or an in-memory graph."""

    def _generate(self, g, eids, canonical_etype):
        raise NotImplementedError

    def __call__(self, g, eids):
        if isinstance(eids, Mapping):
            out = {}
            for k, v in eids.items():
                c = tuple(g.to_canonical_etype(k))
                out[c] = self._generate(g, as_ids(v, "negative sampler eids")[0], c)
            return out
        if len(g.canonical_etypes) != 1:
            raise _C.TesseraError("negative sampler: this graph has several relations "
                                  f"{g.canonical_etypes}; give eids as {{etype: ids}}")
        return self._generate(g, as_ids(eids, "negative sampler eids")[0],
                              tuple(g.canonical_etypes[0]))


def _check_k(k, what):
    return as_int(k, f"{what} negative sampler: k", 1, INT32_MAX)


class PerSourceUniform(_BaseNegativeSampler):
    """dgl.dataloading.negative_sampler.PerSourceUniform (= ``Uniform``): for
    each edge (u, v) k pairs (u, v'), v' uniform over the relation's
    destination type (true edges are not filtered out). Called, it draws
    from ``torch``'s generator; in ``DistEdgeDataLoader`` the loader's
    sampler threads draw the same distribution."""

    def __init__(self, k):
        self.k = _check_k(k, "Uniform")

    def _generate(self, g, eids, canonical_etype):
        src, _ = _ends(g, eids, canonical_etype)
        src = src.repeat_interleave(self.k)
        dst = torch.randint(0, _type_nodes(g, canonical_etype[2]), (src.numel(),),
                            dtype=torch.int64)
        return src, dst


Uniform = PerSourceUniform  # DGL's alias.


def _redundancy(num_samples, num_edges, num_pairs, r=3):
    """DGL's extra fraction of candidates drawn so that, with r standard
    deviations of margin, ``num_samples`` of them are non-edges."""
    p_k = 1.0 - num_edges / num_pairs  # Chance that a pair is not an edge.
    a = p_k * p_k
    b = -p_k * (2 * num_samples + r * r * (1.0 - p_k))
    c = float(num_samples) ** 2
    n = (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
    return n / num_samples - 1.0


def _edge_mask(g, etype, u, v):
    """Whether each pair (u[i], v[i]) is an edge of relation ``etype``."""
    if not u.numel():
        return torch.zeros(0, dtype=torch.bool)
    if isinstance(g, Graph):  # The relation's sorted edge keys, made once.
        r = g._rel[g.to_canonical_etype(None if _is_homogeneous(g) else etype)]
        return r.find(u, v) >= 0
    # A DistGraph: the out-edges of the pairs' sources, where they live.
    from tessera.distributed.graph import sample_neighbors
    n_dst = max(_type_nodes(g, etype[2]), 1)
    sources = torch.unique(u)
    if _is_homogeneous(g):
        src, dst = sample_neighbors(g, sources, -1, edge_dir="out").edges()
    else:
        fanout = {c: (-1 if c == etype else 0) for c in g.canonical_etypes}
        frontier = sample_neighbors(g, {etype[0]: sources}, fanout, edge_dir="out")
        src, dst = frontier.edges(etype=etype)
    return torch.isin(u * n_dst + v, src * n_dst + dst)


def global_uniform_negative_sampling(g, num_samples, exclude_self_loops=True, replace=False,
                                     etype=None, redundancy=None):
    """DGL's ``dgl.sampling.global_uniform_negative_sampling`` on a tessera
    graph (an in-memory graph or a DistGraph): up to ``num_samples`` pairs
    (u, v), u uniform over the relation's source type and v over its
    destination type, none of them an edge of the relation (nor a self-loop
    with ``exclude_self_loops`` when both ends have one type). As DGL: the
    candidates are drawn with 3 tries each; without ``replace`` the pairs are
    unique and sorted by (v, u), and fewer may come back on a small or dense graph."""
    c = (tuple(g.canonical_etypes[0]) if etype is None and len(g.canonical_etypes) == 1
         else tuple(g.to_canonical_etype(etype)))
    num_samples = int(num_samples)
    empty = torch.empty(0, dtype=torch.int64)
    n_src, n_dst = _type_nodes(g, c[0]), _type_nodes(g, c[2])
    num_edges = g.num_edges() if _is_homogeneous(g) else g.num_edges(c)
    if num_samples <= 0 or n_src * n_dst <= num_edges:
        return empty, empty.clone()
    no_loops = bool(exclude_self_loops) and c[0] == c[2]
    if redundancy is None:
        redundancy = _redundancy(num_samples, num_edges, n_src * n_dst)
    n = int(num_samples * (1 + redundancy))
    u, v = torch.full((n,), -1, dtype=torch.int64), torch.full((n,), -1, dtype=torch.int64)
    todo = torch.arange(n)
    for _ in range(3):  # DGL's tries per candidate.
        if not todo.numel():
            break
        cu = torch.randint(0, n_src, (todo.numel(),), dtype=torch.int64)
        cv = torch.randint(0, n_dst, (todo.numel(),), dtype=torch.int64)
        bad = _edge_mask(g, c, cu, cv)
        if no_loops:
            bad |= cu == cv
        u[todo[~bad]], v[todo[~bad]] = cu[~bad], cv[~bad]
        todo = todo[bad]
    found = u >= 0
    u, v = u[found], v[found]
    if not replace:
        keys = torch.unique(v * n_src + u)  # DGL's order: by destination, then source.
        u, v = keys % n_src, keys // n_src
    return u[:num_samples], v[:num_samples]


class GlobalUniform(_BaseNegativeSampler):
    """dgl.dataloading.negative_sampler.GlobalUniform: ``k * len(eids)`` pairs
    (u', v') uniform over the relation's source and destination types, none
    an edge (see :func:`global_uniform_negative_sampling`; at most that many).
    Callable on a DistGraph or an in-memory graph; not a ``negative_sampler``
    of ``DistEdgeDataLoader`` (docs/python.md)."""

    def __init__(self, k, exclude_self_loops=True, replace=False):
        self.k = _check_k(k, "GlobalUniform")
        self.exclude_self_loops, self.replace = exclude_self_loops, replace

    def _generate(self, g, eids, canonical_etype):
        return global_uniform_negative_sampling(g, len(eids) * self.k, self.exclude_self_loops,
                                                self.replace, canonical_etype)


negative_sampler = types.SimpleNamespace(Uniform=Uniform, PerSourceUniform=PerSourceUniform,
                                         GlobalUniform=GlobalUniform)


def _seed():
    # Follows torch.manual_seed, so a seeded script shuffles reproducibly.
    return int(torch.randint(0, 2**62, (1,)).item())


def _count(kwargs, name, default, what, low, high):
    value = kwargs.get(name)
    return default if value is None else as_int(value, f"{what}: {name}", low, high)


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
    timeout = float(kwargs.get("timeout", 600.0))
    if timeout != timeout:
        raise ValueError(f"{what}: timeout is the longest wait for a batch in seconds (<= 0: "
                         f"no limit), got {timeout}")
    seed = kwargs.get("seed")
    return dict(batch_size=_count(kwargs, "batch_size", 1, what, 1, INT64_MAX),
                shuffle=bool(kwargs.get("shuffle", False)),
                drop_last=bool(kwargs.get("drop_last", False)),
                seed=_seed() if seed is None else as_seed(seed, f"{what}: seed"),
                # -1: the default (initialize's num_workers, else the launcher's).
                num_workers=_count(kwargs, "num_workers", context.default_num_workers(),
                                   what, -1, INT32_MAX),
                prefetch=_count(kwargs, "prefetch", 0, what, 0, INT32_MAX),
                even_batches=bool(kwargs.get("even_batches", True)),
                timeout=timeout)


def _typed_ids(g, nids, what):
    """{ntype: per-type ids} on a heterograph, else None."""
    if isinstance(nids, dict) and not g.is_homogeneous:
        return {str(k): as_ids(v, what)[0] for k, v in nids.items()}
    return None


def _node_ids(g, nids, what, kind="node"):
    """Ids of a graph's one node type (``kind`` "edge": its one relation);
    ``{type: ids}`` must name it, as on a heterograph."""
    if isinstance(nids, dict):
        if len(nids) != 1:
            raise _C.TesseraError(f"{what}: dict ids need a heterograph")
        key = next(iter(nids))
        (check_node_type if kind == "node" else check_relation)(g, key, what)
        nids = nids[key]
    return as_ids(nids, what)[0]


class DistNodeDataLoader(_Resumable):
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
        if self._typed:  # The order of the types' seeds, as given.
            self._seed_types = [t for t in typed if t in g.ntypes]
        common = (a["batch_size"], a["shuffle"], a["drop_last"], a["seed"], a["num_workers"],
                  a["prefetch"], a["even_batches"], a["timeout"])
        feats, labels = _prefetch_names(s)
        if self._typed and (feats or labels):
            raise _C.TesseraError("DistNodeDataLoader: prefetch_node_feats / "
                                  "prefetch_labels work on homogeneous loaders only for now")
        seeds = typed if self._typed else _node_ids(g, nids, "DistNodeDataLoader nids")
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
            for b in self._each():
                seeds = dict(zip(ntypes, b.seeds))
                # As DGL's, the seeds are the batch's (type, id) pairs grouped
                # by their types: only those, in the order nids named them.
                # input_nodes and the blocks have every type (DGL's too).
                yield (dict(zip(ntypes, b.input_nodes)),
                       {t: seeds[t] for t in self._seed_types if seeds[t].numel()},
                       _blocks(b.blocks, True))
            return
        current = None
        try:
            for b in self._each():
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


def _check_negative_sampler(sampler):
    """The loader's sampler threads draw per-source uniform negatives only."""
    if sampler is None:
        return
    kind = type(sampler)
    if (isinstance(sampler, PerSourceUniform) and kind._generate is PerSourceUniform._generate
            and kind.__call__ is _BaseNegativeSampler.__call__):
        return
    what = kind.__name__ if isinstance(sampler, _BaseNegativeSampler) else "a callable"
    raise _C.TesseraError(
        f"DistEdgeDataLoader: negative_sampler must be negative_sampler.Uniform(k) (= "
        f"PerSourceUniform(k)), whose negatives the loader's C++ sampler threads draw; got "
        f"{what}. Other samplers (GlobalUniform, custom ones) cannot give the loader "
        f"their pairs: call them on the batch (sampler(g, pos.edata[EID])) instead")


class DistEdgeDataLoader(_Resumable):
    """Mini-batches for link prediction over edges ``eids``. Yields
    ``(input_nodes, pair_graph, blocks)``, or with a ``negative_sampler``
    ``(input_nodes, pos_pair_graph, neg_pair_graph, blocks)``. ``exclude``:
    None, "self" (the batch's edges), "reverse_id" (and their reverses,
    ``reverse_eids``) or "reverse_types" (and the edges of the same
    per-relation id in the reverse relations, ``reverse_etypes``) are never
    sampled into the blocks.

    On a heterograph ``eids`` is ``{etype: per-relation ids}`` (DGL): the pair
    graphs and the blocks are typed, ``input_nodes``
    ``{ntype: ids}``; the positive pair graph has every node type but only
    the relations of the batch's edges (DGL's edge subgraph); negatives of an
    edge come from its relation's destination type. ``reverse_eids`` is then
    ``{etype: ids}`` (the reverse of edge i of a relation is edge
    ``reverse_eids[etype][i]`` of the same relation) or a homogeneous tensor
    over every edge."""

    def __init__(self, g, eids, graph_sampler, device=None, exclude=None, reverse_eids=None,
                 reverse_etypes=None, negative_sampler=None, **kwargs):
        a = _loader_args(dict(kwargs, device=device), "DistEdgeDataLoader")
        _check_negative_sampler(negative_sampler)
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
            reverse_eids = _node_ids(g, reverse_eids, "reverse_eids", "edge")
        rev = None if reverse_eids is None else as_ids(reverse_eids, "reverse_eids")[0]
        feats, labels = _prefetch_names(s)
        ids = _node_ids(g, eids, "DistEdgeDataLoader eids", "edge")
        self._loader = _C.EdgeLoader(g._g, ids, fanouts, s.edge_dir, s.replace, s.prob,
                                     *common, rev, etype_fanouts, feats, labels, {}, {})

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        typed = self._typed
        for b in self._each():
            input_nodes = dict(zip(self._g.ntypes, b.input_nodes)) if typed else b.input_nodes[0]
            pos, blocks = PairGraph._native(b.positive, typed, True), _blocks(b.blocks, typed)
            if self._negatives:
                yield input_nodes, pos, PairGraph._native(b.negative, typed, False), blocks
            else:
                yield input_nodes, pos, blocks


def _default_collate(items):
    """Items of a sequence through PyTorch's default_collate (numbers and
    tensors stacked); a tensor dataset's batch is its rows (DGL has no
    default: its collate_fn=None fails)."""
    from torch.utils.data import default_collate
    return default_collate(items)


def _scalar(x):
    """A one-element tensor or numpy value as a Python number (DGL's
    ``F.as_scalar``); anything else as it is (where DGL fails)."""
    item = getattr(x, "item", None)
    if item is None or isinstance(x, (str, bytes)):
        return x
    try:
        return item()
    except (ValueError, RuntimeError, TypeError):  # Not one element: a row.
        return x


def _items(dataset, positions):
    """What DGL's DistDataLoader gives a collate_fn: a list of the items at
    ``positions`` (an int64 tensor), each one-element tensor or numpy value
    as a Python number, of an ``(type, id)`` pair the id."""
    if isinstance(dataset, (torch.Tensor, np.ndarray)):
        rows = dataset[positions if isinstance(dataset, torch.Tensor) else positions.numpy()]
        # One element a row: Python numbers, as item() gives; else the rows.
        one = math.prod(dataset.shape[1:]) == 1
        return rows.reshape(-1).tolist() if one else list(rows)
    items = [dataset[i] for i in positions.tolist()]
    if items and isinstance(items[0], tuple):
        return [(p[0], _scalar(p[1])) if isinstance(p, tuple) and len(p) == 2 else p
                for p in items]
    return [_scalar(x) for x in items]


# The DistDataLoaders whose collate_fn this thread is running (their tokens).
_collating = threading.local()


class DistDataLoader(_Resumable):
    """Batches of any dataset (dgl.distributed.DistDataLoader): a tensor (rows)
    or a sequence (items). ``collate_fn(batch)`` may be any Python callable;
    as DGL's, ``batch`` is a list of the items, each one-element tensor or
    numpy value as a Python number (of an ``(type, id)`` pair the id). It
    runs in tessera's sampler threads (under the GIL) when ``num_workers`` >
    0, never in other processes. Without a collate_fn (an error in DGL) a
    batch of a tensor dataset is its rows, of a sequence the items through
    PyTorch's ``default_collate``."""

    def __init__(self, dataset, batch_size, shuffle=False, collate_fn=None, drop_last=False,
                 queue_size=None, **kwargs):
        a = _loader_args(dict(kwargs, batch_size=batch_size, shuffle=shuffle,
                              drop_last=drop_last), "DistDataLoader")
        # A token, not self: the C++ loader keeps fetch, and a reference
        # back to this object would be a cycle the GC cannot see.
        self._token = token = object()

        def fetch(positions):
            outer = getattr(_collating, "tokens", ())
            _collating.tokens = outer + (token,)
            try:
                if collate_fn is None:
                    if isinstance(dataset, torch.Tensor):
                        return dataset[positions]
                    return _default_collate([dataset[i] for i in positions.tolist()])
                return collate_fn(_items(dataset, positions))
            finally:
                _collating.tokens = outer
        self._loader = _C.DataLoader(len(dataset), fetch, a["batch_size"], a["shuffle"],
                                     a["drop_last"], a["seed"], a["num_workers"], a["prefetch"],
                                     a["even_batches"], a["timeout"])

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        if self._token in getattr(_collating, "tokens", ()):
            # Each level would start sampler threads until none can start.
            raise _C.TesseraError("DistDataLoader: its collate_fn iterates the same loader "
                                  "(an endless recursion)")
        return self._each()
