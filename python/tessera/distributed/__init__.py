"""tessera.distributed: DGL's ``dgl.distributed`` API over tessera's C++ core.

A DistDGL script runs with its imports changed::

    import tessera.distributed as dgl_dist     # was: dgl.distributed
    import tessera.dataloading                 # was: dgl.dataloading
    import tessera.nn as dglnn                 # was: dgl.nn.pytorch

Differences from DGL are deliberate and listed in docs/python.md.
"""
from tessera._C import TesseraError  # noqa: F401
from tessera._utils import submodule as _submodule
from tessera.distributed.context import exit_client, initialize  # noqa: F401
from tessera.distributed.embedding import DistEmbedding  # noqa: F401
from tessera.distributed.graph import (DistGraph, GraphPartitionBook, edge_split,  # noqa: F401
                                       edge_subgraph, find_edges, in_subgraph, manual_seed,
                                       node_split, sample_neighbors)
from tessera.distributed.loader import (Block, DistDataLoader, DistEdgeDataLoader,  # noqa: F401
                                        DistNodeDataLoader, NeighborSampler, PairGraph,
                                        negative_sampler)
from tessera.distributed.tensor import (DistTensor, EdgePartitionPolicy,  # noqa: F401
                                        NodePartitionPolicy, PartitionPolicy)
from tessera.distributed import optim  # noqa: F401
from tessera.distributed import checkpoint  # noqa: F401
# DGL 0.x's spelling, which the seeds' API chapter (7.2) uses:
# dgl.distributed.SparseAdagrad([emb], lr=...).
from tessera.distributed.optim import SparseAdagrad, SparseAdam  # noqa: F401
from tessera.distributed import tensor as init  # noqa: F401  (init.uniform(a, b), ...)
from tessera.partition import (load_partition, load_partition_book,  # noqa: F401
                               load_partition_feats, partition_graph)

__all__ = ["initialize", "exit_client", "DistGraph", "DistTensor", "DistEmbedding",
           "GraphPartitionBook", "PartitionPolicy", "NodePartitionPolicy",
           "EdgePartitionPolicy", "node_split", "edge_split",
           "sample_neighbors", "in_subgraph", "edge_subgraph", "find_edges", "Block",
           "PairGraph",
           "NeighborSampler", "DistNodeDataLoader", "DistEdgeDataLoader", "DistDataLoader",
           "negative_sampler",
           "optim", "SparseAdagrad", "SparseAdam", "init", "manual_seed", "TesseraError",
           "partition_graph", "load_partition", "load_partition_book", "load_partition_feats",
           "checkpoint"]


def __getattr__(name):
    return _submodule(__name__, name)
