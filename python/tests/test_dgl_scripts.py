"""DGL-style scripts under examples/python that use DGL's graph objects and
message passing, standalone and under `tessera launch` as 2 machines x 2
trainers, with accuracy thresholds: the seeds' low-level loop
(sample_neighbors + to_block in a DistDataLoader collate, a SAGE layer
written with update_all) on Cora; R-GCN as DGL's distributed example writes
it (HeteroGraphConv + GraphConv(weight=False) + WeightBasis + local_var,
DistEmbeddings for featureless types) on a generated mag-shaped graph."""
import json
import os
import subprocess

import pytest

from conftest import PYTHON, SOURCE, launch, make_mag

LOW_LEVEL = os.path.join(SOURCE, "examples", "python", "graphsage", "low_level_sampling.py")
RGCN = os.path.join(SOURCE, "examples", "python", "rgcn", "rgcn_hetero.py")
RGCN_FLAGS = ["--graph-name", "mag", "--n-epochs", "30", "--n-hidden", "64", "--use-self-loop",
              "--dropout", "0.5", "--sparse-lr", "0.5", "--n-bases", "2", "--seed", "1"]


def results(out):
    # Launched output lines carry a "[machine/trainer/rank] " prefix.
    return [json.loads(line.split("RESULT ", 1)[1]) for line in out.splitlines()
            if "RESULT {" in line]


def test_low_level_sampling_standalone(cora_parts):
    r = subprocess.run([PYTHON, LOW_LEVEL, "--graph_name", "cora", "--part_config",
                        cora_parts[1]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    # GraphSAGE on Cora: ~0.78 here; DGL's published GraphSAGE is ~0.80.
    assert res["test_acc"] >= 0.72, r.stdout


def test_low_level_sampling_launched_two_by_two(cora_parts, tmp_path):
    code, out, _ = launch(tmp_path, cora_parts[2],
                          f"{PYTHON} {LOW_LEVEL} --graph_name cora --part_config "
                          f"{cora_parts[2]} --num_epochs 40")
    assert code == 0, out
    res = results(out)
    assert len(res) == 4, out
    assert len({r["test_acc"] for r in res}) == 1  # Summed over every trainer.
    assert res[0]["test_acc"] >= 0.70, out


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    return make_mag(tmp_path_factory.mktemp("dglrgcn"), "--num-nodes", "10000", "--feat-dim",
                    "16", "--num-classes", "8", "--train-frac", "0.3", "--val-frac", "0.1",
                    "--test-frac", "0.6")


def test_dgl_style_rgcn_standalone_and_launched(mag, tmp_path):
    _, parts = mag
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([PYTHON, RGCN, "--conf-path", parts[1], *RGCN_FLAGS],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    # 0.81 here (seed 1); the RelGraphConv example gets 0.78-0.87 on this graph,
    # a features-only MLP 0.20-0.21 (test_rgcn_example.py).
    assert res["test_acc"] >= 0.72, r.stdout
    assert res["embedded_types"] == ["author", "field_of_study", "institution"], res
    code, out, _ = launch(tmp_path, parts[2], " ".join(
        [PYTHON, RGCN, "--conf-path", parts[2], *RGCN_FLAGS, "--batch-size", "64"]))
    assert code == 0, out
    res2 = results(out)
    assert len(res2) == 4 and len({x["test_acc"] for x in res2}) == 1, out
    assert res2[0]["test_acc"] >= 0.70, out
