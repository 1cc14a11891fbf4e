"""Run by test_dist_compat.py standalone (1-part Cora) and by every trainer of
a launched job (2-part Cora, 2 machines x 2 trainers): DGL 1.1.3's view of
graph data and its DistGraph / DistTensor / PartitionPolicy / partition book /
sparse optimizer attributes. Each check asserts values DGL gives (written
here as literals or as DGL's rule) and prints "CHECK <name> ok"."""
import os
import sys

import torch

import tessera.distributed as dist
from conftest import raises

part_config = sys.argv[1]
dist.initialize()
# A relative config (local_partition must not follow a later chdir).
os.chdir(os.path.dirname(os.path.abspath(part_config)))
g = dist.DistGraph("cora", part_config=os.path.basename(part_config))
info = dist.context.info()
rank, world = info["rank"], info["world_size"]
book = g.get_partition_book()
P, me = book.num_partitions(), book.partid
N = g.num_nodes()
PARTITION_DATA = ["feat", "label", "test_mask", "train_mask", "val_mask"]


def ok(name):
    print(f"CHECK {name} ok", flush=True)


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
raises(KeyError, lambda: g.ndata["cc_nothing"], "cc_nothing")
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
raises(KeyError, lambda: g.ndata.__delitem__("label"), "label")
assert torch.equal(dist.DistTensor(label.shape, label.dtype, "label")[every], label[every])
g.ndata["label"] = label
assert sorted(g.ndata) == PARTITION_DATA
raises(TypeError, lambda: g.ndata.__setitem__(5, label), "strings")
raises(ValueError, lambda: g.ndata.__setitem__("a\0b", label), "NUL")
assert sorted(g.ndata) == PARTITION_DATA
ok("graph_data_view")

# DistGraph.local_partition: this machine's partition as load_partition's graph.
os.chdir("/")
local = g.local_partition
assert local is g.local_partition
inner = local.ndata["inner_node"].bool()
assert torch.equal(local.ndata["_ID"][inner], book.partid2nids(me))
assert local.num_nodes() >= int(inner.sum())
ok("local_partition")

# PartitionPolicy: DGL's part_id / get_part_size / get_size / to_local / to_partid.
policy = g.get_node_partition_policy("_N")
mine = book.partid2nids(me)
assert policy.part_id == me and isinstance(policy.part_id, int)
assert policy.get_part_size() == mine.numel() and policy.get_size() == N
assert torch.equal(policy.to_local(mine[:3]), torch.arange(3))
assert torch.equal(policy.to_partid(torch.tensor([0, N - 1])), book.nid2partid([0, N - 1]))
edges = g.get_edge_partition_policy("_E")
assert edges.get_size() == g.num_edges()
assert edges.get_part_size() == book.partid2eids(me).numel()
assert book.local_ntype_offset == [0, mine.numel()]
assert book.local_etype_offset == [0, book.partid2eids(me).numel()]
raises(dist.TesseraError, lambda: dist.PartitionPolicy("node").get_size(), "partition book")
ok("partition_policy")

# DistTensor.count_nonzero / | (collective) / local_partition (not implemented).
train, val = g.ndata["train_mask"], g.ndata["val_mask"]
assert train.count_nonzero() == int(train[every].sum()) == 140  # Cora's public split.
assert g.ndata["feat"].count_nonzero() == int(torch.count_nonzero(g.ndata["feat"][every]))
both = train | val
assert both.dtype == torch.bool and both.shape == (N,)
assert both.part_policy == train.part_policy
assert torch.equal(both[every], train[every] | val[every])
assert both.count_nonzero() == 140 + 500
# A process that maps no shard (its catalog could not be opened) pulls and pushes.
real_views = dist.tensor._local_views


def no_shard(*tensors):
    raise dist.TesseraError("this process maps no shard")


dist.tensor._local_views = no_shard
try:
    again = train | val
finally:
    dist.tensor._local_views = real_views
assert torch.equal(again[every], both[every])
g.barrier()  # Every trainer has read it before its creator's handle goes.
del again
raises(dist.TesseraError, lambda: g.ndata["feat"] | train, "float32")
ok("dist_tensor_ops")

# DistTensor.local_partition: this machine's rows over the store's memory.
assert torch.equal(train.local_partition, train[mine])
assert train.local_partition.data_ptr() == train.local_partition.data_ptr()
view = tmp.local_partition
assert view.shape == (mine.numel(), 2) and view.dtype == torch.float32
g.barrier()
if rank % (world // P) == 0:  # One trainer per machine writes its rows in place.
    view[:, 0] = mine.float()
    view[:, 1] = float(me + 1)
g.barrier()
seen = tmp[every]
assert torch.equal(seen[:, 0], every.float()), "every machine wrote its rows"
assert torch.equal(seen[:, 1], book.nid2partid(every).float() + 1)
assert torch.equal(tmp.local_partition, view)  # Rows written elsewhere show in the view.
g.barrier()  # Every trainer has read before the next writes.
if rank % (world // P) == world // P - 1:  # Another trainer of the machine, if any.
    tmp[mine[:1]] = torch.tensor([[-1.0, -2.0]])
g.barrier()
assert view[0].tolist() == [-1.0, -2.0]
del view
gone = dist.DistTensor((N, 3), torch.int64, "cc_gone")
kept = gone.local_partition
g.barrier()
if gone._t.created:
    gone._t.delete()
g.barrier()
assert kept.shape == (mine.numel(), 3) and int(kept.sum()) == 0  # Still mapped.
raises(dist.TesseraError, lambda: gone.local_partition, "cc_gone")
ok("local_partition_view")

# DistEmbedding.part_policy: what it was given (None by default).
assert emb.part_policy is None
assert dist.DistEmbedding(N, 2, "cc_emb2", part_policy=policy).part_policy is policy
ok("embedding_part_policy")

# local_state_dict / load_local_state_dict: this machine's ids, split among its
# trainers by id % trainers per machine (DGL's rule), and the state rows.
per_machine = world // P
state = adam.local_state_dict()
assert state["params"] == {"world_size": world, "_lr": 0.01, "_eps": 1e-08, "_beta1": 0.9,
                           "_beta2": 0.999}
ids = state["emb_states"]["cc_emb"]["ids"]
assert torch.equal(ids, mine[mine % per_machine == rank % per_machine])
rows = state["emb_states"]["cc_emb"]["states"]
assert sorted(rows) == ["cc_emb.adam_m", "cc_emb.adam_step", "cc_emb.adam_v"]
assert rows["cc_emb.adam_m"].shape == (ids.numel(), 4) and not rows["cc_emb.adam_m"].any()
g.barrier()
rows["cc_emb.adam_m"] = torch.full((ids.numel(), 4), 0.5)
state["params"]["_lr"] = 0.5
adam.load_local_state_dict(state)
assert adam.lr == 0.5 and adam.local_state_dict()["params"]["_lr"] == 0.5
g.barrier()
m = dist.DistTensor((N, 4), torch.float32, "cc_emb.adam_m")[every]
assert bool((m == 0.5).all()), "every trainer wrote its share"
g.barrier()  # Every trainer has read m before any steps.
# The new lr steps the rows: m = 0.9 * 0.5 + 0.1 * 1 = 0.55, v = 0.001, step 1:
# w -= 0.5 * (0.55 / 0.1) / (sqrt(0.001 / 0.001) + eps) = 2.75.
row = torch.tensor([int(mine[0])])
if rank % per_machine == 0:  # One trainer per machine steps its first row.
    emb(row).sum().backward()
adam.step()
g.barrier()
assert torch.allclose(emb.weight[row], torch.full((1, 4), -2.75)), emb.weight[row]
bad = adam.local_state_dict()
bad["emb_states"]["cc_emb"]["states"]["nope"] = bad["emb_states"]["cc_emb"]["states"].pop(
    "cc_emb.adam_v")
raises(ValueError, lambda: adam.load_local_state_dict(bad), "nope")
ada = dist.optim.SparseAdagrad([dist.DistEmbedding(N, 2, "cc_ada")], lr=0.1)
sd = ada.local_state_dict()
assert sd["params"] == {"world_size": world, "_lr": 0.1, "_eps": 1e-10}
assert list(sd["emb_states"]["cc_ada"]["states"]) == ["cc_ada.adagrad_sum"], sd
# A bad dict changes nothing: not the rows written before the bad part was
# found, not the hyperparameters.
before = adam.local_state_dict()
for bad_state, error, words in (
        ({"_lr": -1.0}, dist.TesseraError, ["params", "lr -1 is not positive"]),
        ({"_lr": None}, TypeError, ["params", "must be numbers"]),
        ({"cc_emb.adam_v": torch.ones(ids.numel(), 3)}, ValueError, ["shape", "expected"]),
        ({"ids": torch.full_like(ids, N)}, dist.TesseraError, ["ids of cc_emb", f"[0, {N})"])):
    bad = adam.local_state_dict()
    bad["emb_states"]["cc_emb"]["states"]["cc_emb.adam_m"] = torch.full((ids.numel(), 4), 9.0)
    for k, v in bad_state.items():
        where = bad["emb_states"]["cc_emb"]
        (bad["params"] if k.startswith("_") else where if k == "ids" else where["states"])[k] = v
    raises(error, lambda: adam.load_local_state_dict(bad), *words)
    now = adam.local_state_dict()
    assert now["params"] == before["params"] and adam.lr == 0.5
    for k, v in now["emb_states"]["cc_emb"]["states"].items():
        assert torch.equal(v, before["emb_states"]["cc_emb"]["states"][k]), k
ok("sparse_local_state_dict")

# DGL's own examples end with g._client.barrier() (its KVClient's barrier).
client = g._client
assert (client.client_id, client.machine_id) == (rank, info["machine_id"])
tmp[torch.tensor([rank])] = torch.full((1, 2), rank + 1.0)
client.barrier()  # Every trainer's row is written.
assert torch.equal(tmp[torch.arange(world)][:, 0], torch.arange(1.0, world + 1))
ok("kvclient_barrier")

g.barrier()
print("ALL CHECKS PASSED", flush=True)
