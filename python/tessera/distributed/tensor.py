"""DistTensor and partition policies (dgl.distributed.DistTensor)."""
import math

import torch

from tessera import _C
from tessera._utils import INT64_MAX, as_ids, as_int, as_seed, check_text
from tessera.distributed import _prefetch, context
from tessera.distributed.partition_book import GraphPartitionBook


_DEFAULT_TYPES = ("", "_N", "_E", "_N:_E:_N")


class PartitionPolicy:
    """How rows are sharded: like the nodes ("node") or the edges ("edge"),
    and on a heterograph of which type: "node~paper", "edge~author:writes:paper"
    (DGL's policy strings). Bare "node" / "edge" mean the graph's only type."""

    def __init__(self, policy_str, partition_book=None):
        if not isinstance(policy_str, str):
            raise TypeError(f"PartitionPolicy: the policy is a string, got {policy_str!r}")
        kind, _, type_ = policy_str.partition("~")
        kind = kind.split(":")[0]
        if kind not in ("node", "edge"):
            raise ValueError(f"PartitionPolicy: \"{policy_str}\" is neither a node nor an "
                             "edge policy")
        self.kind = kind
        self._type = "" if type_ in _DEFAULT_TYPES else type_
        default = "_N" if kind == "node" else "_N:_E:_N"
        self.policy_str = f"{kind}~{self._type or default}"
        self.partition_book = partition_book

    @property
    def type_name(self):
        return self._type or ("_N" if self.kind == "node" else "_N:_E:_N")

    @property
    def is_node(self):
        return self.kind == "node"

    def _book(self, what):
        if self.partition_book is None:
            raise _C.TesseraError(f"PartitionPolicy('{self.policy_str}').{what}: the policy "
                                  f"has no partition book (pass one, or take the policy from "
                                  f"g.get_node_partition_policy / get_edge_partition_policy)")
        return self.partition_book

    @property
    def part_id(self):
        """The partition of this machine (the partition book's ``partid``)."""
        return self._book("part_id").partid

    def to_local(self, id_tensor):
        """Ids of this policy's type -> row offsets in this machine's
        partition (an error for an id another partition owns)."""
        book = self._book("to_local")
        if self.is_node:
            return book.nid2localnid(id_tensor, book.partid, self.type_name)
        return book.eid2localeid(id_tensor, book.partid, self.type_name)

    def to_partid(self, id_tensor):
        """Ids of this policy's type -> the partitions that own them."""
        book = self._book("to_partid")
        if self.is_node:
            return book.nid2partid(id_tensor, self.type_name)
        return book.eid2partid(id_tensor, self.type_name)

    def get_part_size(self):
        """Rows of this policy's type in this machine's partition (an int)."""
        book = self._book("get_part_size")
        ids = (book.partid2nids(book.partid, self.type_name) if self.is_node
               else book.partid2eids(book.partid, self.type_name))
        return len(ids)

    def get_size(self):
        """Rows of this policy's type over all partitions (an int)."""
        book = self._book("get_size")
        return (book.num_nodes(self.type_name) if self.is_node
                else book.num_edges(self.type_name))

    def __repr__(self):
        return f"PartitionPolicy('{self.policy_str}')"

    def __eq__(self, other):
        return (isinstance(other, PartitionPolicy) and other.kind == self.kind
                and other.type_name == self.type_name)


class NodePartitionPolicy(PartitionPolicy):
    """dgl.distributed.NodePartitionPolicy(partition_book, ntype)."""

    def __init__(self, partition_book, ntype="_N"):
        if not isinstance(ntype, str):
            raise TypeError(f"NodePartitionPolicy: a node type is a string, got {ntype!r}")
        if partition_book is not None and ntype != "_N":
            ntype = partition_book.ntypes[partition_book.get_ntype_id(ntype)]
        super().__init__(f"node~{ntype}", partition_book)


class EdgePartitionPolicy(PartitionPolicy):
    """dgl.distributed.EdgePartitionPolicy(partition_book, etype): etype a
    canonical (src, relation, dst) tuple or a relation name."""

    def __init__(self, partition_book, etype=("_N", "_E", "_N")):
        if partition_book is not None and etype not in ("_E", ("_N", "_E", "_N")):
            etype = partition_book.to_canonical_etype(etype)
        if isinstance(etype, tuple):
            etype = ":".join(etype)
        super().__init__(f"edge~{etype}", partition_book)


def _policy_args(part_policy):
    """(kind, type) for the C++ constructor; "" means decide by the shape."""
    if part_policy is None:
        return "", ""
    if isinstance(part_policy, str):
        part_policy = PartitionPolicy(part_policy)
    if isinstance(part_policy, PartitionPolicy):
        return part_policy.kind, part_policy._type
    raise TypeError(f"part_policy must be a PartitionPolicy, \"node\" or \"edge\", got "
                    f"{type(part_policy).__name__}")


# Built-in initialisers run where the rows live, without a Python call per
# shard: pass tessera.distributed.init.uniform(a, b) etc. as init_func.
class _BuiltinInit:
    def __init__(self, kind, a=0.0, b=1.0, seed=0):
        self.kind, self.a, self.b = kind, float(a), float(b)
        self.seed = as_seed(seed, f"init.{kind}: seed")
        names = {"uniform": ("low", "high"), "normal": ("mean", "std")}.get(kind)
        if names:  # torch's uniform_ / normal_ refuse these too.
            for name, v in zip(names, (self.a, self.b)):
                if not math.isfinite(v):
                    raise ValueError(f"init.{kind}: {name} must be finite, got {v}")
            if kind == "uniform" and self.a > self.b:
                raise ValueError(f"init.uniform: low must be <= high, got low={self.a}, "
                                 f"high={self.b}")
            if kind == "normal" and self.b < 0:
                raise ValueError(f"init.normal: std must be >= 0, got {self.b}")

    def __call__(self, shape, dtype):
        if self.kind == "zeros":
            return torch.zeros(shape, dtype=dtype)
        if self.kind == "uniform":
            return torch.empty(shape, dtype=dtype).uniform_(self.a, self.b)
        return torch.empty(shape, dtype=dtype).normal_(self.a, self.b)


def zeros():
    return _BuiltinInit("zeros")


def uniform(low=-1.0, high=1.0, seed=0):
    return _BuiltinInit("uniform", low, high, seed)


def normal(mean=0.0, std=1.0, seed=0):
    return _BuiltinInit("normal", mean, std, seed)


def _machine_share(rows, machines):
    """[begin, end) of a machine's ``rows`` that this trainer takes when the
    machine's trainers split them (in rank order)."""
    info = context._state["info"]
    world, rank = (int(info["world_size"]), int(info["rank"])) if info else (1, 0)
    per_machine = max(1, world // machines)
    k = rank % per_machine
    return rows * k // per_machine, rows * (k + 1) // per_machine


def _local_views(*tensors):
    """The tensors' local_partition views (raw: reading them keeps prefetch)."""
    return [t._t.local_partition() for t in tensors]


def _fill_with(t, init_func):
    """Creator only: every partition's rows from init_func(part_shape, dtype),
    as DGL's servers do for their shard."""
    shape = list(t.shape)
    for p in range(t.book().num_partitions()):
        begin, end = t.id_range(p)
        if end == begin:
            continue
        part_shape = tuple([end - begin] + shape[1:])
        rows = init_func(part_shape, t.dtype)
        if not isinstance(rows, torch.Tensor) or tuple(rows.shape) != part_shape:
            got = tuple(rows.shape) if isinstance(rows, torch.Tensor) else type(rows).__name__
            raise _C.TesseraError(f"DistTensor '{t.name}': init_func{part_shape} returned "
                                  f"{got}, expected a tensor of shape {part_shape}")
        t.set(torch.arange(begin, end, dtype=torch.int64), rows)


def _barrier(handle, error):
    """Every trainer's collective barrier, carrying whether ``error`` (this
    trainer's failure, or None) happened; True if any trainer failed. A
    barrier that fails after ``error`` raises ``error``, with a note."""
    try:
        return handle.barrier_any(error is not None)
    except Exception as b:
        if error is None:
            raise
        error.add_note(f"tessera: the barrier after this error failed too: {b}")
        raise error from None


def _init_collectively(handle, init_func):
    """Every trainer: the one whose construction created the tensor fills it
    from init_func; all meet at a barrier that carries whether the fill
    failed (met also then, so that nobody waits forever). After a failure
    the creator deletes the tensor, and all meet again before anyone raises
    (so that a retry creates it anew: every handle was made before the
    first barrier); the creator raises its error, the others one that
    points to it: nobody goes on with rows that were never filled."""
    error = None
    if handle.created:
        try:
            _fill_with(handle, init_func)
        except Exception as e:  # Still meet the others at the barrier.
            error = e
    if not _barrier(handle, error):
        return
    if error is not None:
        try:
            handle.delete()
        except Exception as d:  # The original error stays the one raised.
            error.add_note(f"tessera: deleting the unfilled tensor failed too: {d}")
    _barrier(handle, error)  # Nobody retries before the delete.
    if error is not None:
        raise error
    raise _C.TesseraError(f"DistTensor '{handle.name}': init_func raised on the trainer "
                          f"that created the tensor (its log has the error); the unfilled "
                          f"tensor was deleted")


def _check_name(name, what):
    """A tensor's name: a str that C++ keeps whole (no NUL)."""
    if name is not None:
        check_text(name, f"{what}: name")
    return name


def _init_kind(init_func):
    """(kind, a, b, seed) for the C++ initialiser; Python callables start at zero."""
    if isinstance(init_func, _BuiltinInit):
        return init_func.kind, init_func.a, init_func.b, init_func.seed
    return "zeros", 0.0, 1.0, 0




class DistTensor:
    """A tensor whose rows are sharded over the machines like the graph's nodes
    (or edges). ``t[ids]`` reads rows, ``t[ids] = rows`` writes them.

    Creating one with the name of an existing tensor (same shape and dtype)
    attaches to it. ``init_func(shape, dtype) -> Tensor`` fills each
    partition's rows (called once per partition, by the one trainer whose
    call created the tensor); with an ``init_func`` construction is
    collective: every trainer must construct the tensor, and all return once
    it is filled. A non-persistent tensor is deleted when the handle that
    created it is garbage collected.
    """

    def __init__(self, shape, dtype, name=None, init_func=None, part_policy=None,
                 persistent=False, is_gdata=True, attach=True, _handle=None):
        if _handle is not None:
            self._t = _handle
            return
        try:
            shape = list(shape)
        except TypeError:
            raise TypeError(f"DistTensor: shape must be a sequence of ints, got {shape!r}")
        shape = [as_int(s, f"DistTensor: shape[{i}]", 0, INT64_MAX)
                 for i, s in enumerate(shape)]
        _check_name(name, "DistTensor")
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"DistTensor: dtype must be a torch.dtype, got {dtype!r}")
        if name is None and persistent:
            raise _C.TesseraError("DistTensor: an anonymous tensor cannot be persistent")
        if init_func is not None and not callable(init_func):
            raise TypeError("DistTensor: init_func must be callable (shape, dtype) -> Tensor")
        kind, a, b, seed = _init_kind(init_func)
        policy, type_ = _policy_args(part_policy)
        self._t = _C.DistTensor(shape, dtype, name or "", kind, a, b, seed, policy,
                                bool(persistent), type_)
        if init_func is not None and not isinstance(init_func, _BuiltinInit):
            _init_collectively(self._t, init_func)

    @classmethod
    def _wrap(cls, handle):
        return cls(None, None, _handle=handle)

    def __reduce__(self):
        """``torch.save(t, f)`` / pickle: every row, as a plain tensor (a
        handle would mean nothing outside the job; DGL's scripts end by
        saving their inference output this way)."""
        return (torch.clone, (self[torch.arange(self.shape[0])],))

    def __getitem__(self, idx):
        # A homogeneous node tensor read at a batch's input nodes or seeds:
        # perhaps pulled ahead by the loader (tessera/distributed/_prefetch.py).
        if isinstance(idx, torch.Tensor) and self._t.key == "node/" + self._t.name:
            rows = _prefetch.lookup(self._t.name, idx)
            if rows is not None:
                return rows
        # One id (an int or a 0-d tensor) reads one row kept as [1, ...], as
        # DGL's pull of a one-id index.
        ids, _ = as_ids(idx, f"DistTensor '{self.name}'", len(self))
        return self._t.pull(ids)

    def __setitem__(self, idx, val):
        """Writes rows: ``val`` broadcasts to ``[len(ids), *row shape]`` (a
        scalar or one row fills every row, as DGL's ``data[ids] = val``); a
        tensor must have the tensor's dtype (DGL raises too)."""
        ids, _ = as_ids(idx, f"DistTensor '{self.name}'", len(self))
        if isinstance(val, torch.Tensor):
            if val.dtype != self.dtype:
                raise _C.TesseraError(f"writing rows of '{self.name}': the rows are {val.dtype}, "
                                      f"the tensor {self.dtype} (convert them with .to(), "
                                      f"as DGL requires)")
        else:  # Python numbers, lists, numpy arrays.
            val = torch.as_tensor(val, dtype=self.dtype)
        want = (ids.numel(),) + self.shape[1:]
        if tuple(val.shape) != want:
            try:
                val = val.expand(want)
            except RuntimeError:
                raise _C.TesseraError(f"writing rows of '{self.name}': rows have shape "
                                      f"{list(val.shape)}, expected {list(want)} (or a shape "
                                      f"that broadcasts to it)") from None
        _prefetch.wrote(self._t.name)
        self._t.set(ids, val.contiguous())

    def __len__(self):
        return self._t.shape[0]

    def __repr__(self):
        return f"DistTensor(name='{self.name}', shape={self.shape}, dtype={self.dtype})"

    @property
    def shape(self):
        return torch.Size(self._t.shape)  # DGL's type (a tuple)

    @property
    def dtype(self):
        return self._t.dtype

    @property
    def name(self):
        return self._t.name

    @property
    def tensor_name(self):
        return self._t.name

    @property
    def kvstore_key(self):
        return self._t.key

    @property
    def part_policy(self):
        return PartitionPolicy(f"{self._t.policy}~{self._t.type_name}",
                               GraphPartitionBook(self._t.book()))

    @property
    def type_name(self):
        """The node type or canonical relation ("src:rel:dst") of its rows."""
        return self._t.type_name

    def _local_range(self):
        """[begin, end) of the rows this machine's partition owns."""
        return self._t.id_range(self._t.book().partid)

    def count_nonzero(self):
        """The number of nonzero elements over every row (an int), as DGL.
        DGL counts on each machine; here this trainer reads the rows."""
        width = max(1, math.prod(self.shape[1:]))
        chunk = max(1, (1 << 22) // width)
        total = 0
        for begin in range(0, len(self), chunk):
            ids = torch.arange(begin, min(begin + chunk, len(self)), dtype=torch.int64)
            total += int(torch.count_nonzero(self._t.pull(ids)))
        return total

    def __or__(self, other):
        """``mask1 | mask2``: a new anonymous DistTensor of the element-wise OR
        (DGL's union of masks). Collective, as in DGL: every trainer must
        call it (in the same order as its other anonymous tensors); the
        trainers of a machine each compute a share of its rows, in place in
        its memory, and all return once every row is written."""
        if not isinstance(other, DistTensor):
            return NotImplemented
        for t in (self, other):
            if t.dtype.is_floating_point or t.dtype.is_complex:
                raise _C.TesseraError(f"DistTensor '{self.name}' | '{other.name}': '{t.name}' "
                                      f"is {t.dtype}; | takes bool or integer tensors")
        if (self.shape != other.shape or self.part_policy != other.part_policy):
            raise _C.TesseraError(f"DistTensor '{self.name}' | '{other.name}': the tensors "
                                  f"differ in shape ({list(self.shape)} vs "
                                  f"{list(other.shape)}) or partition policy "
                                  f"({self.part_policy.policy_str} vs "
                                  f"{other.part_policy.policy_str})")
        error = None
        try:
            out = DistTensor(self.shape, self.dtype, part_policy=self.part_policy)
            begin, end = self._local_range()
            lo, hi = _machine_share(end - begin, self._t.book().num_partitions())
            try:
                views = _local_views(out, self, other)
            except _C.TesseraError:  # No shard mapped here (all access remote): pull, push.
                ids = torch.arange(begin + lo, begin + hi, dtype=torch.int64)
                rows = (self._t.pull(ids) | other._t.pull(ids)).to(self.dtype)
                out._t.set(ids, rows.contiguous())
            else:
                views[0][lo:hi] = views[1][lo:hi] | views[2][lo:hi]
        except Exception as e:  # Still meet the others at the barrier.
            error = e
        failed = _barrier(self._t, error)
        if error is not None:
            raise error
        if failed:
            raise _C.TesseraError(f"DistTensor '{self.name}' | '{other.name}': another trainer "
                                  f"failed to write its rows (its log has the error)")
        return out

    @property
    def local_partition(self):
        """This machine's rows (ids ``[begin, end)`` of its partition) as a
        tensor over the store's own memory, as DGL's: writes through it
        change the tensor for every trainer at once, without the row locks
        that ``t[ids] = rows`` takes. Standalone, the process's copy."""
        _prefetch.wrote(self._t.name)  # Its rows may change behind the loader.
        return self._t.local_partition()

    def add_(self, idx, val):
        """Adds rows element-wise (atomic per row); a tessera extension."""
        ids, _ = as_ids(idx, f"DistTensor '{self.name}'", len(self))
        if isinstance(val, torch.Tensor):
            if val.dtype != self.dtype:  # As t[ids] = rows: never a silent cast.
                raise _C.TesseraError(f"adding rows to '{self.name}': the rows are {val.dtype}, "
                                      f"the tensor {self.dtype} (convert them with .to())")
        else:  # Python numbers, lists, numpy arrays.
            val = torch.as_tensor(val, dtype=self.dtype)
        _prefetch.wrote(self._t.name)
        self._t.add(ids, val)
