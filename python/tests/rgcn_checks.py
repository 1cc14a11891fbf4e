"""The relation ids the R-GCN example gives RelGraphConv, checked against the
generator's input: every edge of sampled (homogeneous) blocks, mapped by
tessera.nn.block_etypes and the partition book, is an edge of that relation
in edges/<src>__<rel>__<dst>/{src,dst}.npy between the block's endpoints.
Prints "CHECK block_relations ok".

argv: part_config input_dir (the `tessera generate --hetero` folder)."""
import json
import os
import sys

import numpy as np
import torch

import tessera
import tessera.distributed as dist
import tessera.nn as tnn

part_config, input_dir = sys.argv[1], sys.argv[2]
root = os.path.dirname(part_config)
meta = json.load(open(os.path.join(input_dir, "meta.json")))
dist.initialize()
g = dist.DistGraph("mag", part_config=part_config)
gpb = g.get_partition_book()
# The input's homogeneous ids: types (relations) in meta.json's order.
orig_nids = np.load(os.path.join(root, "orig_nids.npy"))
orig_eids = np.load(os.path.join(root, "orig_eids.npy"))
in_ntypes = list(meta["ntypes"])
node_offset = dict(zip(in_ntypes, np.cumsum([0] + [meta["ntypes"][t] for t in in_ntypes])))
in_etypes = [tuple(e.split(":")) for e in meta["etypes"]]
edge_bounds = np.cumsum([0] + [meta["num_edges"][":".join(c)] for c in in_etypes])
edges = {}
for c in in_etypes:
    folder = os.path.join(input_dir, "edges", "__".join(c))
    edges[c] = (np.load(os.path.join(folder, "src.npy")), np.load(os.path.join(folder, "dst.npy")))

papers = g.map_to_homo_nid(torch.arange(0, g.num_nodes("paper"), 7), "paper")
loader = dist.DistNodeDataLoader(g, papers, dist.NeighborSampler([4, 4]), batch_size=128)
seen = set()
checked = 0
for input_nodes, seeds, blocks in loader:
    for block in blocks:
        rel = tnn.block_etypes(g, block)
        assert rel.shape == (block.num_edges(),) and rel.dtype == torch.int64
        # The input relation and endpoints of each block edge, from the
        # partitioner's mappings alone.
        orig = orig_eids[block.edata[tessera.EID].numpy()]
        in_rel = np.searchsorted(edge_bounds, orig, side="right") - 1
        src = orig_nids[block.srcdata[tessera.NID][block.indices].numpy()]
        dst = orig_nids[block.dstdata[tessera.NID][block.edge_dst].numpy()]
        for r, c in enumerate(g.canonical_etypes):
            mine = (rel == r).nonzero().reshape(-1).numpy()
            if mine.size == 0:
                continue
            seen.add(c)
            k = in_etypes.index(c)
            assert (in_rel[mine] == k).all(), c
            per = orig[mine] - edge_bounds[k]
            assert np.array_equal(edges[c][0][per] + node_offset[c[0]], src[mine]), c
            assert np.array_equal(edges[c][1][per] + node_offset[c[2]], dst[mine]), c
            checked += mine.size
        if checked > 20000:
            continue  # rel_norm by hand on the first batches only (a Python loop)
        norm = tnn.rel_norm(block, rel).reshape(-1)
        pairs = {}
        for d, r in zip(block.edge_dst.tolist(), rel.tolist()):
            pairs[(d, r)] = pairs.get((d, r), 0) + 1
        want = [1.0 / pairs[(d, r)] for d, r in zip(block.edge_dst.tolist(), rel.tolist())]
        assert torch.allclose(norm, torch.tensor(want)), "rel_norm"
# Two hops from papers reach every relation whose destination a paper or a
# paper's neighbour is: all but affiliated_with (author -> institution).
want = {c for c in g.canonical_etypes if c[1] != "affiliated_with"}
assert want <= seen, (want - seen)
print(f"{checked} block edges checked over {len(seen)} relations", flush=True)
print("CHECK block_relations ok", flush=True)
