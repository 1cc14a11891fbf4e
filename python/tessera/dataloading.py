"""dgl.dataloading's names for the distributed loaders and samplers."""
import types

from tessera.distributed.loader import (DistDataLoader, DistEdgeDataLoader,  # noqa: F401
                                        DistNodeDataLoader, MultiLayerFullNeighborSampler,
                                        MultiLayerNeighborSampler, NeighborSampler, Uniform)

negative_sampler = types.SimpleNamespace(Uniform=Uniform)

__all__ = ["DistDataLoader", "DistEdgeDataLoader", "DistNodeDataLoader",
           "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "NeighborSampler",
           "negative_sampler"]


def __getattr__(name):
    """A clear error for DGL's names tessera does not have."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}: DGL's "
                         f"{__name__.replace('tessera', 'dgl', 1)}.{name} is not implemented "
                         f"in tessera (docs/python.md lists what is)")
