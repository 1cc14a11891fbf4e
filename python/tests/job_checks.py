"""Run by every trainer of a launched job (and standalone) by test_api.py:
each check asserts real values and prints "CHECK <name> ok"."""
import gc
import io
import sys
import threading
import time

import torch

import tessera
import tessera.distributed as dist
import tessera.function as fn
import tessera.ops

part_config = sys.argv[1]
dist.initialize()
g = dist.DistGraph("cora", part_config=part_config)
info = dist.context.info()
rank, world = info["rank"], info["world_size"]
book = g.get_partition_book()
P = book.num_partitions()


def ok(name):
    print(f"CHECK {name} ok", flush=True)


# Pulls equal the partition files row by row, for every part.
for p in range(P):
    part, node_feats, edge_feats, gpb, name, _, _ = tessera.load_partition(part_config, p)
    ids = book.partid2nids(p)
    assert torch.equal(g.ndata["feat"][ids], node_feats["_N/feat"]), f"feat of part {p}"
    assert torch.equal(g.ndata["label"][ids], node_feats["_N/label"]), f"label of part {p}"
    inner = part.ndata["inner_node"].bool()
    assert torch.equal(part.ndata[tessera.NID][inner], ids)
ok("pull_equals_files")

# A Python init_func fills each partition's rows (called with its shape).
t = dist.DistTensor((g.num_nodes(), 3), torch.float32, "init_by_python",
                    init_func=lambda shape, dtype: torch.full(shape, float(shape[0]), dtype=dtype))
for p in range(P):
    ids = book.partid2nids(p)
    assert torch.equal(t[ids], torch.full((len(ids), 3), float(len(ids))))
ok("python_init_func")


# An init_func that raises is an error on every trainer, not only on the one
# that ran it: the others must not go on with rows that were never filled.
# The unfilled tensor is deleted (persistent too), so that a retry, even
# while the error's traceback holds the failed handle, creates and fills it.
def failing_init(shape, dtype):
    raise ValueError("init_func of init_fails")


failure = None
try:
    dist.DistTensor((g.num_nodes(), 2), torch.float32, "init_fails", init_func=failing_init,
                    persistent=True)
except ValueError as e:
    assert "init_func of init_fails" in str(e)
    failure = e
except tessera.TesseraError as e:
    assert "DistTensor 'init_fails': init_func raised on the trainer that created" in str(e), e
    failure = e
assert failure is not None, "a failing init_func went unnoticed"
print(f"INIT FAILURE {type(failure).__name__}", flush=True)  # test_api counts them.
again = dist.DistTensor((g.num_nodes(), 2), torch.float32, "init_fails", persistent=True,
                        init_func=lambda shape, dtype: torch.full(shape, 7.0, dtype=dtype))
assert torch.equal(again[torch.arange(g.num_nodes())], torch.full((g.num_nodes(), 2), 7.0))
ok("failing_init_func")

# Pushes: every trainer writes rows of its own ids; all see all writes.
h = dist.DistTensor((g.num_nodes(), 2), torch.int64, "pushed", persistent=True)
mine = torch.arange(rank, g.num_nodes(), world)
h[mine] = torch.stack([mine * 10, torch.full_like(mine, rank)], 1)
g.barrier()
every = torch.arange(g.num_nodes())
rows = h[every]
assert torch.equal(rows[:, 0], every * 10) and torch.equal(rows[:, 1], every % world)
ok("push_visible_everywhere")

# Sparse Adam on a DistEmbedding: the formula, on rows only this trainer uses.
emb = dist.DistEmbedding(g.num_nodes(), 4, "emb_checks",
                         init_func=lambda shape, dtype: torch.ones(shape, dtype=dtype))
opt = dist.optim.SparseAdam([emb], lr=0.1)
ids = torch.tensor([rank, rank, world + rank])  # a duplicate: gradients averaged
coef = torch.tensor([[1.0, 2.0, -1.0, 0.5]])
(emb(ids) * coef).sum().backward()
opt.step()
g.barrier()
got = emb.weight[torch.tensor([rank, world + rank])]
grads = torch.cat([coef, coef])  # row `rank` appears twice: the mean of the two
m = 0.1 * grads
v = 0.001 * grads * grads
want = 1 - 0.1 * (m / 0.1) / (torch.sqrt(v / 0.001) + 1e-8)
assert torch.allclose(got, want, atol=1e-6), (got, want)
untouched = emb.weight[torch.tensor([2 * world + rank])]
assert torch.equal(untouched, torch.ones(1, 4))
# DGL's order (zero_grad between forward and backward) still applies the step.
before = emb.weight[torch.tensor([rank])]
out = emb(torch.tensor([rank]))
opt.zero_grad()
out.sum().backward()
opt.step()
g.barrier()
assert not torch.equal(emb.weight[torch.tensor([rank])], before), "zero_grad lost the step"
ok("sparse_adam_formula")

# Sparse Adagrad: sum += g^2; w -= lr * g / (sqrt(sum) + eps).
emb2 = dist.DistEmbedding(g.num_nodes(), 2, "emb_adagrad",
                          init_func=lambda shape, dtype: torch.full(shape, 2.0, dtype=dtype))
opt2 = dist.optim.SparseAdagrad([emb2], lr=0.5)
row = torch.tensor([rank])
for step_coef in (torch.tensor([[1.0, -3.0]]), torch.tensor([[2.0, 1.0]])):
    (emb2(row) * step_coef).sum().backward()
    opt2.step()
g.barrier()
g1, g2 = torch.tensor([1.0, -3.0]), torch.tensor([2.0, 1.0])
w = 2.0 - 0.5 * g1 / (torch.sqrt(g1 * g1) + 1e-10)
w = w - 0.5 * g2 / (torch.sqrt(g1 * g1 + g2 * g2) + 1e-10)
assert torch.allclose(emb2.weight[row][0], w, atol=1e-6), (emb2.weight[row], w)
ok("sparse_adagrad_formula")

# Sampling: fanout -1 is exactly the in-edges; a fanout gives min(fanout, deg)
# distinct in-edges per seed, the same for the same seed.
seeds = torch.arange(0, g.num_nodes(), 7)
full = dist.sample_neighbors(g, seeds, -1)
src, dst = full.edges()
deg = g.in_degrees(seeds)
assert torch.equal(torch.bincount(dst, minlength=g.num_nodes())[seeds], deg)
fsrc, fdst = g.find_edges(full.edata[tessera.EID])
assert torch.equal(fsrc, src) and torch.equal(fdst, dst)
a = dist.sample_neighbors(g, seeds, 3, seed=42)
b = dist.sample_neighbors(g, seeds, 3, seed=42)
assert torch.equal(a.edata[tessera.EID], b.edata[tessera.EID])
counts = torch.bincount(a.edges()[1], minlength=g.num_nodes())[seeds]
assert torch.equal(counts, torch.clamp(deg, max=3))
assert set(a.edata[tessera.EID].tolist()) <= set(full.edata[tessera.EID].tolist())
ok("sampling")

# The node loader covers this trainer's ids once per epoch; blocks chain.
train = dist.node_split(g.ndata["train_mask"], book)
loader = dist.DistNodeDataLoader(g, train, dist.NeighborSampler([5, 10]), batch_size=16,
                                 shuffle=True, num_workers=1, even_batches=False)
seen = []
for input_nodes, seeds_b, blocks in loader:
    assert torch.equal(blocks[0].srcdata[tessera.NID], input_nodes)
    assert torch.equal(blocks[0].dstdata[tessera.NID], blocks[1].srcdata[tessera.NID])
    assert torch.equal(blocks[1].dstdata[tessera.NID], seeds_b)
    s, d = blocks[1].edges()
    assert int(d.max()) < blocks[1].num_dst_nodes() and int(s.max()) < blocks[1].num_src_nodes()
    seen.append(seeds_b)
seen = torch.cat(seen)
assert seen.numel() == train.numel(), (seen.numel(), train.numel())
assert torch.equal(torch.sort(seen).values, torch.sort(train).values), "each training node once"

# Prefetching, DGL's explicit form: the sampler threads fill blocks[0].srcdata
# and blocks[-1].dstdata; a read of the same rows gets them cloned.
from tessera.distributed import _prefetch  # noqa: E402
feat_t, label_t = g.ndata["feat"], g.ndata["label"]
sampler = dist.NeighborSampler([5, 10], prefetch_node_feats=["feat"], prefetch_labels=["label"])
loader = dist.DistNodeDataLoader(g, train, sampler, batch_size=16, num_workers=1,
                                 even_batches=False)
for input_nodes, seeds_b, blocks in loader:
    x = blocks[0].srcdata["feat"]
    assert torch.equal(x, feat_t[input_nodes.clone()])  # Another ids object: a pull.
    y = feat_t[input_nodes]
    assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()
    assert torch.equal(blocks[-1].dstdata["label"], label_t[seeds_b.clone()])
    assert "feat" not in blocks[-1].srcdata or len(blocks) == 1
ok("explicit_prefetch")

# Learned: DGL's own loop reads g.ndata[...][input_nodes] / [seeds]; after
# the first reads the loader pulls those rows ahead, hands each out once,
# keeps them out of the blocks, and stops for a tensor this process writes.
marks = dist.DistTensor((g.num_nodes(), 1), torch.float32, f"marks_{rank}", persistent=True)
assert torch.equal(marks[torch.arange(3)], torch.zeros(3, 1))
loader = dist.DistNodeDataLoader(g, train, dist.NeighborSampler([5, 10]), batch_size=8,
                                 num_workers=1, even_batches=False)
hits, n = 0, len(loader)
for i, (input_nodes, seeds_b, blocks) in enumerate(loader):
    cur = _prefetch._local.current
    hits += "feat" in cur.input_rows and "label" in cur.seed_rows
    x, y = feat_t[input_nodes], label_t[seeds_b]
    assert torch.equal(x, feat_t[input_nodes.clone()]) and torch.equal(y, label_t[seeds_b.clone()])
    assert "feat" not in blocks[0].srcdata and "label" not in blocks[-1].dstdata
    again = feat_t[input_nodes]  # Given out once: a second read pulls.
    assert torch.equal(again, x) and again.data_ptr() != x.data_ptr()
    m = marks[input_nodes]
    if world == 1 and i == n // 2:  # Written: from now on every read is a pull.
        marks[input_nodes] = torch.full((input_nodes.numel(), 1), 7.0)
        assert torch.equal(marks[input_nodes], torch.full((input_nodes.numel(), 1), 7.0))
    if world == 1 and i > n // 2:  # Never served again, and soon no longer pulled.
        assert torch.equal(m, marks[input_nodes.clone()])
        assert f"marks_{rank}" not in blocks[0].srcdata
        if i > n // 2 + 3:  # Past the batches sampled before the write.
            assert f"marks_{rank}" not in cur.input_rows
assert _prefetch._local.current is None  # Cleared when the epoch ends.
assert hits >= max(1, n - 4), (hits, n)
ok("learned_prefetch")

# Edge batches: k negatives per edge, the batch's own edges never in its
# blocks (exclude="self"), pairs in pair-node ids matching find_edges.
eids = dist.edge_split(torch.ones(g.num_edges(), dtype=torch.bool), book)
assert eids.numel() > 0
counts = torch.tensor([eids.numel()], dtype=torch.float64)
edge_loader = dist.DistEdgeDataLoader(g, eids, dist.NeighborSampler([5, 5]), exclude="self",
                                      negative_sampler=tessera.dataloading.negative_sampler
                                      .Uniform(2), batch_size=64, shuffle=True)
batches = 0
for input_nodes, pos, neg, blocks in edge_loader:
    batch_eids = pos.edata[tessera.EID]
    in_blocks = torch.cat([b.edata[tessera.EID] for b in blocks])
    assert not bool(torch.isin(in_blocks, batch_eids).any()), "a batch edge was sampled"
    assert neg.num_edges() == 2 * pos.num_edges()
    nodes = pos.ndata[tessera.NID]
    s_, d_ = pos.edges()
    fs, fd = g.find_edges(batch_eids)
    assert torch.equal(nodes[s_], fs) and torch.equal(nodes[d_], fd)
    assert torch.equal(blocks[-1].dstdata[tessera.NID], nodes)
    batches += 1
assert batches == len(edge_loader) > 0
ok("edge_loader")

# DGL's negative samplers called on the DistGraph: Uniform (= PerSourceUniform)
# keeps each edge's source, k torch.randint destinations; GlobalUniform's pairs
# are never edges nor self-loops. In the loader only Uniform works (C++ draws).
from tessera.distributed import loader as dist_loader, negative_sampler as ns  # noqa: E402
assert ns.PerSourceUniform is ns.Uniform
some = torch.tensor([0, 5, g.num_edges() - 1])
torch.manual_seed(11 + rank)
src_n, dst_n = ns.Uniform(3)(g, some)
torch.manual_seed(11 + rank)
assert torch.equal(src_n, g.find_edges(some)[0].repeat_interleave(3))
assert torch.equal(dst_n, torch.randint(0, g.num_nodes(), (9,), dtype=torch.int64))
assert list(ns.Uniform(1)(g, {"_E": some})) == [("_N", "_E", "_N")]
all_src, all_dst = g.find_edges(torch.arange(g.num_edges()))
edge_keys = set((all_src * g.num_nodes() + all_dst).tolist())
c0 = g.canonical_etypes[0]
assert bool(dist_loader._edge_mask(g, c0, all_src[:200], all_dst[:200]).all())
gu, gv = ns.GlobalUniform(4)(g, some)
assert 0 < gu.numel() <= 12 and not bool((gu == gv).any())
assert not set((gu * g.num_nodes() + gv).tolist()) & edge_keys
for bad in (ns.GlobalUniform(2), lambda graph, e: ns.Uniform(2)(graph, e)):
    try:
        dist.DistEdgeDataLoader(g, eids, dist.NeighborSampler([2]), negative_sampler=bad,
                                batch_size=8)
        raise AssertionError("no error")
    except tessera.TesseraError as e:
        assert "negative_sampler must be negative_sampler.Uniform(k)" in str(e), e
ps_loader = dist.DistEdgeDataLoader(g, eids, dist.NeighborSampler([2]), batch_size=8,
                                    negative_sampler=ns.PerSourceUniform(3))
_, pos, neg, _ = next(iter(ps_loader))
assert neg.num_edges() == 3 * pos.num_edges()
ok("negative_samplers")

# in_subgraph equals fanout -1; edge_subgraph relabels.
sub = dist.in_subgraph(g, seeds)
assert torch.equal(torch.sort(sub.edata[tessera.EID]).values,
                   torch.sort(full.edata[tessera.EID]).values)
es = dist.edge_subgraph(g, full.edata[tessera.EID][:20])
src_r, dst_r = es.edges()
fs, fd = g.find_edges(es.edata[tessera.EID])
assert torch.equal(es.ndata[tessera.NID][src_r], fs) and torch.equal(es.ndata[tessera.NID][dst_r], fd)
ok("subgraphs")

# The seeds' low-level path (DGL's to_block): the block of a full frontier is
# the loader's block for the same seeds (edges compared as global triples),
# and update_all over it is the loader block's mean aggregation.
bseeds = train[:16]
frontier = dist.sample_neighbors(g, bseeds, -1)
block = tessera.to_block(frontier, bseeds)
one = dist.DistNodeDataLoader(g, bseeds, tessera.dataloading.MultiLayerFullNeighborSampler(1),
                              batch_size=16, num_workers=0)
_, _, (lb,) = next(iter(one))
assert torch.equal(block.dstdata[tessera.NID], bseeds), block.dstdata[tessera.NID]
assert torch.equal(block.srcdata[tessera.NID], lb.srcdata[tessera.NID])


def triples(b, eids):
    s, d = b.edges()
    return sorted(zip(b.srcdata[tessera.NID][s].tolist(), b.dstdata[tessera.NID][d].tolist(),
                      eids.tolist()))


# As DGL, to_block's EID are positions in the frontier, whose EID are global.
assert triples(block, frontier.edata[tessera.EID][block.edata[tessera.EID]]) == \
    triples(lb, lb.edata[tessera.EID])
x = g.ndata["feat"][block.srcdata[tessera.NID]]
with block.local_scope():
    block.srcdata["x"] = x
    block.update_all(fn.copy_u("x", "m"), fn.mean("m", "h"))
    s, d = block.edges()
    want = torch.zeros(block.num_dst_nodes(), x.shape[1]).index_add_(0, d, x[s])
    want /= torch.bincount(d, minlength=block.num_dst_nodes()).clamp(min=1).unsqueeze(1)
    assert torch.allclose(block.dstdata["h"], want, atol=1e-5)
assert "x" not in block.srcdata and "h" not in block.dstdata
try:
    tessera.to_block(dist.sample_neighbors(g, bseeds, -1), bseeds[1:])
    raise AssertionError("no error")
except tessera.TesseraError as e:
    assert "is not among them" in str(e), e
ok("to_block")

# torch.save of a DistTensor (DGL's scripts save their inference output so)
# writes its rows.
saved = io.BytesIO()
torch.save(g.ndata["feat"], saved)
saved.seek(0)
assert torch.equal(torch.load(saved), g.ndata["feat"][torch.arange(g.num_nodes())])
ok("pickled_rows")

# An integer 0/1 mask is a mask (as in DGL), not ids.
int_mask = g.ndata["train_mask"][torch.arange(g.num_nodes())].long()
assert torch.equal(dist.node_split(int_mask, book), dist.node_split(int_mask.bool(), book))
ok("int_mask_split")
ok("node_loader")

# A Python collate_fn in a sampler thread.
dl = dist.DistDataLoader(torch.arange(100), batch_size=10, shuffle=False,
                         collate_fn=sum, num_workers=2)
assert list(dl) == [sum(range(i, i + 10)) for i in range(0, 100, 10)]


class Odd(ValueError):
    pass


def failing(rows):
    if int(rows[0]) == 20:
        raise Odd("batch at 20")
    return rows


for workers in (0, 2):
    got = []
    try:
        for b in dist.DistDataLoader(torch.arange(40), batch_size=10, collate_fn=failing,
                                     num_workers=workers):
            got.append(int(b[0]))
        raise AssertionError("no error")
    except Odd as e:  # The collate's own exception, as it was raised.
        assert "batch at 20" in str(e) and got == [0, 10], (got, e)
ok("python_collate")

# The GIL is released during a wait: trainer 0 waits in a barrier that the
# others join 1 s later; a Python thread keeps counting meanwhile.
if world > 1:
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    if rank == 0:
        th = threading.Thread(target=spin)
        th.start()
        time.sleep(0.05)
        before = count[0]
        t0 = time.time()
        g.barrier()
        waited = time.time() - t0
        during = count[0] - before
        stop.set()
        th.join()
        assert waited > 0.5, waited
        assert during > 10000, f"the counting thread made {during} steps in {waited:.2f} s"
    else:
        time.sleep(1.0)
        g.barrier()
    ok("gil_released")

# A handle kept while its tensor is deleted (the owner handle dropped) and
# created again with wider rows: reads and writes through it are errors
# naming both row sizes, not copies past its buffer (they crashed the
# process); a handle of the new tensor works.
stale_name = f"recreated_{rank}"
owner = dist.DistTensor((g.num_nodes(), 2), torch.float32, stale_name)
stale = dist.DistTensor((g.num_nodes(), 2), torch.float32, stale_name)
del owner
gc.collect()
wider = dist.DistTensor((g.num_nodes(), 64), torch.float32, stale_name)
every = torch.arange(g.num_nodes())
for use in (lambda: stale[every], lambda: stale.__setitem__(every, torch.ones(len(every), 2))):
    try:
        use()
        raise AssertionError("no error")
    except tessera.TesseraError as e:
        assert "now holds float32 rows of 256 bytes, and the caller's buffer float32 rows of 8" \
            in str(e), e
assert torch.equal(wider[every], torch.zeros(len(every), 64))
ok("stale_handle")

# DGL 1.1.3's DistTensor / DistGraph answers to one id and its writes: one
# id reads a [1, ...] row and gives a one-element degree tensor; a row or a
# scalar broadcasts over the rows written; a tensor of another dtype raises.
feat = g.ndata["feat"]
assert feat[5].shape == (1, feat.shape[1]) and torch.equal(feat[5], feat[torch.tensor([5])])
assert feat[torch.tensor(5)].shape == (1, feat.shape[1])
for degrees in (g.in_degrees, g.out_degrees):
    one = degrees(5)
    assert isinstance(one, torch.Tensor) and one.shape == (1,), one
    assert torch.equal(one, degrees(torch.tensor([5])))
    assert degrees(torch.tensor(5)).shape == (1,)
bt = dist.DistTensor((g.num_nodes(), 2), torch.float32, f"broadcast_{rank}")
two = torch.tensor([1, 2])
bt[two] = torch.tensor([5.0, 6.0])
assert torch.equal(bt[two], torch.tensor([[5.0, 6.0], [5.0, 6.0]]))
bt[two] = 7.0
assert torch.equal(bt[two], torch.full((2, 2), 7.0))
bt[torch.tensor([1, 2, 3])] = torch.tensor([[1.0], [2.0], [3.0]])
assert torch.equal(bt[torch.tensor([1, 2, 3])], torch.tensor([[1.0] * 2, [2.0] * 2, [3.0] * 2]))
bt[4] = torch.tensor([8.0, 9.0])
assert torch.equal(bt[4], torch.tensor([[8.0, 9.0]]))
for bad in (torch.tensor([[1, 2]]), torch.ones(1, 2, dtype=torch.float64), torch.tensor(9)):
    try:
        bt[torch.tensor([1])] = bad
        raise AssertionError(f"no error for {bad.dtype}")
    except tessera.TesseraError as e:
        assert str(bad.dtype) in str(e) and "float32" in str(e), e
assert torch.equal(bt[1], torch.tensor([[1.0, 1.0]]))  # Unchanged by the failed writes.
try:
    bt[two] = torch.ones(3, 2)
    raise AssertionError("no error")
except tessera.TesseraError as e:
    assert "[3, 2]" in str(e) and "[2, 2]" in str(e), e
ok("dgl_row_shapes")

# Bad input gives clear Python exceptions.
try:
    g.ndata["no_such_tensor"]
    raise AssertionError("no error")
except KeyError as e:
    assert "no_such_tensor" in str(e)
try:
    g.ndata["feat"][torch.tensor([g.num_nodes() + 5])]
    raise AssertionError("no error")
except tessera.TesseraError as e:
    assert "feat" in str(e), e
try:
    g.ndata["feat"]["abc"]
    raise AssertionError("no error")
except TypeError as e:
    assert "ids" in str(e)
try:
    dist.DistTensor((g.num_nodes() + 1, 2), torch.float32, "wrong_rows")
    raise AssertionError("no error")
except tessera.TesseraError as e:
    assert "is not the count of any node type or relation" in str(e), e
assert isinstance(tessera.TesseraError("x"), RuntimeError)
ok("bad_input")
g.barrier()
print("ALL CHECKS PASSED", flush=True)
