"""The Python API against real partitions: standalone (a subprocess) and
launched by `tessera launch` (2 machines x 2 trainers on loopback)."""
import subprocess

from conftest import PYTHON, HERE, launch, python_cmd

CHECKS = ["pull_equals_files", "python_init_func", "push_visible_everywhere",
          "sparse_adam_formula", "sampling", "node_loader", "edge_loader", "subgraphs",
          "int_mask_split", "python_collate", "bad_input"]


def test_standalone(cora_parts):
    r = subprocess.run([PYTHON, f"{HERE}/job_checks.py", cora_parts[1]], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    for c in CHECKS:
        assert f"CHECK {c} ok" in r.stdout, r.stdout
    assert "ALL CHECKS PASSED" in r.stdout


def test_launched_two_by_two(cora_parts, tmp_path):
    code, out, job = launch(tmp_path, cora_parts[2], python_cmd("job_checks.py", cora_parts[2]))
    assert code == 0, out
    for c in CHECKS + ["gil_released"]:
        assert out.count(f"CHECK {c} ok") == 4, (c, out)
    assert out.count("ALL CHECKS PASSED") == 4


def test_import_and_error_type():
    import tessera
    import tessera.distributed as dist
    import tessera.nn  # noqa: F401
    assert issubclass(tessera.TesseraError, RuntimeError)
    for name in ["initialize", "exit_client", "DistGraph", "DistTensor", "DistEmbedding",
                 "node_split", "edge_split", "sample_neighbors", "in_subgraph", "edge_subgraph",
                 "DistNodeDataLoader", "DistEdgeDataLoader", "DistDataLoader", "NeighborSampler"]:
        assert hasattr(dist, name), name
    assert hasattr(dist.optim, "SparseAdam") and hasattr(dist.optim, "SparseAdagrad")


def test_installed_package_is_this_build():
    """After scripts/build.sh, Debian's python3 imports tessera with no
    PYTHONPATH, and it is the extension this build made."""
    import hashlib
    import os

    import tessera
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(["/usr/bin/python3", "-c",
                        "import tessera, tessera.distributed, tessera.nn; "
                        "print(tessera._C.__file__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/",
                       env=env, timeout=120)
    assert r.returncode == 0, f"tessera is not installed (run scripts/build.sh): {r.stdout}"
    installed = r.stdout.strip().splitlines()[-1]

    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    assert digest(installed) == digest(tessera._C.__file__), (
        f"{installed} differs from this build's {tessera._C.__file__}: run scripts/build.sh")
