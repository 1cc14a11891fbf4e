"""DGL 1.1.3 compatibility of tessera.distributed's graph data view and of
DGL attributes scripts use (compat_checks.py holds the checks): standalone
(a subprocess) and launched (2 machines x 2 trainers on loopback)."""
import subprocess

from conftest import HERE, PYTHON, launch, python_cmd

CHECKS = ["graph_data_view", "local_partition", "partition_policy", "dist_tensor_ops",
          "embedding_part_policy", "sparse_local_state_dict"]


def test_standalone(cora_parts):
    r = subprocess.run([PYTHON, f"{HERE}/compat_checks.py", cora_parts[1]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    for c in CHECKS:
        assert f"CHECK {c} ok" in r.stdout, r.stdout
    assert "ALL CHECKS PASSED" in r.stdout


def test_launched_two_by_two(cora_parts, tmp_path):
    code, out, _ = launch(tmp_path, cora_parts[2], python_cmd("compat_checks.py", cora_parts[2]))
    assert code == 0, out
    for c in CHECKS:
        assert out.count(f"CHECK {c} ok") == 4, (c, out)
    assert out.count("ALL CHECKS PASSED") == 4
