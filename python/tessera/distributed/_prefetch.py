"""Rows a loader's sampler threads pulled ahead for the batch a script is on.

A DGL script reads its batch's rows in the training loop
(``g.ndata["feat"][input_nodes]``, ``g.ndata["label"][seeds]``), after the
loader has handed the batch over, so the pull cannot overlap the previous
batch's compute. tessera's node loader notes the batch it last yielded (per
Python thread); a ``DistTensor`` read whose ids are that batch's
``input_nodes`` or ``seeds`` tensor (the very object) is answered from rows
the sampler threads pulled, and a read that finds none teaches the loader to
pull that tensor for the batches it samples from then on. Values are those
of the tensor when the batch was sampled (a few batches ahead); a tensor this
process writes (``__setitem__``, ``add``) is never answered this way again.
Only node tensors the graph had when the loader was made are learned
(the partition's data, mostly); a learned tensor whose pull fails is
dropped by the loader, and the script then pulls it itself.
``DistNodeDataLoader(..., auto_prefetch=False)`` turns it off.
"""
import threading
import weakref

_local = threading.local()
_written = set()  # Names of tensors this process wrote.
_loaders = weakref.WeakSet()  # Loaders that may have learned tensors.


class BatchRows:
    """The batch a loader yielded last: its ids and the rows pulled for it
    (``{name: rows}`` at the input nodes / at the seeds, each given out once)."""

    def __init__(self, loader, input_nodes, seeds, input_rows, seed_rows):
        self.loader, self.input_nodes, self.seeds = loader, input_nodes, seeds
        self.input_rows, self.seed_rows = input_rows, seed_rows


def register(loader):
    _loaders.add(loader)


def set_current(rows):
    _local.current = rows


def clear(rows):
    if getattr(_local, "current", None) is rows:
        _local.current = None


def wrote(name):
    """This process wrote tensor `name`: never answer it from prefetched rows."""
    if name in _written:
        return
    _written.add(name)
    for loader in list(_loaders):
        loader._forget(name)


def lookup(name, ids):
    """The prefetched rows of tensor `name` at `ids`, or None (pull them)."""
    cur = getattr(_local, "current", None)
    if cur is None or name in _written:
        return None
    if ids is cur.input_nodes:
        rows, labels = cur.input_rows, False
    elif ids is cur.seeds:
        rows, labels = cur.seed_rows, True
    else:
        return None
    if name not in rows:
        cur.loader._learn(name, labels)
        return None
    # Given out once, as a pull gives a tensor of its own; a tensor the
    # script also has in its blocks (prefetch_node_feats) is cloned.
    out = rows.pop(name)
    return out.clone() if name in cur.loader._explicit else out
