"""Blocks, the neighbour sampler and the data loaders (dgl.dataloading)."""
import torch

from tessera import _C, EID, NID
from tessera._utils import as_ids
from tessera.distributed import context


class Block:
    """One message-passing layer (DGL's block): edges from ``num_src_nodes()``
    source nodes to ``num_dst_nodes()`` destination nodes, the destinations
    being the first sources. ``srcdata[NID]`` / ``dstdata[NID]`` hold global
    node ids, ``edata[EID]`` global edge ids; ``edges()`` gives the edges in
    block-local ids. ``indptr`` / ``indices`` are the CSR over destinations.
    """

    is_block = True

    def __init__(self, src_nodes, indptr, indices, eids):
        self.indptr, self.indices = indptr, indices
        self._num_dst = indptr.numel() - 1
        self.srcdata = {NID: src_nodes}
        self.dstdata = {NID: src_nodes[:self._num_dst]}
        self.edata = {EID: eids}
        self._edge_dst = None

    def num_src_nodes(self, ntype=None):
        return self.srcdata[NID].numel()

    def num_dst_nodes(self, ntype=None):
        return self._num_dst

    def num_edges(self, etype=None):
        return self.indices.numel()

    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes
    number_of_edges = num_edges

    @property
    def edge_dst(self):
        """The block-local destination of each edge."""
        if self._edge_dst is None:
            self._edge_dst = torch.repeat_interleave(
                torch.arange(self._num_dst, dtype=torch.int64), self.in_degrees())
        return self._edge_dst

    def edges(self, form="uv", order="eid"):
        if form == "uv":
            return self.indices, self.edge_dst
        if form == "eid":
            return torch.arange(self.num_edges(), dtype=torch.int64)
        if form == "all":
            return self.indices, self.edge_dst, torch.arange(self.num_edges(), dtype=torch.int64)
        raise ValueError(f"edges(form=...) must be 'uv', 'eid' or 'all', got {form!r}")

    def in_degrees(self, v=None):
        deg = self.indptr[1:] - self.indptr[:-1]
        return deg if v is None else deg[as_ids(v, "in_degrees")[0]]

    def out_degrees(self, u=None):
        deg = torch.bincount(self.indices, minlength=self.num_src_nodes())
        return deg if u is None else deg[as_ids(u, "out_degrees")[0]]

    def to(self, device, **kwargs):
        if torch.device(device).type != "cpu":
            raise _C.TesseraError(f"Block.to({device}): tessera blocks live on the CPU")
        return self

    def __repr__(self):
        return (f"Block(num_src_nodes={self.num_src_nodes()}, "
                f"num_dst_nodes={self.num_dst_nodes()}, num_edges={self.num_edges()})")


def _blocks(raw):
    return [Block(*b) for b in raw]


def _each(native_loader):
    """The batches of one epoch of a C++ loader (a generator)."""
    it = iter(native_loader)
    while True:
        try:
            yield next(it)
        except StopIteration:
            return


class PairGraph:
    """The positive (or negative) node pairs of an edge batch over the batch's
    compacted nodes: ``edges()`` in those local ids, ``ndata[NID]`` their global
    ids, ``edata[EID]`` the positive edges' global ids."""

    def __init__(self, src, dst, nodes, eids=None):
        self._src, self._dst = src, dst
        self.ndata = {NID: nodes}
        self.edata = {} if eids is None else {EID: eids}

    def edges(self, form="uv"):
        if form != "uv":
            raise ValueError("PairGraph.edges supports form='uv'")
        return self._src, self._dst

    def num_nodes(self):
        return self.ndata[NID].numel()

    def num_edges(self):
        return self._src.numel()

    number_of_nodes = num_nodes
    number_of_edges = num_edges


class NeighborSampler:
    """Multi-layer neighbour sampling (dgl.dataloading.NeighborSampler):
    ``fanouts[l]`` neighbours per node at layer l, input layer first; -1 takes
    all."""

    def __init__(self, fanouts, edge_dir="in", prob=None, replace=False, **kwargs):
        if isinstance(fanouts, int):
            raise TypeError("NeighborSampler: fanouts is a list, one per layer")
        fl = []
        for f in fanouts:
            if isinstance(f, dict):
                if len(f) != 1:
                    raise _C.TesseraError("NeighborSampler: per-relation fanouts need a "
                                          "heterograph")
                f = next(iter(f.values()))
            fl.append(int(f))
        if prob is not None and not isinstance(prob, str):
            raise TypeError("NeighborSampler: prob must be the name of an edge tensor")
        self.fanouts, self.edge_dir, self.prob, self.replace = fl, edge_dir, prob or "", replace


MultiLayerNeighborSampler = NeighborSampler


class MultiLayerFullNeighborSampler(NeighborSampler):
    def __init__(self, num_layers, edge_dir="in", **kwargs):
        super().__init__([-1] * num_layers, edge_dir=edge_dir)


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
             "use_ddp", "queue_size"}
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


def _node_ids(nids, what):
    if isinstance(nids, dict):
        if len(nids) != 1:
            raise _C.TesseraError(f"{what}: dict ids need a heterograph")
        nids = next(iter(nids.values()))
    return as_ids(nids, what)[0]


class DistNodeDataLoader:
    """Mini-batches for node classification: iterating yields ``(input_nodes,
    seeds, blocks)``. Sampling runs in ``num_workers`` C++ threads of this
    process (default: the launcher's ``--num-samplers``), batches come in
    order. Every trainer gets the same number of batches (``even_batches``),
    so DDP never waits for a trainer that ran out."""

    def __init__(self, g, nids, graph_sampler, device=None, **kwargs):
        a = _loader_args(dict(kwargs, device=device), "DistNodeDataLoader")
        s = graph_sampler
        self._loader = _C.NodeLoader(g._g, _node_ids(nids, "DistNodeDataLoader nids"),
                                     s.fanouts, s.edge_dir, s.replace, s.prob,
                                     a["batch_size"], a["shuffle"], a["drop_last"], a["seed"],
                                     a["num_workers"], a["prefetch"], a["even_batches"],
                                     a["timeout"])

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        for input_nodes, seeds, raw in _each(self._loader):
            yield input_nodes, seeds, _blocks(raw)


class DistEdgeDataLoader:
    """Mini-batches for link prediction over edges ``eids``. Yields
    ``(input_nodes, pair_graph, blocks)``, or with a ``negative_sampler``
    ``(input_nodes, pos_pair_graph, neg_pair_graph, blocks)``. ``exclude``:
    None, "self" (the batch's edges) or "reverse_id" (and their reverses,
    ``reverse_eids[e]``) are never sampled into the blocks."""

    def __init__(self, g, eids, graph_sampler, device=None, exclude=None, reverse_eids=None,
                 negative_sampler=None, **kwargs):
        a = _loader_args(dict(kwargs, device=device), "DistEdgeDataLoader")
        if negative_sampler is not None and not isinstance(negative_sampler, Uniform):
            raise _C.TesseraError("DistEdgeDataLoader: negative_sampler must be "
                                  "negative_sampler.Uniform(k)")
        if exclude is not None and not isinstance(exclude, str):
            raise _C.TesseraError("DistEdgeDataLoader: exclude must be None, 'self' or "
                                  "'reverse_id'")
        self._negatives = negative_sampler.k if negative_sampler is not None else 0
        rev = None if reverse_eids is None else as_ids(reverse_eids, "reverse_eids")[0]
        s = graph_sampler
        self._loader = _C.EdgeLoader(g._g, _node_ids(eids, "DistEdgeDataLoader eids"),
                                     s.fanouts, s.edge_dir, s.replace, s.prob,
                                     a["batch_size"], a["shuffle"], a["drop_last"], a["seed"],
                                     a["num_workers"], a["prefetch"], a["even_batches"],
                                     a["timeout"], self._negatives, exclude or "none", rev)

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        for b in _each(self._loader):
            pos = PairGraph(b["pos_src"], b["pos_dst"], b["pair_nodes"], b["eids"])
            blocks = _blocks(b["blocks"])
            if self._negatives:
                neg = PairGraph(b["neg_src"], b["neg_dst"], b["pair_nodes"])
                yield b["input_nodes"], pos, neg, blocks
            else:
                yield b["input_nodes"], pos, blocks


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
