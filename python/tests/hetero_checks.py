"""Checks of the heterograph API on a generated mag-shaped graph, run
standalone (1 part) or by `tessera launch` (every trainer runs them).
Prints "CHECK <name> ok" per check and "ALL CHECKS PASSED" at the end.

argv: part_config input_dir (the `tessera generate --hetero` folder)."""
import json
import os
import sys

import numpy as np
import torch

import tessera
import tessera.distributed as dist
from conftest import raises

part_config, input_dir = sys.argv[1], sys.argv[2]
root = os.path.dirname(part_config)
meta = json.load(open(os.path.join(input_dir, "meta.json")))
conf = json.load(open(part_config))


def ok(name):
    print(f"CHECK {name} ok", flush=True)


dist.initialize()
g = dist.DistGraph("mag", part_config=part_config)
gpb = g.get_partition_book()
K = gpb.num_partitions()

# ---- types and counts
ntypes = list(meta["ntypes"])
canonical = [tuple(e.split(":")) for e in meta["etypes"]]
assert sorted(g.ntypes) == sorted(ntypes), g.ntypes
assert sorted(g.canonical_etypes) == sorted(canonical), g.canonical_etypes
assert all(isinstance(e, tuple) and len(e) == 3 for e in g.canonical_etypes)
assert g.etypes == [e[1] for e in g.canonical_etypes]
assert gpb.ntypes == g.ntypes and gpb.canonical_etypes == g.canonical_etypes
assert gpb.etypes == g.etypes
assert not g.is_homogeneous
for t in ntypes:
    assert g.num_nodes(t) == meta["ntypes"][t], t
    assert gpb.num_nodes(t) == meta["ntypes"][t], t
    assert g.ntypes[g.get_ntype_id(t)] == t
for c in canonical:
    n = meta["num_edges"][":".join(c)]
    assert g.num_edges(c) == n and g.num_edges(":".join(c)) == n and g.num_edges(c[1]) == n, c
    assert g.to_canonical_etype(c[1]) == c and g.to_canonical_etype(c) == c
    assert gpb.to_canonical_etype(c[1]) == c
    assert g.canonical_etypes[g.get_etype_id(c[1])] == c
    assert g.get_etype_id(c) == gpb.get_etype_id(c[1])
assert g.num_nodes() == sum(meta["ntypes"].values())
assert g.num_edges() == sum(meta["num_edges"].values())
# The config's node_map: [start, end) per part in homogeneous ids.
for t in ntypes:
    counts = [e - s for s, e in conf["node_map"][t]]
    assert [len(gpb.partid2nids(p, t)) for p in range(K)] == counts, t
ok("types_and_counts")

# ---- per-type data against the part files and the input
orig_nids = torch.from_numpy(np.load(os.path.join(root, "orig_nids.npy")))
in_feat = torch.from_numpy(np.load(os.path.join(input_dir, "nodes", "paper", "feat.npy")))
feat = g.nodes["paper"].data["feat"]
assert feat.shape == (g.num_nodes("paper"), meta["feat_dim"]) and feat.type_name == "paper"
assert feat.part_policy == dist.PartitionPolicy("node~paper")
assert "feat" in g.nodes["paper"].data and "train_mask" in g.nodes["paper"].data
assert g.nodes["author"].data is g.nodes["author"].data
paper_homo = gpb.map_to_homo_nid(torch.arange(g.num_nodes("paper")), "paper")
in_offset = int(orig_nids[paper_homo].min())
for p in range(K):
    ids = gpb.partid2nids(p, "paper")
    part = torch.from_numpy(np.load(os.path.join(root, f"part{p}", "node_feat", "paper",
                                                 "feat.npy")))
    assert torch.equal(feat[ids], part), f"feat of part {p}"
    assert torch.equal(gpb.nid2partid(ids, "paper"), torch.full_like(ids, p))
    assert torch.equal(gpb.nid2localnid(ids, p, "paper"), torch.arange(len(ids)))
    orig = orig_nids[gpb.map_to_homo_nid(ids, "paper")] - in_offset
    assert torch.equal(feat[ids], in_feat[orig]), f"feat of part {p} vs the input"
ok("typed_data")

# ---- id maps: homogeneous <-> per type, both ways
all_nodes = torch.arange(g.num_nodes())
types, per = g.map_to_per_ntype(all_nodes)
for i, t in enumerate(g.ntypes):
    sel = types == i
    assert int(sel.sum()) == g.num_nodes(t)
    assert torch.equal(per[sel].sort().values, torch.arange(g.num_nodes(t)))
    assert torch.equal(gpb.map_to_homo_nid(per[sel], t), all_nodes[sel])
all_edges = torch.arange(g.num_edges())
etypes_, eper = gpb.map_to_per_etype(all_edges)
for i, c in enumerate(g.canonical_etypes):
    sel = etypes_ == i
    assert int(sel.sum()) == g.num_edges(c)
    assert torch.equal(g.map_to_homo_eid(eper[sel], c), all_edges[sel])
    assert torch.equal(gpb.map_to_homo_eid(eper[sel], c[1]), all_edges[sel])
    # The homogeneous owner of an edge is the owner of its per-type id.
    assert torch.equal(gpb.eid2partid(all_edges[sel]), gpb.eid2partid(eper[sel], c))
ok("id_maps")

# ---- typed DistTensors: by policy string, by NodePartitionPolicy / EdgePartitionPolicy
n_author = g.num_nodes("author")
h = dist.DistTensor((n_author, 4), torch.float32, "h_author",
                    part_policy=dist.NodePartitionPolicy(gpb, "author"))
assert h.type_name == "author" and h.part_policy == dist.PartitionPolicy("node~author")
assert h.part_policy == g.get_node_partition_policy("author")
h2 = dist.DistTensor((n_author, 4), torch.float32, "h_author2", part_policy="node~author")
assert h2.type_name == "author"
g.barrier()
if g.rank() == 0:
    h[torch.arange(n_author)] = torch.arange(n_author, dtype=torch.float32).unsqueeze(1).repeat(1, 4)
g.barrier()
ids = torch.tensor([0, n_author // 2, n_author - 1])
assert torch.equal(h[ids], ids.float().unsqueeze(1).repeat(1, 4))
writes = ("author", "writes", "paper")
w = dist.DistTensor((g.num_edges("writes"), 2), torch.float32, "w_writes",
                    init_func=lambda shape, dtype: torch.full(shape, 3.0, dtype=dtype),
                    part_policy=dist.EdgePartitionPolicy(gpb, "writes"))
assert w.type_name == "author:writes:paper"
assert w.part_policy == g.get_edge_partition_policy(writes)
assert torch.equal(w[torch.arange(g.num_edges("writes"))],
                   torch.full((g.num_edges("writes"), 2), 3.0))
g.edges[writes].data["w"] = w
assert g.edges["writes"].data["w"] is w
ok("typed_tensor")

# ---- a learned embedding of the featureless authors (DGL's R-GCN on ogbn-mag)
emb = dist.DistEmbedding(n_author, 4, "emb_author",
                         part_policy=dist.NodePartitionPolicy(gpb, "author"))
opt = dist.optim.SparseAdagrad([emb], lr=0.5)
g.barrier()
before = emb.weight[torch.arange(n_author)]
g.barrier()  # Everyone has read the weights before any trainer changes them.
used = torch.tensor([1, n_author - 2]) if g.rank() == 0 else torch.tensor([], dtype=torch.int64)
rows = emb(used)
rows.sum().backward()
opt.step()
g.barrier()
after = emb.weight[torch.arange(n_author)]
changed = (after != before).any(1)
assert int(changed.sum()) == 2 and bool(changed[1]) and bool(changed[n_author - 2]), changed.nonzero()
assert torch.allclose(after[1], before[1] - 0.5, atol=1e-4)
raises(Exception,
       lambda: dist.DistEmbedding(n_author + 1, 4, "bad_emb", part_policy="node~author"), "author")
ok("typed_embedding")

# ---- node_split / edge_split per type
train = g.nodes["paper"].data["train_mask"]
mask = train[torch.arange(len(train))].bool()
mine = dist.node_split(mask, gpb, ntype="paper")
mine_dist = dist.node_split(train, gpb, ntype="paper")
assert torch.equal(mine.sort().values, mine_dist.sort().values)
assert bool(mask[mine].all())
world = dist.context.info()["world_size"]
shares = [dist.node_split(mask, gpb, ntype="paper", rank=r) for r in range(world)]
every = torch.cat(shares)
assert torch.equal(every.sort().values, torch.nonzero(mask).flatten()), "not every train paper"
assert max(len(s) for s in shares) - min(len(s) for s in shares) <= 1
assert torch.equal(shares[g.rank()].sort().values, mine.sort().values)
emine = dist.edge_split(torch.ones(g.num_edges("writes"), dtype=torch.bool), gpb, etype=writes)
assert emine.numel() > 0 and int(emine.max()) < g.num_edges("writes")
ok("typed_split")

# ---- typed graph operations in per-type ids, against the input's edges
type_offset = {t: int(orig_nids[gpb.map_to_homo_nid(torch.arange(g.num_nodes(t)), t)].min())
               for t in ntypes}


def to_input(t, per):
    return orig_nids[gpb.map_to_homo_nid(per, t)] - type_offset[t]


cites = g.to_canonical_etype("cites")
folder = os.path.join(input_dir, "edges", "__".join(cites))
in_src = torch.from_numpy(np.load(os.path.join(folder, "src.npy")))
in_dst = torch.from_numpy(np.load(os.path.join(folder, "dst.npy")))
n_paper = g.num_nodes("paper")
input_pairs = set(zip(in_src.tolist(), in_dst.tolist()))
some = torch.tensor([0, g.num_edges("cites") - 1, 17])
fs, fd = g.find_edges(some, "cites")
assert fs.shape == (3,) and fd.shape == (3,)
for s_, d_ in zip(to_input("paper", fs).tolist(), to_input("paper", fd).tolist()):
    assert (s_, d_) in input_pairs, (s_, d_)
deg_in = torch.bincount(in_dst, minlength=n_paper)
deg_out = torch.bincount(in_src, minlength=n_paper)
all_papers = torch.arange(n_paper)
assert torch.equal(g.in_degrees(etype="cites"), deg_in[to_input("paper", all_papers)])
assert torch.equal(g.out_degrees(all_papers, etype=cites), deg_out[to_input("paper", all_papers)])
assert g.in_degrees(5, etype="cites") == int(deg_in[to_input("paper", torch.tensor([5]))])
fanout = {c: 0 for c in g.canonical_etypes}
fanout[cites] = 2
fanout[g.to_canonical_etype("writes")] = -1
seeds = torch.arange(0, n_paper, 7)
fr = dist.sample_neighbors(g, {"paper": seeds}, fanout, seed=3)
assert fr.num_edges() == fr.num_edges("cites") + fr.num_edges("writes"), fr.num_edges()
src, dst = fr.edges(etype="cites")
assert bool(torch.isin(dst, seeds).all())
counts = torch.bincount(dst, minlength=n_paper)[seeds]
assert torch.equal(counts, torch.clamp(deg_in[to_input("paper", seeds)], max=2))
es, ed = g.find_edges(fr.edata[tessera.EID][cites], "cites")
assert torch.equal(es, src) and torch.equal(ed, dst)
wsrc, wdst = fr.edges(etype="writes")
assert bool(torch.isin(wdst, seeds).all()) and int(wsrc.max()) < g.num_nodes("author")
# An int fanout is per relation (DGL): 1 edge of each relation per seed.
one = dist.sample_neighbors(g, {"paper": seeds}, 1, seed=4)
for c in g.canonical_etypes:
    if c[2] == "paper":
        d = one.edges(etype=c)[1]
        assert int(torch.bincount(d, minlength=n_paper).max()) <= 1, c
assert one.num_edges("cites") == int((deg_in[to_input("paper", seeds)] > 0).sum())
raises(tessera.TesseraError, lambda: dist.sample_neighbors(g, {"paper": seeds}, {"cites": 2}),
       "no fanout for relations")
raises(tessera.TesseraError, lambda: dist.sample_neighbors(g, {"venue": seeds}, 2), "venue")
ok("typed_sampling")

# ---- DGL's to_block on a typed frontier equals the typed loader's block
tb_seeds = {"paper": seeds[:40]}
full_fanout = {c: -1 for c in g.canonical_etypes}
tb_frontier = dist.sample_neighbors(g, tb_seeds, full_fanout)
tb = tessera.to_block(tb_frontier, tb_seeds)
one_layer = dist.DistNodeDataLoader(g, tb_seeds, dist.NeighborSampler([full_fanout]),
                                    batch_size=40)
(_, _, (lb,)), = list(one_layer)
for t in g.ntypes:
    assert torch.equal(tb.srcdata[tessera.NID][t], lb.srcdata[tessera.NID][t]), t
    assert torch.equal(tb.dstdata[tessera.NID][t], lb.dstdata[tessera.NID][t]), t
for c in g.canonical_etypes:
    def triples(b, eids):
        u, v = b.edges(etype=c)
        return sorted(zip(b.srcdata[tessera.NID][c[0]][u].tolist(),
                          b.dstdata[tessera.NID][c[2]][v].tolist(), eids.tolist()))
    # to_block's EID are positions in the frontier (DGL's), whose EID are the ids.
    assert triples(tb, tb_frontier.edata[tessera.EID][c][tb.edata[tessera.EID][c]]) == \
        triples(lb, lb.edata[tessera.EID][c]), c
# Homogeneous ids on a typed graph give a frontier over homogeneous ids (one
# node type and relation, as documented), whose block is homogeneous too.
hseeds = g.map_to_homo_nid(seeds[:10], "paper")
hf = dist.sample_neighbors(g, hseeds, -1)
assert hf.canonical_etypes == [("_N", "_E", "_N")] and hf.num_nodes() == g.num_nodes()
hb = tessera.to_block(hf, hseeds)
assert torch.equal(hb.dstdata[tessera.NID], hseeds)
hs, hd = g.find_edges(hf.edata[tessera.EID][hb.edata[tessera.EID]])
u, v = hb.edges()
assert torch.equal(hs, hb.srcdata[tessera.NID][u]) and torch.equal(hd, hb.dstdata[tessera.NID][v])
raises(tessera.TesseraError,
       lambda: tessera.to_block(dist.sample_neighbors(g, tb_seeds, full_fanout), seeds[:40]),
       "several node types")
ok("typed_to_block")

# ---- the typed node loader: hetero blocks from dict seeds, per-relation fanouts
train_papers = torch.nonzero(mask).flatten()
sampler = dist.NeighborSampler([fanout, 3])
loader = dist.DistNodeDataLoader(g, {"paper": train_papers[:200]}, sampler, batch_size=64,
                                 shuffle=True, seed=7)
seen = []
for input_nodes, out_seeds, blocks in loader:
    assert isinstance(blocks[0], dist.Block) and not blocks[0].is_homogeneous and len(blocks) == 2
    seen.append(out_seeds["paper"])
    assert torch.equal(blocks[-1].dstdata[tessera.NID]["paper"], out_seeds["paper"])
    for t in g.ntypes:
        assert torch.equal(blocks[0].dstdata[tessera.NID][t], blocks[1].srcdata[tessera.NID][t])
        assert torch.equal(input_nodes[t], blocks[0].srcdata[tessera.NID][t])
    b = blocks[0]
    for c in g.canonical_etypes:
        u, v = b.edges(etype=c)
        if u.numel() == 0:
            continue
        es, ed = g.find_edges(b.edata[tessera.EID][c], c)
        assert torch.equal(es, b.srcdata[tessera.NID][c[0]][u]), c
        assert torch.equal(ed, b.dstdata[tessera.NID][c[2]][v]), c
    # Layer 0 takes the dict (2 cites, every writes edge), layer 1 3 of each relation.
    if b.num_edges("cites"):
        assert int(torch.bincount(b.edges(etype="cites")[1]).max()) <= 2
    assert b.num_edges("rev-writes") == 0
    top = blocks[1]
    for c in g.canonical_etypes:
        if top.num_edges(c):
            assert int(top.in_degrees(etype=c).max()) <= 3, c
got = torch.cat(seen).sort().values
assert torch.equal(got, train_papers[:200].sort().values), "every seed once"
assert len(loader) == (200 + 63) // 64
raises(tessera.TesseraError,
       lambda: dist.DistNodeDataLoader(g, {"paper": train_papers},
                                       dist.NeighborSampler([{"cites": 1}])),
       "no fanout for relation")
ok("typed_loader")

# ---- the typed edge loader: link prediction on writes and cites (DGL's dict eids)
from tessera.distributed.loader import PairGraph  # noqa: E402

orig_eids = torch.from_numpy(np.load(os.path.join(root, "orig_eids.npy")))
writes, cites = g.to_canonical_etype("writes"), g.to_canonical_etype("cites")
reverse = {writes: g.to_canonical_etype("rev-writes"), cites: g.to_canonical_etype("rev-cites")}


def input_edges(c):
    """The input's (src, dst) of relation c, in the input's per-type ids."""
    folder = os.path.join(input_dir, "edges", "__".join(c))
    return (torch.from_numpy(np.load(os.path.join(folder, "src.npy"))),
            torch.from_numpy(np.load(os.path.join(folder, "dst.npy"))))


def to_input_eid(c, per):
    """Our per-relation edge ids of c as the input's (rows of its src/dst.npy)."""
    homo = orig_eids[gpb.map_to_homo_eid(per, c)]
    first = int(orig_eids[gpb.map_to_homo_eid(torch.arange(g.num_edges(c)), c)].min())
    return homo - first


def check_pairs(pair, c, rows):
    """The pairs of relation c: their nodes are the input's endpoints of the
    input rows `rows`."""
    u, v = pair.edges(etype=c)
    in_src, in_dst = input_edges(c)
    assert torch.equal(to_input(c[0], pair.ndata[tessera.NID][c[0]][u]), in_src[rows]), c
    assert torch.equal(to_input(c[2], pair.ndata[tessera.NID][c[2]][v]), in_dst[rows]), c


every = {c: dist.edge_split(torch.ones(g.num_edges(c), dtype=torch.bool), gpb, etype=c)
         for c in (writes, cites)}
mine = {"writes": every[writes][::7], "paper:cites:paper": every[cites][::5]}
k = 3
link_fanout = dict(fanout)
link_fanout[g.to_canonical_etype("rev-writes")] = 2
link_loader = dist.DistEdgeDataLoader(
    g, mine, dist.NeighborSampler([link_fanout, 2]), exclude="reverse_types",
    reverse_etypes={"writes": "rev-writes", cites: "rev-cites"},
    negative_sampler=tessera.dataloading.negative_sampler.Uniform(k), batch_size=32,
    shuffle=True, seed=11)
seen = {writes: [], cites: []}
neg_papers = []
for input_nodes, pos, neg, blocks in link_loader:
    assert isinstance(pos, PairGraph) and not pos.is_homogeneous
    assert isinstance(neg, PairGraph) and not neg.is_homogeneous
    assert isinstance(blocks[0], dist.Block) and not blocks[0].is_homogeneous and len(blocks) == 2
    assert set(pos.canonical_etypes) <= {writes, cites}
    assert pos.num_edges() == sum(pos.num_edges(c) for c in pos.canonical_etypes) > 0
    excluded = {}
    for c in (writes, cites):
        if c not in pos.canonical_etypes:  # No edge of c in this batch (DGL drops it).
            continue
        eids = pos.edata[tessera.EID]  # A tensor when the batch has one relation.
        eid = eids[c] if isinstance(eids, dict) else eids
        seen[c].append(eid)
        check_pairs(pos, c, to_input_eid(c, eid))
        es, ed = g.find_edges(eid, c)
        u, v = pos.edges(etype=c)
        assert torch.equal(es, pos.ndata[tessera.NID][c[0]][u]), c
        assert torch.equal(ed, pos.ndata[tessera.NID][c[2]][v]), c
        # k negatives per edge: its source, a node of the relation's destination type.
        nu, nv = neg.edges(etype=c)
        assert torch.equal(nu, u.repeat_interleave(k)), c
        dst = to_input(c[2], neg.ndata[tessera.NID][c[2]][nv])
        assert int(dst.min()) >= 0 and int(dst.max()) < meta["ntypes"][c[2]], c
        if c == writes:
            neg_papers.append(dst)
        excluded[c] = excluded[reverse[c]] = eid
    assert tessera.EID not in neg.edata
    for t in g.ntypes:
        assert torch.equal(blocks[-1].dstdata[tessera.NID][t], pos.ndata[tessera.NID][t]), t
        assert torch.equal(neg.ndata[tessera.NID][t], pos.ndata[tessera.NID][t]), t
        assert pos.num_nodes(t) == neg.num_nodes(t) == pos.ndata[tessera.NID][t].numel()
        assert torch.equal(blocks[0].dstdata[tessera.NID][t], blocks[1].srcdata[tessera.NID][t])
        assert torch.equal(input_nodes[t], blocks[0].srcdata[tessera.NID][t]), t
    for b in blocks:
        for c in g.canonical_etypes:
            u, v = b.edges(etype=c)
            eid = b.edata[tessera.EID][c]
            if c in excluded:
                assert not bool(torch.isin(eid, excluded[c]).any()), f"excluded {c} edge sampled"
            if u.numel():
                es, ed = g.find_edges(eid, c)
                assert torch.equal(es, b.srcdata[tessera.NID][c[0]][u]), c
                assert torch.equal(ed, b.dstdata[tessera.NID][c[2]][v]), c
        if b.num_edges(cites):
            assert int(b.in_degrees(etype=cites).max()) <= 2
for c, ids in ((writes, mine["writes"]), (cites, mine["paper:cites:paper"])):
    assert torch.equal(torch.cat(seen[c]).sort().values, ids.sort().values), f"{c} once each"
# Negative papers are uniform over the papers (their mean id about half the
# count), unlike writes' power-law destinations.
drawn = torch.cat(neg_papers).double()
assert abs(float(drawn.mean()) / meta["ntypes"]["paper"] - 0.5) < 0.08, float(drawn.mean())
# At least this trainer's batches (even_batches pads to the largest count).
assert len(link_loader) >= -(-(len(mine["writes"]) + len(mine["paper:cites:paper"])) // 32)
raises(tessera.TesseraError,
       lambda: dist.DistEdgeDataLoader(g, {"venue_of": mine["writes"]}, sampler),
       "no edge type 'venue_of'")
raises(tessera.TesseraError,
       lambda: dist.DistEdgeDataLoader(g, {"writes": torch.tensor([g.num_edges("writes")])},
                                       sampler), "author:writes:paper")
raises(tessera.TesseraError,
       lambda: dist.DistEdgeDataLoader(g, mine, sampler, exclude="reverse_types",
                                       reverse_etypes={"writes": "rev-writes"}),
       "paper:cites:paper has no reverse")
raises(tessera.TesseraError,
       lambda: dist.DistEdgeDataLoader(g, mine, sampler, exclude="reverse_types",
                                       reverse_etypes={"writes": "cites", "cites": "cites"}),
       "cannot be the reverse of relation author:writes:paper")
raises(tessera.TesseraError,
       lambda: dist.DistEdgeDataLoader(g, mine, sampler, exclude="reverse_id",
                                       reverse_eids={"cites": torch.arange(3)}),
       "reverse_eids of relation paper:cites:paper")
ok("typed_link_loader")

# ---- clear errors
raises(tessera.TesseraError, lambda: g.ndata, "one node type", "nodes[ntype]")
raises(tessera.TesseraError, lambda: g.edata, "one edge type", "edges[etype]")
raises(tessera.TesseraError, lambda: g.num_nodes("foo"), "foo")
raises(tessera.TesseraError, lambda: g.num_edges("nope"), "nope")
raises(tessera.TesseraError, lambda: g.get_etype_id(("paper", "writes", "paper")), "writes")
raises(KeyError, lambda: g.nodes["foo"], "foo")
raises(KeyError, lambda: g.edges["nope"], "nope")
raises(KeyError, lambda: g.nodes["paper"].data["nothere"], "nothere")
raises(tessera.TesseraError, lambda: gpb.nid2partid(torch.tensor([0]), "foo"), "foo")
raises(tessera.TesseraError,
       lambda: gpb.map_to_homo_nid(torch.tensor([g.num_nodes("paper")]), "paper"), "out of range")
raises(tessera.TesseraError, lambda: dist.node_split(mask, gpb, ntype="foo"), "foo")
raises(tessera.TesseraError,
       lambda: dist.DistTensor((3, 2), torch.float32, "x", part_policy="node~paper"))
# An ambiguous relation name (two canonical types with one name) asks for the
# canonical type; the generated graph has none, so the book's lookup is shown
# on a book with such a pair.
book = dist.GraphPartitionBook(None, [0, 4], [0, 6])
book._ntypes, book._canonical = ["a", "b"], [("a", "r", "b"), ("b", "r", "a")]
raises(tessera.TesseraError, lambda: book.get_etype_id("r"), "ambiguous")
assert book.get_etype_id(("b", "r", "a")) == 1 and book.get_etype_id("b:r:a") == 1
ok("errors")

g.barrier()
print("ALL CHECKS PASSED", flush=True)
dist.exit_client()
