"""tessera: distributed graph neural network training (DGL's DistDGL API) over
a native C++ core.

    import tessera
    import tessera.distributed as dist      # dgl.distributed
    import tessera.nn                       # SAGEConv, GraphConv, GATConv on blocks

Every error of the core is raised as :class:`TesseraError` (a RuntimeError).
"""
import os as _os
import sys as _sys

# LibTorch's OpenMP threads (libgomp) spin between parallel regions by
# default, taking the cores from the loaders' sampler threads: DGL's
# GraphSAGE epoch took 1.5-1.6 s with OMP_WAIT_POLICY=PASSIVE against
# 1.7-2.1 s without (2 cores, one sampler thread). libgomp reads it once,
# when it is loaded: only effective when torch was not imported before
# tessera (docs/training.md, "Threads").
if "torch" not in _sys.modules:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from tessera._C import TesseraError  # noqa: E402,F401
from tessera._utils import submodule as _submodule  # noqa: E402

NID = "_ID"  # dgl.NID: the global id of each node of a block or subgraph
EID = "_ID"  # dgl.EID: the global id of each edge
NTYPE = "_TYPE"  # dgl.NTYPE: a homogeneous graph's node type ids
ETYPE = "_TYPE"  # dgl.ETYPE: its edge type ids

from tessera.heterograph import (ALL, Block, Graph, graph, heterograph,  # noqa: E402,F401
                                 add_self_loop, edge_subgraph, in_subgraph, node_subgraph,
                                 norm_by_dst, out_subgraph, remove_self_loop, reverse,
                                 to_bidirected, to_block)
from tessera.convert import to_heterogeneous, to_homogeneous  # noqa: E402,F401
from tessera.transforms import compact_graphs  # noqa: E402,F401
from tessera.partition import partition_graph, load_partition, load_partition_book  # noqa: E402,F401,E501
from tessera import distributed, dataloading, function, sampling  # noqa: E402,F401

DGLGraph = Graph  # DGL's class name, for isinstance checks and annotations.
DGLBlock = Block

__all__ = ["TesseraError", "NID", "EID", "NTYPE", "ETYPE", "ALL", "Graph", "DGLGraph", "Block",
           "DGLBlock", "graph", "heterograph", "to_block", "to_bidirected", "add_self_loop",
           "remove_self_loop", "reverse", "norm_by_dst", "node_subgraph", "edge_subgraph",
           "in_subgraph", "out_subgraph", "partition_graph", "load_partition", "load_partition_book",
           "to_homogeneous", "to_heterogeneous", "compact_graphs", "distributed", "dataloading",
           "function", "sampling"]


def __getattr__(name):
    return _submodule(__name__, name)
