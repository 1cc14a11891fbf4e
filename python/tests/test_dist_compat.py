"""DGL 1.1.3 compatibility of tessera.distributed's graph data view and of
DGL attributes scripts use (compat_checks.py holds the checks): standalone
(a subprocess) and launched (2 machines x 2 trainers on loopback)."""
from conftest import launch_checks, run_checks

CHECKS = ["graph_data_view", "local_partition", "partition_policy", "dist_tensor_ops",
          "local_partition_view", "embedding_part_policy", "sparse_local_state_dict",
          "kvclient_barrier"]


def test_standalone(cora_parts):
    run_checks("compat_checks.py", [cora_parts[1]], CHECKS)


def test_launched_two_by_two(cora_parts, tmp_path):
    launch_checks(tmp_path, cora_parts[2], "compat_checks.py", [cora_parts[2]], CHECKS)
