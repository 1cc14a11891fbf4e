#!/usr/bin/python3
"""DGL-style message passing against tessera.nn's layers on the same blocks,
forward + backward, alternated in one run. Prints JSON.

    /usr/bin/python3 bench/message_passing.py --threads 2 --dgl /tmp/dgl/dgl-1.1.3/python

* ``mean``: ``block.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))``
  (in a ``local_scope``, as a layer writes it) against the aggregation
  inside ``tessera.nn.SAGEConv`` (``tessera.ops.mean_aggregate``) on the
  blocks of DGL's distributed GraphSAGE example (bench/layers.py's shapes:
  ~24k destinations with 10 in-edges from ~200k sources; 1000 with 25).
  Target (issue 26): a ratio within 1.1.
* ``rgcn``: DGL's R-GCN layer as its distributed example writes it
  (examples/python/rgcn/rgcn_hetero.py: HeteroGraphConv of
  GraphConv(norm="right", weight=False) with WeightBasis weights, self loop,
  bias) against ``tessera.nn.RelGraphConv`` (basis, the same norm, self
  loop and bias) on one typed block of the mag shape: 4 node types, 8
  relations, 25 sampled in-edges per destination and relation, hidden 64,
  2 bases. Target: a ratio within 1.5.

Each figure is the median over ``--rounds`` of one forward + backward.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "python", "rgcn"))

import tessera  # noqa: E402
import tessera.function as fn  # noqa: E402
import tessera.nn as tnn  # noqa: E402
from tessera.ops import mean_aggregate  # noqa: E402
from rgcn_hetero import RelGraphConvLayer  # noqa: E402

MAG = [("author", "affiliated_with", "institution"), ("author", "writes", "paper"),
       ("field_of_study", "rev-has_topic", "paper"), ("institution", "rev-affiliated_with",
                                                       "author"),
       ("paper", "cites", "paper"), ("paper", "has_topic", "field_of_study"),
       ("paper", "rev-cites", "paper"), ("paper", "rev-writes", "author")]


def alternate(fns, rounds):
    """{name: median seconds} of each callable, run in turn each round."""
    for f in fns.values():
        f()  # Warm up.
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def mean_case(num_dst, num_src, fanout, width, rounds, seed, dgl=None):
    g = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, num_src, (num_dst * fanout,), generator=g)
    indptr = torch.arange(0, num_dst * fanout + 1, fanout, dtype=torch.int64)
    block = tessera.distributed.Block(torch.arange(num_src), indptr, indices,
                                      torch.arange(indices.numel()))
    h = torch.randn(num_src, width, generator=g, requires_grad=True)

    def by_update_all():
        with block.local_scope():
            block.srcdata["h"] = h
            block.update_all(fn.copy_u("h", "m"), fn.mean("m", "h"))
            out = block.dstdata["h"]
        out.sum().backward()

    def by_layer_kernel():
        mean_aggregate(block, h).sum().backward()

    fns = {"update_all_s": by_update_all, "sage_aggregation_s": by_layer_kernel}
    if dgl is not None:  # DGL's update_all on the same block, written the same way.
        import dgl.function as dfn
        dblock = dgl.create_block((indices, torch.arange(num_dst).repeat_interleave(fanout)),
                                  num_src_nodes=num_src, num_dst_nodes=num_dst)

        def by_dgl():
            with dblock.local_scope():
                dblock.srcdata["h"] = h
                dblock.update_all(dfn.copy_u("h", "m"), dfn.mean("m", "h"))
                out = dblock.dstdata["h"]
            out.sum().backward()
        fns["dgl_update_all_s"] = by_dgl
    t = alternate(fns, rounds)
    t["ratio"] = t["update_all_s"] / t["sage_aggregation_s"]
    if dgl is not None:
        t["ratio_to_dgl"] = t["update_all_s"] / t["dgl_update_all_s"]
    t.update(num_dst=num_dst, num_src=num_src, fanout=fanout, width=width)
    return t


class _Types:
    def __init__(self, ntypes, rels):
        self.ntypes, self.canonical_etypes = ntypes, rels


def mag_block(num_dst, num_src, fanout, seed):
    g = torch.Generator().manual_seed(seed)
    ntypes = sorted({t for c in MAG for t in (c[0], c[2])})
    src = [torch.arange(num_src[t]) for t in ntypes]
    dst = [torch.arange(num_dst[t]) for t in ntypes]
    edges = []
    for s, _, d in MAG:
        n = num_dst[d] * fanout
        edges.append((torch.randint(0, num_src[s], (n,), generator=g),
                      torch.arange(num_dst[d]).repeat_interleave(fanout), torch.arange(n)))
    return tessera.Block.typed(_Types(ntypes, MAG), src, dst, None, edges), ntypes


def rgcn_case(width, bases, fanout, rounds, seed):
    num_dst = {"paper": 2000, "author": 1000, "institution": 200, "field_of_study": 500}
    num_src = {"paper": 20000, "author": 10000, "institution": 2000, "field_of_study": 5000}
    block, ntypes = mag_block(num_dst, num_src, fanout, seed)
    torch.manual_seed(seed)
    rels = [c[1] for c in MAG]
    dgl_layer = RelGraphConvLayer(width, width, rels, bases, self_loop=True)
    ours = tnn.RelGraphConv(width, width, len(rels), "basis", bases, self_loop=True)
    g = torch.Generator().manual_seed(seed + 1)
    feats = {t: torch.randn(num_src[t], width, generator=g, requires_grad=True) for t in ntypes}
    # The same weights: RelGraphConv's relation r is block.canonical_etypes[r], MAG's order.
    with torch.no_grad():
        ours.linear_r.W.copy_(dgl_layer.basis.weight)
        ours.linear_r.coeff.copy_(dgl_layer.basis.w_comp)
        ours.loop_weight.copy_(dgl_layer.loop_weight)
    a, b = dgl_layer(block, feats), ours(block, feats)
    worst = max(float((a[t] - b[t]).abs().max()) for t in a)

    def run(layer):
        def f():
            out = layer(block, feats)
            sum(v.sum() for v in out.values()).backward()
        return f

    t = alternate({"dgl_style_s": run(dgl_layer), "relgraphconv_s": run(ours)}, rounds)
    t["ratio"] = t["dgl_style_s"] / t["relgraphconv_s"]
    t.update(width=width, bases=bases, fanout=fanout, relations=len(rels),
             edges=block.num_edges(), max_abs_diff=worst)
    return t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--dgl", help="DGL's python folder (../shared/reference/dgl, unpacked): "
                                 "its update_all on the same blocks too")
    args = p.parse_args()
    dgl = None
    if args.dgl:
        sys.path.insert(0, args.dgl)
        os.environ.setdefault("DGLBACKEND", "pytorch")
        import dgl
    torch.set_num_threads(args.threads)
    out = {"threads": args.threads, "rounds": args.rounds,
           "dgl": None if dgl is None else dgl.__version__,
           "mean_layer0": mean_case(24000, 200000, 10, 16, args.rounds, 0, dgl),
           "mean_layer1": mean_case(1000, 24000, 25, 16, args.rounds, 1, dgl),
           "mean_wide": mean_case(24000, 200000, 10, 128, args.rounds, 2, dgl),
           "rgcn": rgcn_case(64, 2, 25, args.rounds, 3)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
