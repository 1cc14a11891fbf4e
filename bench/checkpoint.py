"""Checkpoint speed (issue 27 section 5), one run, printed as JSON:

1. Saving 1 GiB of embeddings plus optimizer state (a DistEmbedding of
   --nodes x --dim float32 and its SparseAdagrad sums) from a job of 2
   loopback machines x 1 trainer, against writing the same bytes
   sequentially with dd (conv=fsync) on the same disk; restoring it.
2. The GraphSAGE example's epoch time with --checkpoint_every 5min against
   none (alternated), and what one save of that job costs.

    python3 bench/checkpoint.py [--nodes 1048576 --dim 128 --rounds 3]

Needs the build tree (TESSERA_BIN, default build/bin; PYTHONPATH with
build/python) and writes into --workdir (default: a new folder in /tmp).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
BIN = os.environ.get("TESSERA_BIN", os.path.join(SOURCE, "build", "bin"))
TESSERA = os.path.join(BIN, "tessera")
EXAMPLE = os.path.join(SOURCE, "examples", "python", "graphsage", "node_classification.py")
PYTHON = sys.executable

JOB = r'''
import json, os, sys, time
import torch
import tessera.distributed as dist
from tessera.distributed import checkpoint
part_config, folder, dim, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
dist.initialize()
g = dist.DistGraph("bench", part_config=part_config)
emb = dist.DistEmbedding(g.num_nodes(), dim, "bench_emb", init_func=dist.init.uniform(-1, 1, 1))
opt = dist.optim.SparseAdagrad([emb], lr=0.1)
ids = torch.arange(g.rank(), g.num_nodes(), 997)
emb(ids).sum().backward()
opt.step()
for r in range(rounds):
    path = os.path.join(folder, f"round-{r}")
    g.barrier()
    tic = time.time()
    checkpoint.save(path, sparse_optimizers=[opt], extra={"step": r})
    save_s = time.time() - tic
    g.barrier()
    tic = time.time()
    checkpoint.restore(path)
    restore_s = time.time() - tic
    if g.rank() == 0:
        print("BENCH " + json.dumps({"save_s": save_s, "restore_s": restore_s}), flush=True)
    g.barrier()
    if g.rank() == 0:
        import shutil
        shutil.rmtree(path)
dist.exit_client()
'''


def run(argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-5000:])
        raise SystemExit(f"failed: {' '.join(map(str, argv))}")
    return r.stdout


def free_ports(n):
    sys.path.insert(0, os.path.join(SOURCE, "python", "tests"))
    from conftest import free_port_pairs
    return free_port_pairs(n)


def launch(work, config, command, trainers=1):
    ip = os.path.join(work, "ip_config.txt")
    with open(ip, "w") as f:
        f.write("".join(f"127.0.0.1 {p}\n" for p in free_ports(2)))
    return run([TESSERA, "launch", "--workspace", work, "--num-trainers", str(trainers),
                "--part-config", config, "--ip-config", ip, command], timeout=3600)


def dd_seconds(path, nbytes):
    block = 16 << 20
    tic = time.time()
    run(["dd", "if=/dev/zero", f"of={path}", f"bs={block}", f"count={max(1, nbytes // block)}",
         "conv=fsync", "status=none"])
    seconds = time.time() - tic
    os.remove(path)
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=1 << 20)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--workdir", default="")
    p.add_argument("--stages", default="save,train", help="save, train or both")
    args = p.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="tessera-ckpt-bench-")
    os.makedirs(work, exist_ok=True)
    graph, parts = os.path.join(work, "graph"), os.path.join(work, "parts")
    if not os.path.exists(os.path.join(parts, "bench.json")):
        run([TESSERA, "--log-level", "warn", "generate", "--out", graph, "--num-nodes",
             str(args.nodes), "--edges", str(args.nodes * 4), "--feat-dim", "16"])
        run([TESSERA, "--log-level", "warn", "partition", "--input", graph, "--graph-name",
             "bench", "--num-parts", "2", "--part-method", "random", "--out", parts,
             "--return-mapping"])
    config = os.path.join(parts, "bench.json")
    nbytes = args.nodes * args.dim * 4 * 2  # The rows and their Adagrad sums.

    stages = args.stages.split(",")
    result = {"checkpoint_bytes": nbytes}
    # 1. Save and restore against dd, alternated.
    job = os.path.join(work, "ckpt_job.py")
    with open(job, "w") as f:
        f.write(JOB)
    ckpt = os.path.join(work, "ckpt")
    saves, restores, dds = [], [], []
    for r in range(args.rounds if "save" in stages else 0):
        dds.append(dd_seconds(os.path.join(work, "dd.bin"), nbytes))
        out = launch(os.path.join(work), config,
                     f"{PYTHON} {job} {config} {ckpt} {args.dim} 1")
        (line,) = [ln for ln in out.splitlines() if "BENCH " in ln]
        res = json.loads(line.split("BENCH ", 1)[1])
        saves.append(res["save_s"])
        restores.append(res["restore_s"])
    shutil.rmtree(ckpt, ignore_errors=True)
    gib = nbytes / (1 << 30)

    # 2. Training with --checkpoint_every 5min against none, alternated.
    flags = ["--graph_name", "bench", "--part_config", config, "--num_epochs",
             str(args.epochs), "--eval_every", "0", "--log_every", "0", "--batch_size", "1000",
             "--fan_out", "10,25", "--feat_name", "feat", "--label_name", "label"]
    epoch = {"none": [], "5min": []}
    for r in range(args.rounds if "train" in stages else 0):
        for mode in (("none", "5min") if r % 2 == 0 else ("5min", "none")):
            extra = [] if mode == "none" else [
                "--checkpoint_dir", os.path.join(work, "train_ckpt"), "--checkpoint_every", "5min"]
            out = launch(work, config, " ".join([PYTHON, EXAMPLE] + flags + extra), trainers=1)
            times = [float(x) for x in re.findall(r"Part 0, Epoch \d+ Time\(s\): ([\d.]+)", out)]
            epoch[mode].append(statistics.mean(times[1:] or times))
            shutil.rmtree(os.path.join(work, "train_ckpt"), ignore_errors=True)
    if saves:
        result.update(save_s=saves, restore_s=restores, dd_fsync_s=dds,
                      save_gib_per_s_median=gib / statistics.median(saves),
                      dd_gib_per_s_median=gib / statistics.median(dds),
                      save_over_dd_median=statistics.median(s / d for s, d in zip(saves, dds)))
    if epoch["none"]:
        result.update(epoch_s_none=epoch["none"], epoch_s_every_5min=epoch["5min"],
                      epoch_every_5min_over_none_median=statistics.median(
                          b / a for a, b in zip(epoch["none"], epoch["5min"])))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
