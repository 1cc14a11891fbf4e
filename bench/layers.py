#!/usr/bin/python3
"""Forward + backward of tessera.nn's layers against their limit on this
machine and, with ``--dgl PATH``, against DGL's own layers on the same blocks
in the same run. Prints JSON.

    /usr/bin/python3 bench/layers.py --threads 2 --dgl /tmp/dgl/dgl-1.1.3/python

The blocks have the shapes of DGL's distributed GraphSAGE example on the
600k-node benchmark graph (fan-out 10,25, batch 1000: layer 0 has ~24k
destinations with 10 in-edges from ~200k sources, layer 1 1000 destinations
with 25 in-edges) and of its R-GCN example (fan-out 25, hidden 64, 8
relations, 2 bases); sources are drawn uniformly, as a sampler over a large
graph draws them. Each layer gets the same weights on both sides (copied
from DGL's module), and its output is checked against DGL's.

The limit of a layer is the time of its GEMMs done alone (the same shapes,
timed here) plus its gathered and scattered bytes at the random row-gather
rate measured here (``index_select`` of the same rows): what no
implementation of the layer's arithmetic can beat on this machine.
"""
import argparse
import importlib
import json
import os
import sys
import time

import torch


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="torch threads, the same for both systems")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--layers", default="sage0,sage1,gcn0,gat0,gat1,rgcn0",
                   help="comma-separated: sage0 sage1 gcn0 gat0 gat1 rgcn0")
    p.add_argument("--dgl", help="DGL's python folder (../shared/reference/dgl), to compare")
    return p.parse_args()


def random_block(num_dst, num_src, fanout, seed):
    g = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, num_src, (num_dst * fanout,), generator=g)
    # Destinations are the first sources, as in a sampled block.
    indptr = torch.arange(0, num_dst * fanout + 1, fanout, dtype=torch.int64)
    return indptr, indices


def timed(fn, rounds):
    fn()  # warm up (allocations, lazy init)
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def gather_rate(rows, width, num_edges, rounds):
    """Bytes per second of a random gather of `num_edges` rows of `width`
    float32 from a table of `rows` (the layer's own index pattern)."""
    table = torch.randn(rows, width)
    idx = torch.randint(0, rows, (num_edges,))
    t = timed(lambda: table.index_select(0, idx), rounds)
    return num_edges * width * 4 / t


SPECS = {
    # name: (num_dst, num_src, fanout, in, out, kind)
    "sage0": (24000, 200000, 10, 100, 16, "sage"),
    "sage1": (1000, 24000, 25, 16, 47, "sage"),
    "gcn0": (24000, 200000, 10, 100, 16, "gcn"),
    "gat0": (24000, 200000, 10, 100, 16, "gat"),
    "gat1": (1000, 24000, 25, 16, 16, "gat"),
    "rgcn0": (25000, 200000, 25, 64, 64, "rgcn"),
}
HEADS = 4
RELS, BASES = 8, 2


def make_layer(nn_module, kind, fin, fout):
    """The layer of `kind` from `nn_module` (tessera.nn or dgl.nn.pytorch:
    the same constructors)."""
    if kind == "sage":
        return nn_module.SAGEConv(fin, fout, "mean")
    if kind == "gcn":
        return nn_module.GraphConv(fin, fout, norm="right", allow_zero_in_degree=True)
    if kind == "gat":
        return nn_module.GATConv(fin, fout, HEADS, allow_zero_in_degree=True)
    return nn_module.RelGraphConv(fin, fout, RELS, "basis", BASES, self_loop=True)


def copy_weights(src, dst):
    """DGL's parameters into tessera's module (the same names and shapes)."""
    ours = dict(dst.named_parameters())
    with torch.no_grad():
        for name, p in src.named_parameters():
            if name not in ours or ours[name].shape != p.shape:
                raise SystemExit(f"layers.py: parameter {name} {tuple(p.shape)} has no "
                                 f"counterpart in tessera's {type(dst).__name__}")
            ours[name].copy_(p)


def limit_seconds(kind, num_dst, num_src, fanout, fin, fout, rounds):
    """GEMMs alone + gathered/scattered bytes at the measured gather rate."""
    E = num_dst * fanout
    x = torch.randn(num_src, fin)
    w = torch.randn(fin, fout, requires_grad=True)
    if kind in ("sage", "gcn", "gat"):
        width = (fout if fin > fout else fin) * (HEADS if kind == "gat" else 1)
        if kind == "gat":
            w = torch.randn(fin, fout * HEADS, requires_grad=True)
        rows = num_src if (fin > fout or kind == "gat") else num_src
        a = x if fin > fout or kind == "gat" else x[:num_dst]

        def gemms():
            y = a @ w  # projection (before aggregation when narrower)
            if kind == "sage":
                y = y.sum() + (x[:num_dst] @ w).sum()  # fc_self
            y.sum().backward()  # weight gradient (inputs need none)
        gemm = timed(gemms, rounds)
        # forward gather, backward scatter of the same bytes
        moved = 2 * E * width * 4
        return gemm + moved / gather_rate(rows, width, E, rounds), gemm
    # rgcn: one GEMM per (relation, destination) pair + the self loop,
    # forward and weight gradient; the gather of input rows, forward and
    # backward.
    pairs = min(num_dst * RELS, E)
    p = torch.randn(pairs, fin)
    loop = torch.randn(fin, fout, requires_grad=True)

    def gemms():
        ((p @ w).sum() + (x[:num_dst] @ loop).sum()).backward()
    gemm = timed(gemms, rounds)
    moved = 2 * E * fin * 4
    return gemm + moved / gather_rate(num_src, fin, E, rounds), gemm


def run_layer(name, args, dgl):
    import tessera.nn as tnn
    from tessera.distributed import Block
    num_dst, num_src, fanout, fin, fout, kind = SPECS[name]
    indptr, indices = random_block(num_dst, num_src, fanout, seed=hash(name) % 1000)
    E = indices.numel()
    x = torch.randn(num_src, fin)
    etypes = torch.randint(0, RELS, (E,), generator=torch.Generator().manual_seed(1))
    block = Block(torch.arange(num_src), indptr, indices, torch.arange(E))
    ours = make_layer(tnn, kind, fin, fout)
    extra_ours = (etypes,) if kind == "rgcn" else ()
    result = {"layer": name, "kind": kind, "num_dst": num_dst, "num_src": num_src, "edges": E,
              "in": fin, "out": fout, "threads": torch.get_num_threads()}
    if dgl is not None:
        import dgl.nn.pytorch as dglnn
        theirs = make_layer(dglnn, kind, fin, fout)
        copy_weights(theirs, ours)
        dst = torch.repeat_interleave(torch.arange(num_dst), fanout)
        dblock = dgl.create_block((indices, dst), num_src_nodes=num_src, num_dst_nodes=num_dst)
        extra_dgl = ()
        if kind == "rgcn":
            # DGL's RelGraphConv wants edges sorted by relation for its
            # fastest path (presorted); give it the same edges as they are.
            extra_dgl = (etypes,)
        with torch.no_grad():
            want = theirs(dblock, x, *extra_dgl)
            got = ours(block, x, *extra_ours)
        err = float((got - want).abs().max() / (want.abs().max() + 1e-12))
        result["max_rel_diff_vs_dgl"] = err

        def step_dgl():
            theirs.zero_grad(set_to_none=True)
            theirs(dblock, x, *extra_dgl).sum().backward()
        result["dgl_s"] = timed(step_dgl, args.rounds)

    def step_ours():
        ours.zero_grad(set_to_none=True)
        ours(block, x, *extra_ours).sum().backward()
    result["tessera_s"] = timed(step_ours, args.rounds)
    limit, gemm = limit_seconds(kind, num_dst, num_src, fanout, fin, fout, args.rounds)
    result["limit_s"], result["gemm_alone_s"] = limit, gemm
    result["fraction_of_limit"] = limit / result["tessera_s"]
    if dgl is not None:
        result["tessera_vs_dgl"] = result["tessera_s"] / result["dgl_s"]
    return result


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    dgl = None
    if args.dgl:
        sys.path.insert(0, args.dgl)
        os.environ.setdefault("DGLBACKEND", "pytorch")
        import dgl as dgl_module
        dgl = dgl_module
    importlib.import_module("tessera")  # after DGL: tessera's context sets no threads here
    torch.set_num_threads(args.threads)
    out = {"bench": "layers", "threads": args.threads, "rounds": args.rounds,
           "dgl": None if dgl is None else dgl.__version__, "layers": []}
    for name in args.layers.split(","):
        if name not in SPECS:
            raise SystemExit(f"layers.py: unknown layer {name!r} ({', '.join(SPECS)})")
        out["layers"].append(run_layer(name, args, dgl))
        print(json.dumps(out["layers"][-1]), file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
