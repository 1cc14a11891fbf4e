"""Conversions shared by the package (not part of the API)."""
import importlib
import importlib.util
import math
import numbers

import torch


def as_ids(x, what, length=None):
    """(int64 1-D tensor, was_scalar) from an int, list, numpy array, tensor or
    slice. Only a Python or numpy integer is a scalar: a 0-d tensor or array
    gives one-element results, as DGL's."""
    if isinstance(x, slice):
        if length is None:
            raise TypeError(f"{what}: a slice needs a known length")
        return torch.arange(*x.indices(length), dtype=torch.int64), False
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return torch.tensor([int(x)], dtype=torch.int64), True
    if isinstance(x, (list, tuple)) and len(x) == 0:  # [] is no ids, not float32
        return torch.empty(0, dtype=torch.int64), False
    if isinstance(x, (str, bytes, float)) or x is None:
        raise TypeError(f"{what}: ids must be integers (a tensor, array, list or int), "
                        f"got {type(x).__name__}")
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{what}: ids must have an integer dtype, got {t.dtype}")
    return t.reshape(-1).to(torch.int64), False


def as_tensor(x):
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def submodule(module, name):
    """A package's ``__getattr__``: its submodule ``name``, imported on first
    use (``import tessera as dgl; dgl.nn.SAGEConv``, as DGL's are after
    ``import dgl``), else :func:`missing_name`'s error."""
    if not name.startswith("_") and importlib.util.find_spec(f"{module}.{name}") is not None:
        return importlib.import_module(f"{module}.{name}")
    raise missing_name(module, name)


def missing_name(module, name):
    """The error of a module's ``__getattr__`` for a name tessera lacks:
    DGL's name if DGL has it (dunder lookups get a plain AttributeError)."""
    if name.startswith("__"):
        return AttributeError(name)
    return AttributeError(f"module {module!r} has no attribute {name!r}: DGL's "
                          f"{module.replace('tessera', 'dgl', 1)}.{name} is not implemented in "
                          f"tessera (docs/python.md lists what is)")


def flat_rows(x):
    """``x`` ``[N, *F]`` as ``[N, prod(F)]``; unlike ``reshape(N, -1)`` also
    when ``N`` is 0 (no edges)."""
    return x.reshape(x.shape[0], math.prod(x.shape[1:]))
