"""tessera.distributed.checkpoint on real jobs: saved by 2 machines x 2
trainers, restored on the same shape (same rows, state and next batches),
on 1 x 1 and on 4 x 1 with other partitionings of Cora (same rows and
optimizer state, matched by original id)."""
import os
import subprocess

import torch

import tessera
from conftest import CORA, PYTHON, launch, python_cmd

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoint_job.py")


def load(prefix, rank):
    return torch.load(f"{prefix}.{rank}.pt")


def assert_same_state(restored, saved, where):
    for name, rows in saved["rows"].items():
        assert torch.equal(restored["rows"][name], rows), f"{name} differs on {where}"
    for k, v in saved["model"].items():
        assert torch.equal(restored["model"][k], v), f"model {k} differs on {where}"
    a, b = restored["adam"]["state"], saved["adam"]["state"]
    assert a.keys() == b.keys()
    for i in a:
        for k in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(a[i][k], b[i][k]), f"Adam {k} of {i} differs on {where}"


def test_checkpoint_restores_on_the_same_and_on_other_shapes(cora_parts, tmp_path):
    tessera.partition_graph(CORA, "cora", 4, str(tmp_path / "p4"), part_method="random",
                            return_mapping=True)
    four = str(tmp_path / "p4" / "cora.json")
    ckpt = tmp_path / "ckpt"
    for w in ("w1", "w2", "w3"):
        (tmp_path / w).mkdir()

    code, out, _ = launch(tmp_path / "w1", cora_parts[2],
                          python_cmd(JOB, "save", cora_parts[2], ckpt, tmp_path / "saved"))
    assert code == 0, out
    assert out.count("CHECKPOINT save ok") == 4, out
    assert "checkpoint: step 3 saved to" in out, out
    saved = load(tmp_path / "saved", 0)
    assert saved["rows"]["ck_emb.adam_step"].sum() > 0  # Rows were trained.

    # The same shape: the same state, and every trainer's next batches are
    # those the saving job trained on after the checkpoint.
    code, out, _ = launch(tmp_path / "w2", cora_parts[2],
                          python_cmd(JOB, "restore", cora_parts[2], ckpt, tmp_path / "same"))
    assert code == 0, out
    for rank in range(4):
        assert_same_state(load(tmp_path / "same", rank), saved, f"2x2 rank {rank}")
        after = torch.load(f"{tmp_path / 'same'}.{rank}.after.pt")
        expected = torch.load(f"{tmp_path / 'saved'}.{rank}.after.pt")
        assert all(torch.equal(a, b) for a, b in zip(after, expected)), f"rank {rank} batches"

    # 1 x 1 on a one-part partitioning, standalone.
    r = subprocess.run([PYTHON, JOB, "restore", cora_parts[1], str(ckpt), str(tmp_path / "one")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "mapped by original id" in r.stdout, r.stdout
    assert_same_state(load(tmp_path / "one", 0), saved, "1x1")

    # 4 x 1 on a random 4-part partitioning.
    code, out, _ = launch(tmp_path / "w3", four,
                          python_cmd(JOB, "restore", four, ckpt, tmp_path / "four"),
                          trainers=1, machines=4)
    assert code == 0, out
    for rank in range(4):
        assert_same_state(load(tmp_path / "four", rank), saved, f"4x1 rank {rank}")
