"""dgl.dataloading's names for the distributed loaders and samplers."""
import types

from tessera._utils import missing_name as _missing_name
from tessera.distributed.loader import (DistDataLoader, DistEdgeDataLoader,  # noqa: F401
                                        DistNodeDataLoader, MultiLayerFullNeighborSampler,
                                        MultiLayerNeighborSampler, NeighborSampler, Uniform)

negative_sampler = types.SimpleNamespace(Uniform=Uniform)

__all__ = ["DistDataLoader", "DistEdgeDataLoader", "DistNodeDataLoader",
           "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "NeighborSampler",
           "negative_sampler"]


def __getattr__(name):
    raise _missing_name(__name__, name)
