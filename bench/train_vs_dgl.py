#!/usr/bin/python3
"""DGL's own distributed GraphSAGE example (``train_dist.py`` of DGL 1.1.3)
run standalone on DGL and, with only its imports changed, on tessera, in the
same run, with the same threads: epoch times, their breakdown and the ratio.
Prints JSON.

    mkdir -p /tmp/dgl && tar xf ../shared/reference/dgl/dgl-1.1.3.tar.xz -C /tmp/dgl
    /usr/bin/python3 ../shared/tools/gen_graph.py --out /tmp/medium
    /usr/bin/python3 bench/train_vs_dgl.py --graph /tmp/medium --dgl /tmp/dgl/dgl-1.1.3 \\
        --threads 2 --pairs 3

Each pair runs DGL, tessera (Python) and tessera's C++ example
(``graphsage_train_dist``, same settings) back to back (the machine's speed drifts
between minutes, not within a pair); the figures are per pair, and the
summary is the median of the per-pair ratios. An epoch's figure is the mean
of the epochs after the first (the first one warms caches and allocators).
The partitions (one part each, made by each system's own partitioner) are
kept in --work and reused.
"""
import argparse
import json
import os
import re
import statistics
import sys

import _dgl_runs

EPOCH = re.compile(r"Epoch Time\(s\): ([\d.]+), sample\+data_copy: ([\d.]+), forward: ([\d.]+), "
                   r"backward: ([\d.]+), update: ([\d.]+)")
ACC = re.compile(r"Test Acc ([\d.]+)")
CPP_EPOCH = re.compile(r"epoch \d+: loss [\d.]+, train acc [\d.]+, ([\d.]+) s \(sample ([\d.]+), "
                       r"pull ([\d.]+) \[[^]]*\], forward ([\d.]+), backward ([\d.]+), update "
                       r"([\d.]+)")
DGL_PARTITION = """
import sys, numpy as np, torch, dgl
src, out = sys.argv[1], sys.argv[2]
s, d = np.load(src + "/src.npy"), np.load(src + "/dst.npy")
g = dgl.graph((torch.from_numpy(s), torch.from_numpy(d)))
g.ndata["features"] = torch.from_numpy(np.load(src + "/feat.npy"))
g.ndata["labels"] = torch.from_numpy(np.load(src + "/label.npy"))
for m in ("train_mask", "val_mask", "test_mask"):
    g.ndata[m] = torch.from_numpy(np.load(src + "/" + m + ".npy"))
dgl.distributed.partition_graph(g, "medium", 1, out, part_method="metis")
"""


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", required=True, help="a gen_graph.py folder (npy layout)")
    p.add_argument("--dgl", required=True, help="the extracted dgl-1.1.3 folder")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=1)
    p.add_argument("--eval", action="store_true", help="also run DGL's evaluation (test acc)")
    p.add_argument("--work", default="/tmp/tessera-train-vs-dgl")
    p.add_argument("--tessera", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "bin", "tessera"))
    p.add_argument("--cpp", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin",
                                                 "graphsage_train_dist"),
                   help="tessera's C++ example, run in each pair too ('' to skip)")
    return p.parse_args()


def run(cmd, env, what):
    return _dgl_runs.run(cmd, env, what, "train_vs_dgl")


def input_folder(args):
    """`args.work`/input: links to the graph's files (`args.graph`), plus the
    names DGL's example reads (`features`, `labels`), so both partitioners
    see them."""
    data = os.path.join(args.work, "input")
    os.makedirs(data, exist_ok=True)
    for name in os.listdir(args.graph):
        link = os.path.join(data, name)
        if not os.path.exists(link):
            os.symlink(os.path.abspath(os.path.join(args.graph, name)), link)
    for ours, theirs in (("feat.npy", "features.npy"), ("label.npy", "labels.npy")):
        link = os.path.join(data, theirs)
        if not os.path.exists(link):
            os.symlink(os.path.abspath(os.path.join(args.graph, ours)), link)
    return data


def tessera_script(dgl_folder, out):
    """Writes DGL's train_dist.py with its imports changed (docs/python.md)
    to `out`."""
    with open(os.path.join(dgl_folder, "train_dist.py")) as f:
        text = f.read()
    text = text.replace("import dgl.nn.pytorch as dglnn", "import tessera.nn as dglnn")
    text = re.sub(r"^import dgl$", "import tessera as dgl", text, flags=re.M)
    with open(out, "w") as f:
        f.write(text)
    return out


def prepare(args):
    os.makedirs(args.work, exist_ok=True)
    data = input_folder(args)
    env = dict(os.environ, PYTHONPATH=os.path.join(args.dgl, "python"), DGLBACKEND="pytorch")
    dgl_parts = os.path.join(args.work, "dgl_parts")
    if not os.path.exists(os.path.join(dgl_parts, "medium.json")):
        run(["/usr/bin/python3", "-c", DGL_PARTITION, args.graph, dgl_parts], env,
            "DGL partition_graph")
    ours = os.path.join(args.work, "tessera_parts")
    if not os.path.exists(os.path.join(ours, "medium.json")):
        run([args.tessera, "partition", "--input", data, "--graph-name", "medium",
             "--num-parts", "1", "--out", ours], dict(os.environ), "tessera partition")
    with open(os.path.join(args.work, "ip.txt"), "w") as f:
        f.write("127.0.0.1\n")
    script = tessera_script(args.dgl, os.path.join(args.work, "train_dist_tessera.py"))
    return dgl_parts, ours, script, env


def train(script, part_config, env, args, what):
    cmd = ["/usr/bin/python3", script, "--standalone", "--graph_name", "medium", "--ip_config",
           os.path.join(args.work, "ip.txt"), "--part_config", part_config, "--num_epochs",
           str(args.epochs), "--eval_every", str(args.epochs if args.eval else args.epochs + 1),
           "--batch_size", "1000", "--fan_out", "10,25", "--num_hidden", "16"]
    out = run(cmd, dict(env, OMP_NUM_THREADS=str(args.threads)), what)
    result = _dgl_runs.epochs_of(EPOCH, out, ("epoch_s", "sample_and_copy_s", "forward_s",
                                              "backward_s", "update_s"), args.epochs, what,
                                 "train_vs_dgl")
    acc = ACC.findall(out)
    if acc:
        result["test_acc"] = float(acc[-1])
    return result


def train_cpp(part_config, args, what):
    """tessera's C++ example on the same settings (its flags are the Python
    example's)."""
    cmd = [args.cpp, "--graph_name", "medium", "--part_config", part_config, "--num_epochs",
           str(args.epochs), "--eval_every", str(args.epochs if args.eval else args.epochs + 1),
           "--batch_size", "1000", "--fan_out", "10,25", "--num_hidden", "16", "--feat",
           "features", "--label", "labels"]
    out = run(cmd, dict(os.environ, OMP_NUM_THREADS=str(args.threads)), what)
    return _dgl_runs.epochs_of(CPP_EPOCH, out, ("epoch_s", "sample_wait_s", "pull_s", "forward_s",
                                                "backward_s", "update_s"), args.epochs, what,
                               "train_vs_dgl")


def main():
    args = parse()
    dgl_parts, ours, script, dgl_env = prepare(args)
    pairs = []
    for i in range(args.pairs):
        d = train(os.path.join(args.dgl, "train_dist.py"), os.path.join(dgl_parts, "medium.json"),
                  dgl_env, args, f"pair {i + 1}: DGL")
        t = train(script, os.path.join(ours, "medium.json"), dict(os.environ), args,
                  f"pair {i + 1}: tessera")
        ratio = {k: t[k] / d[k] for k in ("epoch_s", "forward_s", "backward_s")}
        ratio["forward_backward"] = (t["forward_s"] + t["backward_s"]) / (d["forward_s"] +
                                                                          d["backward_s"])
        pair = {"dgl": d, "tessera": t, "tessera_vs_dgl": ratio}
        if args.cpp:
            c = train_cpp(os.path.join(ours, "medium.json"), args, f"pair {i + 1}: tessera C++")
            pair["tessera_cpp"] = c
            ratio["cpp_epoch_s"] = c["epoch_s"] / d["epoch_s"]
            ratio["cpp_vs_python_epoch"] = c["epoch_s"] / t["epoch_s"]
        pairs.append(pair)
        print(json.dumps(pairs[-1]), file=sys.stderr)
    summary = {k: statistics.median(p["tessera_vs_dgl"][k] for p in pairs)
               for k in pairs[0]["tessera_vs_dgl"]}
    print(json.dumps({"bench": "train_vs_dgl", "threads": args.threads, "epochs": args.epochs,
                      "pairs": pairs, "median_tessera_vs_dgl": summary}, indent=1))


if __name__ == "__main__":
    main()
