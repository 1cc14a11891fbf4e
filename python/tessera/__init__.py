"""tessera: distributed graph neural network training (DGL's DistDGL API) over
a native C++ core.

    import tessera
    import tessera.distributed as dist      # dgl.distributed
    import tessera.nn                       # SAGEConv, GraphConv, GATConv on blocks

Every error of the core is raised as :class:`TesseraError` (a RuntimeError).
"""
from tessera._C import TesseraError  # noqa: F401

NID = "_ID"  # dgl.NID: the global id of each node of a block or subgraph
EID = "_ID"  # dgl.EID: the global id of each edge

from tessera.partition import partition_graph, load_partition  # noqa: E402,F401
from tessera import distributed, dataloading  # noqa: E402,F401

__all__ = ["TesseraError", "NID", "EID", "partition_graph", "load_partition",
           "distributed", "dataloading"]
