"""tessera.distributed.checkpoint on real jobs: saved by 2 machines x 2
trainers, restored on the same shape (same rows, state and next batches),
on 1 x 1 and on 4 x 1 with other partitionings of Cora (same rows and
optimizer state, matched by original id); and a trainer killed with
SIGKILL under `tessera launch --max-restarts 1`, whose job ends with the
parameters of an uninterrupted run."""
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest
import torch

import tessera
import tessera.distributed
from conftest import (BIN, CORA, PYTHON, SOURCE, assert_job_gone, launch, launch_argv,
                      python_cmd, results)

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

    # Exported in Cora's own node order: the rows the job held, by original id.
    exported = tmp_path / "exported"
    r = subprocess.run([os.path.join(BIN, "tessera"), "export-embeddings", str(ckpt / "step-3"),
                        "--out", str(exported), "--optimizer-state"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    for name, rows in saved["rows"].items():
        assert np.array_equal(np.load(exported / f"node~{name}.npy"), rows.numpy()), name
    r = subprocess.run([os.path.join(BIN, "tessera"), "export-embeddings", str(ckpt / "step-3"),
                        "--out", str(exported), "--tensor", "nope"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode != 0 and "has no tensor nope" in r.stdout, r.stdout

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


EXAMPLE = os.path.join(SOURCE, "examples", "python", "graphsage", "node_classification.py")


def pid_of(job, rank=None, server=False):
    """The pid of trainer `rank` (or the server process) of `job`'s machine 1."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if server:
            flags = dict(zip(argv[2::2], argv[3::2])) if argv[1:2] == [b"server"] else {}
            if flags.get(b"--job-id") == job.encode() and flags.get(b"--server-id") == b"1":
                return int(pid)
        elif (env.get(b"TESSERA_JOB_ID") == job.encode() and env.get(b"RANK") == str(rank).encode()
              and any(a.endswith(b"node_classification.py") for a in argv)):
            return int(pid)
    return None


def digests(out):
    return {r["params_sha256"] for r in results(out)}


@pytest.mark.parametrize("victim", ["trainer", "server"])
def test_a_killed_process_resumes_to_the_parameters_of_an_uninterrupted_run(cora_parts, tmp_path,
                                                                            victim):
    """Deterministic configuration: a fixed seed, batches that depend only on
    (seed, epoch, batch), dropout's generator restored with each trainer's
    state, and two trainers. (With more, the first step after a restart sums
    the gradients in another order: DDP lays out its gradient buckets anew
    on its first iteration, and Gloo's ring sums an element in an order set
    by its place in the bucket. docs/checkpoint.md gives the difference.)"""
    flags = ["--graph_name", "cora", "--part_config", cora_parts[2], "--num_epochs", "30",
             "--batch_size", "10", "--fan_out", "5,5", "--eval_every", "0", "--log_every", "0",
             "--seed", "1", "--checkpoint_every", "4", "--json"]
    for w in ("plain", "killed"):
        (tmp_path / w).mkdir()
    code, out, _ = launch(tmp_path / "plain", cora_parts[2],
                          python_cmd(EXAMPLE, *flags, "--checkpoint_dir", tmp_path / "ck_plain"),
                          trainers=1)
    assert code == 0, out
    expected = digests(out)
    assert len(expected) == 1, out  # DDP: every trainer holds the same parameters.

    argv = launch_argv(tmp_path / "killed", cora_parts[2], python_cmd(EXAMPLE, *flags),
                       trainers=1, extra=["--max-restarts", "1", "--checkpoint-dir",
                              str(tmp_path / "ck_killed")])
    lines, killed = [], None
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as p:
        try:
            for line in p.stdout:
                lines.append(line)
                m = re.search(r"launch: job (j[0-9a-f]+)", line)
                job = m.group(1) if m else locals().get("job")
                if killed is None and re.search(r"checkpoint: step 8 saved", line):
                    killed = pid_of(job, 1, server=victim == "server")
                    assert killed is not None, "".join(lines)
                    os.kill(killed, signal.SIGKILL)
            p.wait(timeout=600)
        finally:
            if p.poll() is None:
                p.kill()
    out = "".join(lines)
    assert p.returncode == 0, out
    assert killed is not None, out
    cause = "trainer 1" if victim == "trainer" else "server 1"
    assert re.search(rf"restart 1 of 1 .* after: {cause}.*killed by signal 9", out), out
    resumed = re.findall(r"resumed from step (\d+)", out)
    assert len(resumed) == 2 and int(resumed[0]) >= 8, out
    assert digests(out) == expected, out
    assert_job_gone(out)


def test_a_save_killed_midway_leaves_the_previous_checkpoint(cora_parts, tmp_path):
    """SIGKILL while a checkpoint's files are being written (44 MiB of rows):
    the previous checkpoint is the latest and restores; the next save
    removes the unfinished folder."""
    ckpt = tmp_path / "ckpt"
    argv = [PYTHON, JOB, "loop", cora_parts[1], str(ckpt), "-"]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) as p:
        killed = None
        deadline = time.time() + 120
        while killed is None and time.time() < deadline:
            for d in sorted(ckpt.glob("step-*")) if ckpt.exists() else []:
                step = int(d.name.split("-")[1])
                if (step >= 2 and not (d / "manifest.json").exists()
                        and any((d / "tensors").glob("*.npy"))):
                    p.send_signal(signal.SIGKILL)
                    killed = step
                    break
            time.sleep(0.001)
        p.wait(timeout=60)
    assert killed is not None, "no save was caught in the middle"
    assert not (ckpt / f"step-{killed}" / "manifest.json").exists()
    latest = tessera.distributed.checkpoint.latest(ckpt)
    assert latest == str(ckpt / f"step-{killed - 1}"), (latest, killed)
    r = subprocess.run([PYTHON, JOB, "check", cora_parts[1], str(ckpt), "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert f"CHECKPOINT check ok: step {killed - 1}" in r.stdout, r.stdout


def test_an_extra_the_manifest_cannot_show_is_saved_and_restored(cora_parts, tmp_path):
    """An extra nested 100 deep, of 2 MiB or with a NaN saves (its manifest
    copy is {}) and restores whole from the pickle; an altered dense.pt is
    refused by its checksum."""
    r = subprocess.run([PYTHON, JOB, "extra", cora_parts[1], str(tmp_path / "ckpt"), "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "CHECKPOINT extra ok" in r.stdout, r.stdout


def test_schedule_by_steps_and_by_seconds_with_few_clock_comparisons(monkeypatch):
    from tessera.distributed import checkpoint
    every = checkpoint.Schedule("3")
    assert [s for s in range(1, 10) if every.due(s)] == [3, 6, 9]
    assert not any(checkpoint.Schedule("").due(s) for s in range(1, 5))
    for bad in ("soon", "-5", "3x"):
        with pytest.raises(ValueError):
            checkpoint.Schedule(bad)
    # A fake clock: 1/128 s per step (exact in binary), saves every 2 s (256 steps).
    now = [1000.0]
    monkeypatch.setattr(checkpoint.time, "time", lambda: now[0])
    monkeypatch.setattr(checkpoint.context, "info", lambda: {"world_size": 1})
    timed = checkpoint.Schedule("2s")
    asks = []
    elapsed = timed._elapsed
    monkeypatch.setattr(timed, "_elapsed", lambda: asks.append(1) or elapsed())
    saves = []
    for step in range(1, 1001):
        now[0] += 1 / 128
        if timed.due(step):
            saves.append(step)
    assert saves == [256, 512, 768], saves
    assert len(asks) <= 60, len(asks)  # Not one clock comparison per step.
    monkeypatch.setattr(checkpoint.context, "info", lambda: {"world_size": 2})
    with pytest.raises(tessera.TesseraError, match="torch.distributed"):
        checkpoint.Schedule("1s").due(1)


def test_a_spare_machine_takes_the_place_of_one_that_does_not_answer(cora_parts, tmp_path):
    """ip_config lists 3 machines for 2 partitions; the second (TEST-NET-1,
    192.0.2.1) does not answer ssh, so the job runs on lines 0 and 2."""
    from conftest import free_port_pairs
    argv = launch_argv(tmp_path, cora_parts[2],
                       python_cmd(EXAMPLE, "--graph_name", "cora", "--part_config",
                                  cora_parts[2], "--num_epochs", "1", "--eval_every", "0",
                                  "--log_every", "0"),
                       trainers=1, extra=["--ssh-option", "BatchMode=yes"])
    ports = free_port_pairs(3)
    with open(tmp_path / "ip_config.txt", "w") as f:
        f.write(f"127.0.0.1 {ports[0]}\n192.0.2.1 {ports[1]}\n127.0.0.1 {ports[2]}\n")
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout
    assert ("machine 1 (192.0.2.1) does not answer ssh; spare 2 (127.0.0.1) takes partition 1"
            in r.stdout), r.stdout
    assert "running on lines 0,2" in r.stdout, r.stdout
    assert f"serving partition 1 on 127.0.0.1:{ports[2]}" in r.stdout, r.stdout
    assert_job_gone(r.stdout)


def test_a_full_disk_fails_the_save_and_keeps_the_previous_checkpoint(cora_parts, tmp_path):
    """A real ENOSPC: the checkpoint folder is an 8 MiB tmpfs, mounted in a
    mount namespace of the job's own (so it goes with the job)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a small file system")
    small = tmp_path / "small"
    small.mkdir()
    script = (f"mount -t tmpfs -o size=8m tmpfs {small} && "
              f"exec {PYTHON} {JOB} full {cora_parts[1]} {small}/ckpt -")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    if "mount:" in r.stdout and "CHECKPOINT" not in r.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {r.stdout[-300:]}")
    assert r.returncode == 0, r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "CHECKPOINT full ok" in ln)
    assert "step-2/tensors/node~big" in line and "No space left on device" in line, line


def test_a_tensor_claiming_more_bytes_than_its_record_is_refused():
    """A dense.pt whose tensor claims more bytes than its storage record
    holds (torch 1.13's loader would copy past the record: heap contents, or
    SIGSEGV) is refused by the untrusted restore's loader."""
    import io
    import zipfile
    from tessera.distributed import checkpoint
    buf = io.BytesIO()
    torch.save({"x": torch.arange(4, dtype=torch.float32)}, buf)
    good = buf.getvalue()
    assert torch.equal(checkpoint._load_state(good)["x"], torch.arange(4, dtype=torch.float32))
    source, out = zipfile.ZipFile(io.BytesIO(good)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as w:
        for name in source.namelist():
            data = source.read(name)
            w.writestr(name, data[:8] if name.endswith("data/0") else data)
    with pytest.raises(tessera.TesseraError, match="claims a storage of 16 bytes in a record of 8"):
        checkpoint._load("ckpt", "dense.pt", out.getvalue(), trusted=False)
