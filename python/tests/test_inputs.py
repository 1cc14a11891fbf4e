"""Hostile inputs to the Python API (a tester's report, sections 3-5): each
is refused with a Python exception naming the argument and its value, or
handled as DGL does; never a pybind11 signature dump, a silent cast or a
leak. The DistGraph checks run standalone in a subprocess (this file run as
a script: ``test_inputs.py <part config> <check>``)."""
import os
import subprocess
import sys

import pytest
import torch

CHECKS = ["collate_error_leak", "collate_recursion"]


@pytest.mark.parametrize("check", CHECKS)
def test_standalone(cora_parts, check):
    from conftest import PYTHON
    r = subprocess.run([PYTHON, os.path.abspath(__file__), cora_parts[1], check],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0 and f"CHECK {check} ok" in r.stdout, r.stdout[-4000:]


def _raises(kind, f, *words):
    """f() raises ``kind`` whose message holds every word (and no pybind11 dump)."""
    try:
        f()
    except kind as e:
        text = str(e)
        assert "incompatible" not in text, text
        for w in words:
            assert w in text, (w, text)
        return text
    raise AssertionError(f"no {kind.__name__}")



# ------------------------------------------------------------------ the checks


def _threads():
    return len(os.listdir("/proc/self/task"))


def check_collate_error_leak(dist, g):
    """An epoch ended by a collate_fn's exception joins its sampler threads
    (the iterator, kept by the exception's traceback, was a cycle through
    C++ that the GC cannot see)."""
    import gc
    import time

    def bad(rows):
        if int(rows[0]) == 4:
            raise ValueError("bad batch")
        return rows

    for _ in range(2):  # Starts what stays (the reaper thread).
        try:
            list(dist.DistDataLoader(torch.arange(10), batch_size=2, collate_fn=bad,
                                     num_workers=2))
        except ValueError:
            pass
    gc.collect()
    time.sleep(0.5)
    before = _threads()
    for _ in range(40):
        try:
            for _ in dist.DistDataLoader(torch.arange(40), batch_size=2, collate_fn=bad,
                                         num_workers=2):
                pass
            raise AssertionError("no error")
        except ValueError as e:
            assert "bad batch" in str(e)
    gc.collect()
    end = time.time() + 10
    while _threads() > before + 2 and time.time() < end:
        time.sleep(0.1)
    assert _threads() <= before + 2, (before, _threads())
    # The node loader's iterator too.
    loader = dist.DistNodeDataLoader(g, torch.arange(40), dist.NeighborSampler([2]),
                                     batch_size=4, num_workers=2)
    for b in loader:
        break
    del loader, b
    gc.collect()


def check_collate_recursion(dist, g):
    """A collate_fn iterating its own loader is refused at once (it started
    sampler threads without bound until none could start, and kept them)."""
    import resource
    with open("/proc/self/status") as f:
        vm = [int(line.split()[1]) for line in f if line.startswith("VmSize")][0] * 1024
    limit = vm + (3 << 30)  # Room for a few hundred thread stacks, not for 32k.
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    box = {}
    box["l"] = dist.DistDataLoader(torch.arange(4), batch_size=2,
                                   collate_fn=lambda r: len(list(box["l"])), num_workers=1)
    _raises(dist.TesseraError, lambda: list(box["l"]), "collate_fn iterates the same loader")
    # Batches of a loader iterating another loader are fine, and the process is sound.
    inner = dist.DistDataLoader(torch.arange(4), batch_size=2, num_workers=1)
    outer = dist.DistDataLoader(torch.arange(4), batch_size=2, num_workers=1,
                                collate_fn=lambda r: len(list(inner)))
    assert list(outer) == [2, 2]
    assert [b.tolist() for b in dist.DistDataLoader(torch.arange(4), batch_size=2,
                                                    num_workers=1)] == [[0, 1], [2, 3]]


if __name__ == "__main__":
    import tessera.distributed as _dist
    _dist.initialize()
    _g = _dist.DistGraph("cora", part_config=sys.argv[1])
    globals()[f"check_{sys.argv[2]}"](_dist, _g)
    print(f"CHECK {sys.argv[2]} ok", flush=True)
