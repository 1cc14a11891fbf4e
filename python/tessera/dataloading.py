"""dgl.dataloading's names for the distributed loaders and samplers."""
from tessera._utils import missing_name as _missing_name
from tessera.distributed.loader import (DistDataLoader, DistEdgeDataLoader,  # noqa: F401
                                        DistNodeDataLoader, MultiLayerFullNeighborSampler,
                                        MultiLayerNeighborSampler, NeighborSampler,
                                        negative_sampler)

__all__ = ["DistDataLoader", "DistEdgeDataLoader", "DistNodeDataLoader",
           "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "NeighborSampler",
           "negative_sampler"]


def __getattr__(name):
    raise _missing_name(__name__, name)
