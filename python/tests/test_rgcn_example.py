"""The Python R-GCN example (examples/python/rgcn/train_rgcn.py) on a small
generated mag-shaped graph: the relation ids it feeds RelGraphConv match the
input's edges; standalone it beats a features-only MLP and the majority
class by far; launched on 2 machines x 2 trainers it lands close to
standalone with DDP keeping every trainer's parameters identical.

The graph has 10,000 nodes (3,797 papers) with 30% of the papers for
training and 60% (2,278) for testing, so that one run's test accuracy is
precise enough to compare (binomial standard error about 0.8 points)."""
import json
import os
import subprocess

import pytest

from conftest import HERE, PYTHON, SOURCE, launch, make_mag

EXAMPLE = os.path.join(SOURCE, "examples", "python", "rgcn", "train_rgcn.py")
# 30 epochs of 5 steps (1,139 training papers, batch 256; each of 4 trainers
# takes 64 so that the steps match). Adagrad's steps shrink with every
# lookup, and the few steps of this small graph need a larger sparse lr
# than DGL's ogbn-mag command line (0.06).
FLAGS = ["--graph-name", "mag", "--n-epochs", "30", "--sparse-lr", "0.5", "--eval-every", "0",
         "--log-every", "0", "--json"]
SEED = "1"


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    """(input folder, {1: 1-part config, 2: 2-part config})."""
    return make_mag(tmp_path_factory.mktemp("rgcn"), "--num-nodes", "10000", "--feat-dim", "16",
                    "--num-classes", "8", "--train-frac", "0.3", "--val-frac", "0.1",
                    "--test-frac", "0.6")

def results(out):
    return [json.loads(line.split("RESULT ", 1)[1]) for line in out.splitlines()
            if "RESULT " in line]


def standalone(config, *flags):
    # One intra-op thread: on a shared 2-core machine two threads made
    # epochs several times slower under load.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([PYTHON, EXAMPLE, "--part-config", config, *FLAGS, *flags],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    assert res["mode"] == "standalone" and res["world_size"] == 1, res
    return res


def test_block_relations_match_the_input(mag):
    graph, parts = mag
    r = subprocess.run([PYTHON, os.path.join(HERE, "rgcn_checks.py"), parts[1], graph],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "CHECK block_relations ok" in r.stdout, r.stdout


def test_rgcn_beats_baselines_and_launched_matches_standalone(mag, tmp_path):
    graph, parts = mag
    rgcn = standalone(parts[1], "--batch-size", "256", "--seed", SEED)
    mlp = standalone(parts[1], "--batch-size", "256", "--seed", SEED, "--model", "mlp",
                     "--dropout", "0", "--lr", "0.003")
    majority = rgcn["majority_acc"]
    assert len(rgcn["epochs"]) == 30 and rgcn["epochs"][-1]["test_acc"] == rgcn["test_acc"]
    # Measured over seeds 0-4: R-GCN 0.782-0.871, MLP 0.199-0.213, majority
    # class 0.125.
    assert rgcn["test_acc"] >= 0.72, rgcn
    assert rgcn["test_acc"] >= mlp["test_acc"] + 0.4, (rgcn, mlp)
    assert mlp["test_acc"] >= majority + 0.04, (mlp, majority)

    cmd = " ".join([PYTHON, EXAMPLE, "--part-config", parts[2], *FLAGS, "--batch-size", "64",
                    "--seed", SEED])
    code, out, job = launch(tmp_path, parts[2], cmd, trainers=2)
    assert code == 0, out
    res = results(out)
    assert len(res) == 4, out
    assert sorted(r["rank"] for r in res) == [0, 1, 2, 3]
    assert all(r["mode"] == "distributed" and r["world_size"] == 4 for r in res), res
    # DDP keeps the dense parameters identical; accuracy is summed over all.
    assert len({round(r["checksum"], 6) for r in res}) == 1, res
    assert len({r["test_acc"] for r in res}) == 1, res
    print(f"mag (10k) test accuracy: R-GCN standalone {rgcn['test_acc']:.4f}, 2x2 "
          f"{res[0]['test_acc']:.4f}; MLP {mlp['test_acc']:.4f}; majority {majority:.4f}")
    # Measured (seeds 0-4, 2,278 test papers): 2x2 minus standalone was
    # +2.0, -0.8, +0.2, -0.7, -0.9 points (root mean square 1.1; 2x1: +0.2,
    # -2.3, +0.0, -0.2, +0.2). 3 points is about 2.7 of those RMS and above
    # the largest of the ten.
    assert abs(res[0]["test_acc"] - rgcn["test_acc"]) <= 0.03, (rgcn, res[0])
