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
``DistNodeDataLoader(..., auto_prefetch=False)`` turns it off.
"""
import threading

_local = threading.local()
_written = set()  # Names of tensors this process wrote.


class BatchRows:
    """The batch a loader yielded last: its ids and the rows pulled for it."""

    def __init__(self, loader, input_nodes, seeds, input_rows, seed_rows):
        self.loader, self.input_nodes, self.seeds = loader, input_nodes, seeds
        self.input_rows, self.seed_rows = input_rows, seed_rows


def set_current(rows):
    _local.current = rows


def clear(rows):
    if getattr(_local, "current", None) is rows:
        _local.current = None


def wrote(name):
    _written.add(name)


def lookup(name, ids):
    """The prefetched rows of tensor `name` at `ids`, or None."""
    cur = getattr(_local, "current", None)
    if cur is None or name in _written:
        return None
    if ids is cur.input_nodes:
        rows, labels = cur.input_rows.get(name), False
    elif ids is cur.seeds:
        rows, labels = cur.seed_rows.get(name), True
    else:
        return None
    if rows is None:
        cur.loader._learn(name, labels)
    return rows
