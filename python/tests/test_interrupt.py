"""Ctrl-C while waiting inside tessera raises KeyboardInterrupt within a
second, and the process (or the whole launched job) ends leaving nothing."""
import re
import subprocess

import pytest

from conftest import HERE, PYTHON, launch, python_cmd


def latency(out):
    m = re.search(r"INTERRUPTED after ([0-9.]+) s", out)
    assert m, out
    return float(m.group(1))


@pytest.mark.parametrize("mode", ["loader", "loader0"])
def test_interrupt_while_waiting_for_a_batch(cora_parts, mode):
    r = subprocess.run([PYTHON, f"{HERE}/interrupt_job.py", mode, cora_parts[1]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert "got a batch" not in r.stdout
    assert latency(r.stdout) < 1.0


def test_interrupt_while_waiting_in_a_barrier(cora_parts, tmp_path):
    code, out, job = launch(tmp_path, cora_parts[2],
                            python_cmd("interrupt_job.py", "barrier", cora_parts[2]),
                            trainers=1)
    assert code == 0, out
    assert latency(out) < 1.0


def test_interrupt_while_metis_partitions(tmp_path):
    # METIS runs in a child process: Ctrl-C stops it at once (it used to run
    # to its end inside the interpreter) and leaves no process behind.
    r = subprocess.run([PYTHON, f"{HERE}/interrupt_job.py", "metis", str(tmp_path / "out")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "METIS: running in process" in r.stdout
    assert "METIS process left: []" in r.stdout
    assert "METIS: objective" not in r.stdout
    assert latency(r.stdout) < 1.0
