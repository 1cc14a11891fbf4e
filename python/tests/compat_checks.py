"""Run by test_dist_compat.py standalone (1-part Cora) and by every trainer of
a launched job (2-part Cora, 2 machines x 2 trainers): DGL 1.1.3's view of
graph data. Each check asserts values DGL gives (written
here as literals or as DGL's rule) and prints "CHECK <name> ok"."""
import sys

import torch

import tessera.distributed as dist

part_config = sys.argv[1]
dist.initialize()
g = dist.DistGraph("cora", part_config=part_config)
info = dist.context.info()
rank, world = info["rank"], info["world_size"]
book = g.get_partition_book()
P, me = book.num_partitions(), book.partid
N = g.num_nodes()
PARTITION_DATA = ["feat", "label", "test_mask", "train_mask", "val_mask"]


def ok(name):
    print(f"CHECK {name} ok", flush=True)


def raises(f, error, *words):
    try:
        f()
    except error as e:
        assert all(w in str(e) for w in words), (str(e), words)
        return
    raise AssertionError(f"expected {error.__name__}")


# g.ndata lists the partition's data and what this process assigned (DGL's
# NodeDataView over _ndata_store), not every node-sized tensor of the job.
assert sorted(g.ndata) == PARTITION_DATA, sorted(g.ndata)
every = torch.arange(N)
tmp = dist.DistTensor((N, 2), torch.float32, "cc_tmp")
persist = dist.DistTensor((N, 2), torch.float32, "cc_persist", persistent=True)
emb = dist.DistEmbedding(N, 4, "cc_emb")
adam = dist.optim.SparseAdam([emb], lr=0.01)
g.barrier()  # Every trainer's tensors exist.
assert sorted(g.ndata) == PARTITION_DATA, sorted(g.ndata)
assert len(g.ndata) == 5 and "cc_tmp" not in g.ndata and "cc_emb.adam_m" not in g.ndata
assert sorted(g.node_attr_schemes()) == PARTITION_DATA
assert list(g.edata) == [] and g.edge_attr_schemes() == {}
assert g.node_attr_schemes()["feat"].shape == (1433,)
assert g.node_attr_schemes()["train_mask"].dtype == torch.bool
# A tessera extension: the job's tensor of a name the view does not list.
assert g.ndata["cc_tmp"].shape == (N, 2)
raises(lambda: g.ndata["cc_nothing"], KeyError, "cc_nothing")
# Assignment and del change this process's view only.
if rank == 0:
    g.ndata["cc_mine"] = tmp
g.barrier()
assert ("cc_mine" in g.ndata) == (rank == 0), rank
assert sorted(g.node_attr_schemes()) == sorted(PARTITION_DATA + ["cc_mine"] * (rank == 0))
if rank == 0:
    del g.ndata["cc_mine"]
    assert "cc_mine" not in g.ndata
label = g.ndata["label"]
del g.ndata["label"]  # Partition data: gone from the view, the tensor stays.
assert "label" not in g.ndata and sorted(g.ndata) == ["feat", "test_mask", "train_mask",
                                                       "val_mask"]
assert "label" not in g.node_attr_schemes()
raises(lambda: g.ndata.__delitem__("label"), KeyError, "label")
assert torch.equal(dist.DistTensor(label.shape, label.dtype, "label")[every], label[every])
g.ndata["label"] = label
assert sorted(g.ndata) == PARTITION_DATA
ok("graph_data_view")

g.barrier()
print("ALL CHECKS PASSED", flush=True)
