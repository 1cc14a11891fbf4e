"""Run by every trainer of a job (or standalone) by test_checkpoint.py.

    checkpoint_job.py save PART_CONFIG CKPT OUT     trains 3 batches, saves, then 2 more
    checkpoint_job.py restore PART_CONFIG CKPT OUT  restores, then 2 batches
    checkpoint_job.py loop PART_CONFIG CKPT -       saves step s with every row = s, forever
    checkpoint_job.py check PART_CONFIG CKPT -      restores the latest; rows = its step?
    checkpoint_job.py full PART_CONFIG CKPT -       step 1 fits on CKPT's disk, step 2 does not
    checkpoint_job.py extra PART_CONFIG CKPT -      extras the manifest cannot show come back

Both write OUT.<rank>.pt: the embedding's rows and its Adam state by
original node id (the same on any partitioning), the model's state and the
seeds of the batches after the checkpoint."""
import argparse
import json
import os
import sys

import numpy as np
import torch

import tessera.distributed as dist
from tessera.distributed import checkpoint

mode, part_config, ckpt, out = sys.argv[1:5]
dist.initialize()
g = dist.DistGraph("cora", part_config=part_config)
rank = g.rank()
if mode == "full":
    every = torch.arange(g.num_nodes())
    small = dist.DistTensor((g.num_nodes(), 4), torch.float32, "small", persistent=True)
    small[every] = torch.ones(g.num_nodes(), 4)
    checkpoint.save(os.path.join(ckpt, "step-1"), extra={"step": 1}, keep=2)
    big = dist.DistTensor((g.num_nodes(), 4096), torch.float32, "big", persistent=True)
    big[every] = torch.full((g.num_nodes(), 4096), 2.0)
    try:
        checkpoint.save(os.path.join(ckpt, "step-2"), extra={"step": 2}, keep=2)
        raise AssertionError("a save larger than the disk succeeded")
    except dist.TesseraError as e:
        error = str(e)
    assert "No space left on device" in error, error
    assert torch.equal(big[every], torch.full((g.num_nodes(), 4096), 2.0))  # Untouched.
    assert checkpoint.latest(ckpt) == os.path.join(ckpt, "step-1"), checkpoint.latest(ckpt)
    small[every] = torch.zeros(g.num_nodes(), 4)
    assert checkpoint.restore(checkpoint.latest(ckpt)) == {"step": 1}
    assert torch.equal(small[every], torch.ones(g.num_nodes(), 4))
    print(f"CHECKPOINT full ok: {error}", flush=True)
    dist.exit_client()
    sys.exit(0)
if mode == "extra":
    # Too deep (100 levels), too large (2 MiB) or not JSON the manifest's
    # reader takes (NaN, a lone surrogate, an int beyond 64 bits) for the
    # manifest's copy, which is then {}: the save works and restore returns
    # the whole extra from the pickle.
    deep = {"step": 1}
    inner = deep
    for _ in range(100):
        inner["x"] = {}
        inner = inner["x"]
    inner["leaf"] = [1, 2]
    cases = [("deep", deep), ("large", {"step": 2, "blob": "x" * (2 << 20)}),
             ("nan", {"step": 3, "loss": float("nan")}),
             ("surrogate", {"step": 5, "path": b"\xff.bin".decode("utf-8", "surrogateescape")}),
             ("bigint", {"step": 6, "n": 10 ** 400}),
             ("shown", {"step": 4, "a": [1, {"b": 2}], "name": "caf\u00e9"})]
    for name, extra in cases:
        path = os.path.join(ckpt, name)
        checkpoint.save(path, extra=extra)
        with open(os.path.join(path, "manifest.json"), encoding="utf-8") as f:
            shown = json.load(f)["extra"]
        assert shown == (extra if name == "shown" else {}), (name, str(shown)[:200])
        back = checkpoint.restore(path)
        if name == "nan":
            assert back["step"] == 3 and back["loss"] != back["loss"], back
        else:
            assert back == extra, name
    # dense.pt altered (its size unchanged): refused, never loaded.
    dense = os.path.join(ckpt, "deep", "dense.pt")
    with open(dense, "r+b") as f:
        f.seek(os.path.getsize(dense) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    try:
        checkpoint.restore(os.path.join(ckpt, "deep"))
        raise AssertionError("an altered dense.pt was restored")
    except dist.TesseraError as e:
        assert "dense.pt is corrupt" in str(e), str(e)
    # Objects other than tensors, arrays and plain values load only when
    # trusted: unpickling one could run code (here it would make a folder).
    marker = os.path.join(ckpt, "made-by-unpickling")

    class RunsCode:
        def __reduce__(self):
            return (os.mkdir, (marker,))

    for name, extra, refused in (("namespace", argparse.Namespace(step=7), "argparse.Namespace"),
                                 ("code", {"step": 8, "x": RunsCode()}, "posix.mkdir")):
        path = os.path.join(ckpt, name)
        checkpoint.save(path, extra=extra)
        try:
            checkpoint.restore(path)
            raise AssertionError(f"{name}: an extra holding {refused} was restored untrusted")
        except dist.TesseraError as e:
            assert f"dense.pt names {refused}" in str(e) and "trusted=True" in str(e), str(e)
        assert not os.path.exists(marker), "unpickling ran code"
    back = checkpoint.restore(os.path.join(ckpt, "namespace"), trusted=True)
    assert back == argparse.Namespace(step=7), back
    print("CHECKPOINT extra ok", flush=True)
    dist.exit_client()
    sys.exit(0)
if mode in ("loop", "check"):
    big = dist.DistTensor((g.num_nodes(), 4096), torch.float32, "big", persistent=True)
    every = torch.arange(g.num_nodes())
    if mode == "check":
        extra = checkpoint.restore(checkpoint.latest(ckpt))
        assert torch.equal(big[every], torch.full((g.num_nodes(), 4096), float(extra["step"])))
        print(f"CHECKPOINT check ok: step {extra['step']}", flush=True)
    else:
        for step in range(1, 10000):
            big[every] = torch.full((g.num_nodes(), 4096), float(step))
            checkpoint.save(os.path.join(ckpt, f"step-{step}"), extra={"step": step}, keep=2)
            print(f"CHECKPOINT saved {step}", flush=True)
    dist.exit_client()
    sys.exit(0)
torch.manual_seed(5 + rank)
emb = dist.DistEmbedding(g.num_nodes(), 8, "ck_emb", init_func=dist.init.uniform(-1.0, 1.0, 3))
sparse = dist.optim.SparseAdam([emb], lr=0.05)
model = torch.nn.Linear(8, 7)
adam = torch.optim.Adam(model.parameters(), lr=0.01)
nids = dist.node_split(g.ndata["train_mask"], g.get_partition_book())
loader = dist.DistNodeDataLoader(g, nids, dist.NeighborSampler([3]), batch_size=16,
                                 shuffle=True, seed=9)
it = None


def step():
    """One batch: the seeds it trained on."""
    global it
    while True:
        if it is None:
            it = iter(loader)
        try:
            _, seeds, _ = next(it)
            break
        except StopIteration:
            it = None
    h = emb(seeds) + 0.01 * torch.randn(len(seeds), 8)
    loss = torch.nn.functional.cross_entropy(model(h), g.ndata["label"][seeds])
    adam.zero_grad()
    loss.backward()
    adam.step()
    sparse.step()
    return seeds


def by_original_id(rows):
    orig = torch.from_numpy(np.load(os.path.join(os.path.dirname(part_config), "orig_nids.npy")))
    return torch.zeros_like(rows).index_copy_(0, orig, rows)


def dump():
    g.barrier()
    every = torch.arange(g.num_nodes())
    rows = {name: by_original_id(g.ndata[name][every])
            for name in ("ck_emb", "ck_emb.adam_m", "ck_emb.adam_v", "ck_emb.adam_step")}
    g.barrier()  # Every trainer has read the rows before any trains on.
    torch.save({"rows": rows, "model": {k: v.clone() for k, v in model.state_dict().items()},
                "adam": adam.state_dict()}, f"{out}.{rank}.pt")


if mode == "save":
    for _ in range(3):
        step()
    checkpoint.save(os.path.join(ckpt, "step-3"), model=model, optimizer=adam,
                    sparse_optimizers=[sparse], loaders=[loader], extra={"step": 3}, keep=2)
    dump()  # The state saved.
    after = [step() for _ in range(2)]
    torch.save(after, f"{out}.{rank}.after.pt")
else:
    path = checkpoint.latest(ckpt)
    extra = checkpoint.restore(path, model=model, optimizer=adam, sparse_optimizers=[sparse],
                               loaders=[loader])
    assert extra == {"step": 3}, extra
    it = None
    dump()
    after = [step() for _ in range(2)]
    torch.save(after, f"{out}.{rank}.after.pt")
print(f"CHECKPOINT {mode} ok", flush=True)
dist.exit_client()
