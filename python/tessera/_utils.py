"""Conversions shared by the package (not part of the API)."""
import importlib
import importlib.util
import math
import numbers
import operator

import torch


def as_ids(x, what, length=None):
    """(int64 1-D tensor, was_scalar) from an int, list, numpy array, tensor or
    slice. Only a Python or numpy integer is a scalar: a 0-d tensor or array
    gives one-element results, as DGL's. Ids of more dimensions (``[[1, 2],
    [3, 4]]``) are a TesseraError, as DGL's "Index data must be 1D": never
    flattened."""
    if isinstance(x, slice):
        if length is None:
            raise TypeError(f"{what}: a slice needs a known length")
        return torch.arange(*x.indices(length), dtype=torch.int64), False
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        if not INT64_MIN <= int(x) <= INT64_MAX:
            raise _id_overflow(what, int(x))
        return torch.tensor([int(x)], dtype=torch.int64), True
    if isinstance(x, (list, tuple)) and len(x) == 0:  # [] is no ids, not float32
        return torch.empty(0, dtype=torch.int64), False
    if isinstance(x, (str, bytes, float)) or x is None:
        raise TypeError(f"{what}: ids must be integers (a tensor, array, list or int), "
                        f"got {type(x).__name__}")
    try:
        t = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
    except (RuntimeError, OverflowError) as e:  # torch: "Overflow when unpacking long"
        if "verflow" not in str(e) or not isinstance(x, (list, tuple)):
            raise
        big = next((int(v) for v in x if isinstance(v, numbers.Integral)
                    and not INT64_MIN <= int(v) <= INT64_MAX), None)
        raise _id_overflow(what, big) from None
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{what}: ids must have an integer dtype, got {t.dtype}")
    if t.dim() > 1:
        from tessera import _C
        raise _C.TesseraError(f"{what}: ids must be one-dimensional (DGL: index data must be "
                              f"1D), got shape {list(t.shape)}")
    return t.reshape(-1).to(torch.int64), False


INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def _id_overflow(what, value):
    from tessera import _C
    shown = "an id" if value is None else f"id {value}"
    return _C.TesseraError(f"{what}: {shown} is outside the int64 range of ids "
                           f"[{INT64_MIN}, {INT64_MAX}]: no such node or edge")


def as_int(x, what, low, high):
    """``x`` (an int, a numpy integer, a one-element integer tensor) as a
    Python int; TypeError naming ``what`` for a float or another type,
    ValueError giving the allowed range when it is below ``low`` or above
    ``high``. Both bounds are required and must lie within the C++ type's
    limits: beyond them pybind11 would only say "incompatible function
    arguments"."""
    try:
        v = operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r}") from None
    if not low <= v <= high:
        raise ValueError(f"{what} must be in [{low}, {high}], got {v}")
    return v


def as_seed(x, what):
    """A random seed as the unsigned 64-bit value C++ takes: as
    ``torch.manual_seed`` (and DGL's ``dgl.seed(-1)``), a negative seed down
    to -2**63 is taken modulo 2**64."""
    return as_int(x, what, INT64_MIN, 2**64 - 1) % 2**64


def check_text(x, what):
    """``x``, a str without NUL characters (C++ would cut it, and its
    messages, short there); TypeError / ValueError naming ``what``."""
    if not isinstance(x, str):
        raise TypeError(f"{what} must be a string, got {x!r}")
    if "\0" in x:
        raise ValueError(f"{what} {x!r} contains a NUL character ('\\x00')")
    return x


def as_tensor(x):
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def submodule(module, name):
    """A package's ``__getattr__``: its submodule ``name``, imported on first
    use (``import tessera as dgl; dgl.nn.SAGEConv``, as DGL's are after
    ``import dgl``), else :func:`missing_name`'s error."""
    # Only a plain identifier can name a submodule: find_spec would import the
    # parent of "nope.x" and raise ModuleNotFoundError, where hasattr and
    # getattr(..., default) expect an AttributeError.
    if not name.startswith("_") and name.isidentifier():
        try:
            spec = importlib.util.find_spec(f"{module}.{name}")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
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
