#!/usr/bin/python3
"""DGL's distributed R-GCN entity classification (``entity_classify_dist.py``
of DGL 1.1.3) against tessera's port of it (``examples/python/rgcn``) and its
C++ example (``rgcn_train``), standalone, in the same run, with the same
threads, on an ogbn-mag shaped graph from ``tessera generate --hetero``.
Prints JSON.

    git -C <dmlc/dgl> show v1.1.3:examples/pytorch/rgcn/experimental/entity_classify_dist.py \\
        > /tmp/entity_classify_dist.py
    /usr/bin/python3 bench/rgcn_vs_dgl.py --dgl /tmp/dgl/dgl-1.1.3 \\
        --script /tmp/entity_classify_dist.py --nodes 100000 --pairs 2

Settings of the issue-24 table: fan-out 25,25, batch 1024, hidden 64, 2 bases,
dropout 0.5, learned (sparse) embeddings for the featureless types. DGL's
script needs a DGL partition: the generated graph is loaded into a
``dgl.heterograph`` and partitioned by DGL's ``partition_graph`` (one part);
tessera's by ``tessera partition``. An epoch's figure is the mean of the
epochs after the first; DGL's "Epoch Time" is its sum of step times, so
tessera's figures are given both ways (wall and sum of steps) where they
print both.
"""
import argparse
import json
import os
import re
import statistics
import sys

import _dgl_runs

DGL_EPOCH = re.compile(r"Epoch Time\(s\): ([\d.]+), sample: ([\d.]+), data copy: ([\d.]+), "
                       r"forward: ([\d.]+), backward: ([\d.]+), update: ([\d.]+)")
PY_EPOCH = re.compile(r"Epoch Time\(s\): ([\d.]+), sample: ([\d.]+), forward: ([\d.]+), "
                      r"backward: ([\d.]+), update: ([\d.]+)")
CPP_EPOCH = re.compile(r"epoch \d+: loss [\d.]+, train acc [\d.]+, val acc [\d.]+, ([\d.]+) s "
                       r"\(sample ([\d.]+), forward ([\d.]+), backward ([\d.]+), update ([\d.]+)\)")
DGL_PARTITION = """
import os, sys, numpy as np, torch, dgl
src, out = sys.argv[1], sys.argv[2]
edges = {}
for name in sorted(os.listdir(src + "/edges")):
    s, r, d = name.split("__")
    e = src + "/edges/" + name
    edges[(s, r, d)] = (torch.from_numpy(np.load(e + "/src.npy")),
                        torch.from_numpy(np.load(e + "/dst.npy")))
counts = {}
for (s, r, d), (u, v) in edges.items():
    counts[s] = max(counts.get(s, 0), int(u.max()) + 1 if len(u) else 0)
    counts[d] = max(counts.get(d, 0), int(v.max()) + 1 if len(v) else 0)
meta = src + "/nodes"
for t in os.listdir(meta):
    for f in os.listdir(meta + "/" + t):
        counts[t] = max(counts.get(t, 0), len(np.load(meta + "/" + t + "/" + f, mmap_mode="r")))
g = dgl.heterograph(edges, num_nodes_dict=counts)
p = meta + "/paper/"
g.nodes["paper"].data["feat"] = torch.from_numpy(np.load(p + "feat.npy"))
g.nodes["paper"].data["labels"] = torch.from_numpy(np.load(p + "label.npy"))
for m in ("train_mask", "val_mask", "test_mask"):
    g.nodes["paper"].data[m] = torch.from_numpy(np.load(p + m + ".npy"))
dgl.distributed.partition_graph(g, "mag", 1, out, part_method="metis", balance_edges=True)
"""


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dgl", required=True, help="the extracted dgl-1.1.3 folder")
    p.add_argument("--script", required=True, help="DGL's entity_classify_dist.py (v1.1.3)")
    p.add_argument("--nodes", type=int, default=100000)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=1)
    p.add_argument("--work", default="/tmp/tessera-rgcn-vs-dgl")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    p.add_argument("--tessera", default=os.path.join(here, "build", "bin", "tessera"))
    p.add_argument("--cpp", default=os.path.join(here, "build", "bin", "rgcn_train"))
    p.add_argument("--python", default=os.path.join(here, "examples", "python", "rgcn",
                                                    "train_rgcn.py"))
    return p.parse_args()


def run(cmd, env, what):
    return _dgl_runs.run(cmd, env, what, "rgcn_vs_dgl")


def epochs_of(regex, out, keys, args, what):
    return _dgl_runs.epochs_of(regex, out, keys, args.epochs, what, "rgcn_vs_dgl")


def main():
    args = parse()
    os.makedirs(args.work, exist_ok=True)
    graph = os.path.join(args.work, f"mag{args.nodes}")
    # DGL's script imports ogb at the top (for its non-distributed path
    # only); ogb is not a Debian package, so an empty stand-in module.
    stubs = os.path.join(args.work, "stubs", "ogb")
    os.makedirs(stubs, exist_ok=True)
    for name, text in (("__init__.py", ""), ("nodeproppred.py", "DglNodePropPredDataset = None\n")):
        with open(os.path.join(stubs, name), "w") as f:
            f.write(text)
    dgl_env = dict(os.environ, PYTHONPATH=os.path.join(args.dgl, "python") + os.pathsep +
                   os.path.dirname(stubs), DGLBACKEND="pytorch")
    if not os.path.isdir(graph):
        run([args.tessera, "generate", "--hetero", "--nodes", str(args.nodes), "--out", graph],
            dict(os.environ), "tessera generate --hetero")
    dgl_parts, ours = graph + "_dgl", graph + "_tessera"
    if not os.path.exists(os.path.join(dgl_parts, "mag.json")):
        run(["/usr/bin/python3", "-c", DGL_PARTITION, graph, dgl_parts], dgl_env,
            "DGL partition_graph")
    if not os.path.exists(os.path.join(ours, "mag.json")):
        run([args.tessera, "partition", "--input", graph, "--graph-name", "mag", "--num-parts",
             "1", "--out", ours], dict(os.environ), "tessera partition")
    ip = os.path.join(args.work, "ip.txt")
    with open(ip, "w") as f:
        f.write("127.0.0.1\n")
    common = ["--fanout", "25,25", "--batch-size", "1024", "--n-hidden", "64", "--n-bases", "2",
              "--n-layers", "2", "--dropout", "0.5", "--lr", "0.01", "--sparse-lr", "0.06",
              "--n-epochs", str(args.epochs), "--eval-batch-size", "4096"]
    threads = dict(OMP_NUM_THREADS=str(args.threads))
    pairs = []
    for i in range(args.pairs):
        out = run(["/usr/bin/python3", args.script, "--standalone", "--graph-name", "mag",
                   "--ip-config", ip, "--conf-path", os.path.join(dgl_parts, "mag.json"),
                   "-d", "ogbn-mag", "--sparse-embedding", "--dgl-sparse", "--use-self-loop",
                   *common], dict(dgl_env, **threads), f"pair {i + 1}: DGL")
        d = epochs_of(DGL_EPOCH, out, ("epoch_s", "sample_s", "copy_s", "forward_s",
                                       "backward_s", "update_s"), args, "DGL")
        out = run(["/usr/bin/python3", args.python, "--graph-name", "mag", "--ip-config", ip,
                   "--conf-path", os.path.join(ours, "mag.json"), "--label", "label",
                   "--use-self-loop", "--eval-every", str(args.epochs + 1), *common],
                  dict(os.environ, **threads), f"pair {i + 1}: tessera Python")
        t = epochs_of(PY_EPOCH, out, ("epoch_s", "sample_s", "forward_s", "backward_s",
                                      "update_s"), args, "tessera Python")
        out = run([args.cpp, "--graph_name", "mag", "--part_config", os.path.join(ours, "mag.json"),
                   "--fan_out", "25,25", "--batch_size", "1024", "--num_hidden", "64",
                   "--num_bases", "2", "--dropout", "0.5", "--lr", "0.01", "--sparse_lr", "0.06",
                   "--num_epochs", str(args.epochs)], dict(os.environ, **threads),
                  f"pair {i + 1}: tessera C++")
        c = epochs_of(CPP_EPOCH, out, ("epoch_s", "sample_s", "forward_s", "backward_s",
                                       "update_s"), args, "tessera C++")
        ratio = {"python_epoch": t["epoch_s"] / d["epoch_s"],
                 "cpp_epoch": c["epoch_s"] / d["epoch_s"],
                 "python_forward": t["forward_s"] / d["forward_s"],
                 "python_backward": t["backward_s"] / d["backward_s"],
                 "cpp_vs_python_epoch": c["epoch_s"] / t["epoch_s"]}
        pairs.append({"dgl": d, "tessera_python": t, "tessera_cpp": c, "tessera_vs_dgl": ratio})
        print(json.dumps(pairs[-1]), file=sys.stderr)
    summary = {k: statistics.median(p["tessera_vs_dgl"][k] for p in pairs)
               for k in pairs[0]["tessera_vs_dgl"]}
    print(json.dumps({"bench": "rgcn_vs_dgl", "nodes": args.nodes, "threads": args.threads,
                      "epochs": args.epochs, "pairs": pairs, "median_tessera_vs_dgl": summary},
                     indent=1))


if __name__ == "__main__":
    main()
