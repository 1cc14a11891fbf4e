"""``dgl.nn.pytorch``'s spelling (``import tessera.nn.pytorch as dglnn``):
the layers of ``tessera.nn``."""
from tessera.nn import (GATConv, GraphConv, HeteroGraphConv, RelationBlock, RelGraphConv, RGCN,
                        SAGEConv, TypedLinear, WeightBasis, edge_softmax, functional)

__all__ = ["GATConv", "GraphConv", "HeteroGraphConv", "RelationBlock", "RelGraphConv", "RGCN",
           "SAGEConv", "TypedLinear", "WeightBasis", "edge_softmax", "functional"]


def __getattr__(name):
    import tessera.nn
    return tessera.nn.__getattr__(name)
