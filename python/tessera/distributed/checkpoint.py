"""Checkpoints of a training job (tessera's own: DGL has only per-rank
``save``/``load`` of sparse optimizer state, reloadable on the same trainer
count). A checkpoint restores on the same shape or on another number of
machines and trainers::

    from tessera.distributed import checkpoint

    path = checkpoint.latest(ckpt_dir)
    if path is not None:
        extra = checkpoint.restore(path, model=model, optimizer=opt, loaders=[loader])
        step = extra["step"]
    ...
    checkpoint.save(f"{ckpt_dir}/step-{step}", model=model, optimizer=opt,
                    loaders=[loader], extra={"step": step}, keep=3)

Both are collective: every trainer calls them, with the same path. What a
checkpoint holds (docs/checkpoint.md):

- every tensor created at run time with ``persistent=True``: so every
  ``DistEmbedding`` and its sparse optimizer's state (Adagrad's sums, Adam's
  moments and step counts), written in parallel by the machines that own
  the rows, with their original ids;
- the model's and the optimizer's ``state_dict()`` and ``extra``, written
  once (trainer 0);
- each trainer's random states (torch, numpy, ``random``) and its loaders'
  positions, so that a resumed run continues the same sequence of batches.

The folder must be one every machine sees (a shared file system). Its
``manifest.json`` is written last, after every file is on disk, with each
file's size and CRC-32C: a crash while saving leaves the older checkpoints
as they were, and ``restore`` names any file that is missing, truncated or
altered.
"""
import io
import json
import os
import pickle
import random
import time
import types

import numpy as np
import torch

from tessera import _C
from tessera.distributed import _prefetch, context, graph
from tessera.distributed.embedding import DistEmbedding
from tessera.distributed.tensor import DistTensor

__all__ = ["save", "restore", "latest", "Schedule"]

_DENSE = "dense.pt"  # model / optimizer state_dicts, extra, trainer 0's loader positions


def _trainer_file(rank):
    return f"trainer-{rank}.py.pt"  # random states and loader positions of one trainer


def _graph(g):
    """The graph a checkpoint is of: the one given, or the last one made."""
    if g is not None:
        return g
    for ref in reversed(graph._made):
        if ref() is not None:
            return ref()
    raise _C.TesseraError("checkpoint: no DistGraph exists (construct it after initialize())")


def _handles(tensors, sparse_optimizers):
    out = []
    for t in tensors:
        if isinstance(t, DistEmbedding):
            out.append(t._e.weight)
        elif isinstance(t, DistTensor):
            out.append(t._t)
        else:
            raise TypeError(f"checkpoint: tensors must be DistTensors or DistEmbeddings, "
                            f"got {type(t).__name__}")
    for o in sparse_optimizers:
        out.extend(o._o.tensors())
    return out


def _positions(loaders):
    return [dict(loader.state_dict(), batches=len(loader)) for loader in loaders]


# The manifest shows `extra` as JSON if it is a dict of at most this many
# bytes (indented) and levels (the manifest nests it one level below its
# own 64): the full `extra` is pickled into dense.pt whatever it is.
_MAX_EXTRA_JSON_BYTES = 1 << 20
_MAX_EXTRA_JSON_DEPTH = 63


def _json_depth(text):
    """How deep `text` (JSON) nests, strings skipped; iterative."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _manifest_extra(extra):
    """The JSON text of `extra` for the manifest: "{}" unless it is a dict
    that JSON shows within the manifest's limits (the save would otherwise
    fail for a copy that is only for display)."""
    if not isinstance(extra, dict):
        return "{}"
    try:
        text = json.dumps(extra, indent=1, allow_nan=False, ensure_ascii=False)
        size = len(text.encode("utf-8"))  # A lone surrogate cannot be: UnicodeEncodeError.
        if size > _MAX_EXTRA_JSON_BYTES or _json_depth(text) > _MAX_EXTRA_JSON_DEPTH:
            return "{}"
        json.loads(text, parse_int=_int64)  # The reader's integers are 64-bit.
    except (TypeError, ValueError, RecursionError):  # UnicodeError is a ValueError.
        return "{}"
    return text


def _int64(text):
    value = int(text)
    if not -2**63 <= value < 2**64:
        raise ValueError(f"{text} does not fit in 64 bits")
    return value


def save(path, model=None, optimizer=None, sparse_optimizers=(), tensors=(), loaders=(),
         extra=None, step=None, keep=None, g=None):
    """Writes a checkpoint into the folder ``path`` (an Error if it already
    holds a complete one) and returns ``path``. ``extra`` is any picklable
    object (a JSON-able dict of at most 1 MiB of JSON and 63 levels also
    shows in the manifest); ``step``
    orders checkpoints for :func:`latest` (default: ``extra["step"]``, else
    0). With ``keep``, only the newest ``keep`` of the checkpoints among
    ``path``'s sibling folders that were also saved with ``keep`` stay (and
    folders of saves that never finished go). Run-time persistent tensors are
    saved whether listed or not; ``tensors`` / ``sparse_optimizers`` add
    others. Every trainer must pass the same ``path`` and ``step``."""
    g = _graph(g)
    if step is None:
        step = extra.get("step", 0) if isinstance(extra, dict) else 0
    extra_json = _manifest_extra(extra)
    rank = g.rank()

    def write_dense(folder):
        torch.save({"model": None if model is None else model.state_dict(),
                    "optimizer": None if optimizer is None else optimizer.state_dict(),
                    "extra": extra, "loaders": _positions(loaders)},
                   os.path.join(folder, _DENSE))
        return [_DENSE]

    def write_trainer(folder):
        name = _trainer_file(rank)
        torch.save({"random": random.getstate(), "numpy": np.random.get_state(),
                    "loaders": _positions(loaders)}, os.path.join(folder, name))
        return [name]

    _C.save_checkpoint(g._g, os.fspath(path), int(step), _handles(tensors, sparse_optimizers),
                       True, extra_json, write_dense, write_trainer, int(keep or 0))
    return os.fspath(path)


def _resume(loaders, positions, scale):
    if len(positions) != len(loaders):
        raise _C.TesseraError(f"checkpoint: it holds {len(positions)} loader positions, "
                              f"restore was given {len(loaders)} loaders")
    for loader, p in zip(loaders, positions):
        batch = p["batch"]
        if scale and p.get("batches"):
            # Another trainer count: as far through the epoch as the saving job.
            batch = batch * len(loader) // p["batches"]
        loader.load_state_dict({"epoch": p["epoch"], "batch": batch})


class _Refused(pickle.UnpicklingError):
    pass


class _StateUnpickler(pickle.Unpickler):
    """Unpickles tensors, numpy arrays and plain Python values only. Any
    other class or function a pickle names could run code as it loads (a
    hostile checkpoint), so it is refused by name. (torch 1.13's own
    ``weights_only`` loader cannot read floats, so an optimizer's
    state_dict would not load through it.)"""

    _ALLOWED = {("collections", "OrderedDict"), ("torch", "Size"), ("torch", "device"),
                ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
                ("torch._utils", "_rebuild_sparse_tensor"), ("torch.serialization", "_get_layout"),
                ("_codecs", "encode"),
                ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
                ("builtins", "bytearray"), ("numpy", "ndarray"), ("numpy", "dtype"),
                ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar")}

    # torch's loader sets persistent_load to build each storage from the
    # element count the pickle claims, copying that many bytes out of the
    # zip record: a count beyond the record reads (or writes) past it. The
    # setter wraps the loader's function with a check against the records'
    # sizes (``_record_bytes``, set per file).
    _record_bytes = {}

    @property
    def persistent_load(self):
        return pickle.Unpickler.persistent_load.__get__(self)

    @persistent_load.setter
    def persistent_load(self, load):
        sizes = self._record_bytes

        def checked(saved_id):
            if not (isinstance(saved_id, tuple) and len(saved_id) == 5):
                raise _Refused(f"has a malformed storage reference {str(saved_id)[:80]}")
            _, storage_type, key, _, numel = saved_id
            dtype = torch.uint8 if storage_type is torch.UntypedStorage else getattr(
                storage_type, "dtype", None)
            if not isinstance(dtype, torch.dtype) or not isinstance(numel, int) or numel < 0:
                raise _Refused(f"has a malformed storage reference {str(saved_id)[:80]}")
            have = sizes.get(f"data/{key}")
            need = numel * torch._utils._element_size(dtype)
            if have is None or need > have:
                raise _Refused(f"claims a storage of {need} bytes in a record of "
                               f"{have if have is not None else 'no'} bytes")
            return load(saved_id)

        pickle.Unpickler.persistent_load.__set__(self, checked)

    def find_class(self, module, name):
        if module == "__builtin__":  # Protocol 2's name, which pickle maps.
            module = "builtins"
        if (module, name) in self._ALLOWED or (
                module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)):
            return super().find_class(module, name)
        raise _Refused(f"names {module}.{name}, which loading could run code for")


def _load_state(data):
    """torch.load(data) through _StateUnpickler. torch 1.13's torch.load
    replaces any pickle_module it is given by pickle's unless weights_only
    is set, so this calls the zip loader under it (the only format tessera
    writes; a legacy or TorchScript file is refused)."""
    with torch.serialization._open_zipfile_reader(io.BytesIO(data)) as archive:
        if torch.serialization._is_torchscript_zip(archive):
            raise _Refused("is a TorchScript archive, which loading could run code for")
        sizes = {name: len(archive.get_record(name)) for name in archive.get_all_records()
                 if name.startswith("data/")}
        unpickler = type("_Checked", (_StateUnpickler,), {"_record_bytes": sizes})
        module = types.SimpleNamespace(Unpickler=unpickler, __name__="tessera_state_pickle")
        return torch.serialization._load(archive, None, module, encoding="utf-8")


def _load(folder, name, data, trusted):
    if trusted:
        return torch.load(io.BytesIO(data))
    try:
        return _load_state(data)
    except _Refused as e:
        raise _C.TesseraError(
            f"checkpoint {folder}: {name} {e}; only tensors, numpy arrays and plain values "
            f"load unless restore(..., trusted=True) (for a checkpoint whose every writer you "
            f"trust)") from None
    except Exception as e:  # A malformed file: its own error, named.
        raise _C.TesseraError(f"checkpoint {folder}: {name} does not load: "
                              f"{type(e).__name__}: {e}") from None


def restore(path, model=None, optimizer=None, sparse_optimizers=(), tensors=(), loaders=(),
            g=None, trusted=False):
    """Restores the checkpoint in folder ``path`` and returns its ``extra``.
    Tensors come back into the job's tensors of the same names (created if
    the program has not made them yet: its own constructors then attach to
    them), by node id on the same partitioning, otherwise by original id.
    ``model`` / ``optimizer`` get their state_dicts back. On the same
    trainer count every trainer gets its random states and loader positions
    back; on another one, loaders continue the saved epoch from the same
    fraction of it, and random states are left as they are.

    The Python state loads as tensors, numpy arrays and plain values only
    (what state_dicts, random states and a JSON-like ``extra`` are made of):
    a pickle naming any other class, which could run code as it loads, is
    refused with its name. ``trusted=True`` loads any pickle, as
    ``torch.load`` does; pass it only for a checkpoint you trust (an
    ``extra`` holding other objects needs it)."""
    g = _graph(g)
    del sparse_optimizers, tensors  # Their tensors are in the checkpoint by name.
    r = _C.restore_checkpoint(g._g, os.fspath(path))
    for key in r.tensors:
        _prefetch.wrote(key.split("/", 1)[1])
    folder = r.path
    dense = {"model": None, "optimizer": None, "extra": None, "loaders": []}
    # Loaded from the bytes the restore verified, not from the files again
    # (which may have changed since).
    files = r.file_bytes
    if _DENSE in r.dense_files:
        dense = _load(folder, _DENSE, files[_DENSE], trusted)
    elif model is not None or optimizer is not None or loaders:
        raise _C.TesseraError(f"checkpoint {folder} holds no Python state ({_DENSE})")
    for what, obj in (("model", model), ("optimizer", optimizer)):
        if obj is not None:
            if dense[what] is None:
                raise _C.TesseraError(f"checkpoint {folder} holds no {what}")
            obj.load_state_dict(dense[what])
    own = _trainer_file(g.rank())
    if own in r.trainer_files:
        state = _load(folder, own, files[own], trusted)
        random.setstate(state["random"])
        np.random.set_state(state["numpy"])
        _resume(loaders, state["loaders"], scale=False)
    elif loaders:
        _resume(loaders, dense["loaders"], scale=True)
    return dense["extra"] if dense["extra"] is not None else {}


def latest(dir):
    """The newest (highest step) complete checkpoint folder in ``dir``, or None."""
    return _C.latest_checkpoint(os.fspath(dir))


class Schedule:
    """When to save: ``Schedule("100")`` every 100 steps, ``Schedule("300s")``
    / ``"5min"`` / ``"1h"`` every so many seconds; ``""`` or None never.
    ``due(step)`` after each step.

    A save is collective, so with seconds every trainer must decide alike:
    at agreed steps they take the maximum over the trainers of the time
    since the last save with ``torch.distributed`` (which must then be
    initialized on a job of several trainers), and from that shared value
    all pick the next step to ask at, halfway to the expected deadline. So
    an interval costs a handful of small allreduces, not one per step."""

    _UNITS = {"min": 60, "h": 3600, "s": 1}

    def __init__(self, every):
        self.steps, self.seconds = 0, 0.0
        every = (every or "").strip()
        unit = next((u for u in self._UNITS if every.endswith(u)), None)
        try:
            if unit is None:
                self.steps = int(every) if every else 0
            else:
                self.seconds = float(every[:-len(unit)]) * self._UNITS[unit]
        except ValueError:
            raise ValueError(f"checkpoint schedule {every!r}: want steps (\"100\") or seconds "
                             f"(\"300s\", \"5min\", \"1h\")") from None
        if self.steps < 0 or self.seconds < 0:
            raise ValueError(f"checkpoint schedule {every!r} is negative")
        self._last = time.time()
        self._since = None  # The step of the last save (or the first step seen).
        self._next = 0  # The next step at which the trainers compare clocks.

    def _elapsed(self):
        """The longest time since the last save over all trainers."""
        elapsed = torch.tensor([time.time() - self._last], dtype=torch.float64)
        if torch.distributed.is_initialized():
            torch.distributed.all_reduce(elapsed, op=torch.distributed.ReduceOp.MAX)
        elif context.info()["world_size"] > 1:
            raise _C.TesseraError("checkpoint.Schedule in seconds needs torch.distributed's "
                                  "process group on a job of several trainers (or use steps)")
        return float(elapsed.item())

    def due(self, step):
        if self.steps:
            return step % self.steps == 0
        if not self.seconds or step < self._next:
            return False
        if self._since is None:
            self._since = step - 1
        elapsed = self._elapsed()
        if elapsed >= self.seconds:
            self._last, self._since, self._next = time.time(), step, step + 1
            return True
        per_step = elapsed / max(1, step - self._since)
        self._next = step + max(1, int((self.seconds - elapsed) / max(per_step, 1e-9) / 2))
        return False
