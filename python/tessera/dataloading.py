"""dgl.dataloading's names for the distributed loaders and samplers."""
import types

from tessera.distributed.loader import (DistDataLoader, DistEdgeDataLoader,  # noqa: F401
                                        DistNodeDataLoader, MultiLayerFullNeighborSampler,
                                        MultiLayerNeighborSampler, NeighborSampler, Uniform)

negative_sampler = types.SimpleNamespace(Uniform=Uniform)

__all__ = ["DistDataLoader", "DistEdgeDataLoader", "DistNodeDataLoader",
           "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "NeighborSampler",
           "negative_sampler"]
