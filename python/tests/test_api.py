"""The Python API against real partitions: standalone (a subprocess) and
launched by `tessera launch` (2 machines x 2 trainers on loopback)."""
import subprocess

from conftest import HERE, PYTHON, launch_checks, run_checks

CHECKS = ["pull_equals_files", "python_init_func", "failing_init_func", "push_visible_everywhere",
          "sparse_adam_formula", "sparse_adagrad_formula", "sampling", "node_loader",
          "explicit_prefetch", "learned_prefetch", "edge_loader", "negative_samplers",
          "subgraphs", "to_block", "pickled_rows",
          "int_mask_split", "python_collate", "stale_handle", "dgl_row_shapes",
          "bad_input"]


def test_standalone(cora_parts):
    run_checks("job_checks.py", [cora_parts[1]], CHECKS)


def test_launched_two_by_two(cora_parts, tmp_path):
    out = launch_checks(tmp_path, cora_parts[2], "job_checks.py", [cora_parts[2]],
                        CHECKS + ["gil_released"])
    # init_func ran on one trainer (its own error); the others were told.
    assert out.count("INIT FAILURE ValueError") == 1, out
    assert out.count("INIT FAILURE TesseraError") == 3, out


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
    # The seeds' chapter spells them dgl.distributed.SparseAdagrad (DGL 0.x).
    assert dist.SparseAdagrad is dist.optim.SparseAdagrad
    assert dist.SparseAdam is dist.optim.SparseAdam


def run_fresh(code):
    """Runs `code` in a fresh interpreter, which must print 'ok' last."""
    r = subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout


def test_submodules_need_no_import_of_their_own():
    """As after DGL's `import dgl`: `dgl.nn`, `dgl.ops`, ... resolve after
    `import tessera as dgl` alone (a fresh interpreter); a submodule tessera
    lacks is an AttributeError naming DGL's module."""
    code = ("import tessera as dgl\n"
            "assert dgl.nn.SAGEConv and dgl.nn.functional.edge_softmax\n"
            "assert dgl.nn.pytorch.GATConv is dgl.nn.GATConv\n"
            "assert dgl.ops.aggregate and dgl.function.copy_u and dgl.dataloading.NeighborSampler\n"
            "assert dgl.distributed.DistGraph and dgl.distributed.optim.SparseAdam\n"
            "assert dgl.sampling.sample_neighbors\n"
            "try:\n"
            "    dgl.geometry\n"
            "except AttributeError as e:\n"
            "    assert \"DGL's dgl.geometry is not implemented in tessera\" in str(e), e\n"
            "else:\n"
            "    raise AssertionError('dgl.geometry')\n"
            "print('ok')\n")
    run_fresh(code)


def test_unresolvable_names_are_attribute_errors():
    """A module __getattr__ raises AttributeError alone for a name it cannot
    resolve, so hasattr and getattr(..., default) answer, even for a dotted
    or non-identifier name (find_spec would raise ModuleNotFoundError)."""
    code = ("import tessera, tessera.nn, tessera.distributed\n"
            "for m in (tessera, tessera.nn, tessera.distributed):\n"
            "    for name in ('nope.x', 'pytorch.x', 'nn.x', 'a b', '', '.', 'x.', '1x', 'nope'):\n"
            "        assert not hasattr(m, name), (m, name)\n"
            "        assert getattr(m, name, 7) == 7\n"
            "        try:\n"
            "            getattr(m, name)\n"
            "        except AttributeError:\n"
            "            pass\n"
            "assert hasattr(tessera.nn, 'pytorch') and hasattr(tessera, 'sampling')\n"
            "print('ok')\n")
    run_fresh(code)


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


def test_dead_server_is_a_clear_python_error(cora_parts, tmp_path):
    """A server killed under a trainer: the next pull raises TesseraError
    naming the dead server (never a hang or a crash)."""
    import os
    import secrets
    import signal
    import socket
    import time

    from conftest import BIN, free_port_pair, free_port_pairs, job_segments
    ports = free_port_pairs(2)
    ip = tmp_path / "ip_config.txt"
    ip.write_text("".join(f"127.0.0.1 {p}\n" for p in ports))
    job = "jt" + secrets.token_hex(6)
    env = dict(os.environ, TESSERA_JOB_ID=job, TESSERA_JOB_TOKEN=secrets.token_hex(16),
               TESSERA_JOB_ENCRYPTION="off")
    servers = [subprocess.Popen([f"{BIN}/tessera", "server", "--ip-config", str(ip),
                                 "--part-config", cora_parts[2], "--server-id", str(i),
                                 "--num-clients", "1", "--job-id", job],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
               for i in range(2)]
    trainer = None
    try:
        for p in ports:  # Both servers listen.
            end = time.time() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", p), timeout=1).close()
                    break
                except OSError:
                    assert time.time() < end, f"server on port {p} never listened"
                    time.sleep(0.1)
        tenv = dict(env, TESSERA_IP_CONFIG=str(ip), TESSERA_PART_CONFIG=cora_parts[2],
                    TESSERA_NUM_SERVERS="1", TESSERA_MACHINE_ID="0", RANK="0", WORLD_SIZE="1",
                    LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port_pair()))
        trainer = subprocess.Popen([PYTHON, f"{HERE}/dead_server_job.py", cora_parts[2]],
                                   env=tenv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        first = trainer.stdout.readline()
        while first and "READY" not in first:
            first = trainer.stdout.readline()
        assert "READY" in first, first
        servers[1].send_signal(signal.SIGKILL)
        out, _ = trainer.communicate(timeout=120)
        assert trainer.returncode == 0, out
        assert "ERROR TesseraError" in out, out
        assert "server 1" in out, out
        print([line for line in out.splitlines() if "ERROR" in line][0])
    finally:
        for p in servers + ([trainer] if trainer else []):
            if p.poll() is None:
                p.kill()
            p.wait()
        # The killed server could not remove its shared memory; in a real job
        # its supervisor does (tested by the launcher's tests).
        for name in job_segments(job):
            os.unlink(f"/dev/shm/{name}")


def test_negative_samplers_as_dgl():
    """dgl.dataloading.negative_sampler on in-memory graphs (DGL 1.1.3):
    Uniform is PerSourceUniform, k pairs per edge keeping its source with a
    torch.randint destination; GlobalUniform gives at most k * len(eids)
    pairs that are not edges (nor self-loops unless asked), unique and sorted
    by (dst, src) without replacement."""
    import torch

    import tessera
    from tessera.distributed import negative_sampler as ns

    assert ns.Uniform is ns.PerSourceUniform
    g = tessera.graph((torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 0])))
    torch.manual_seed(7)
    src, dst = ns.Uniform(2)(g, torch.tensor([0, 2]))
    torch.manual_seed(7)
    assert src.tolist() == [0, 0, 2, 2]
    assert torch.equal(dst, torch.randint(0, 4, (4,), dtype=torch.int64))  # DGL's draw

    h = tessera.heterograph({("a", "r", "b"): (torch.tensor([0, 1]), torch.tensor([1, 2])),
                             ("b", "s", "a"): (torch.tensor([0]), torch.tensor([0]))})
    out = ns.Uniform(3)(h, {"r": torch.tensor([1])})
    assert list(out) == [("a", "r", "b")]
    s, d = out[("a", "r", "b")]
    assert s.tolist() == [1, 1, 1] and bool(((d >= 0) & (d < 3)).all())
    try:
        ns.Uniform(1)(h, torch.tensor([0]))
        raise AssertionError("no error")
    except tessera.TesseraError as e:
        assert "{etype: ids}" in str(e), e

    # 5 nodes, every pair but the self-loops and (4, 2), (4, 3) is an edge.
    n = 5
    u, v = torch.arange(n).repeat_interleave(n), torch.arange(n).repeat(n)
    keep = (u != v) & ~((u == 4) & ((v == 2) | (v == 3)))
    dense = tessera.graph((u[keep], v[keep]), num_nodes=n)
    for _ in range(5):
        s, d = ns.GlobalUniform(4)(dense, torch.tensor([0, 1]))
        assert list(zip(s.tolist(), d.tolist())) == [(4, 2), (4, 3)]
        s, d = ns.GlobalUniform(1, exclude_self_loops=False)(dense, torch.tensor([0, 1, 2]))
        pairs = list(zip(s.tolist(), d.tolist()))
        assert 0 < len(pairs) <= 3 and len(set(pairs)) == len(pairs)
        assert set(pairs) <= {(4, 2), (4, 3)} | {(i, i) for i in range(n)}, pairs
        assert pairs == sorted(pairs, key=lambda p: (p[1], p[0]))
    torch.manual_seed(3)
    s, d = ns.GlobalUniform(10, replace=True)(dense, torch.tensor([0, 1, 2]))
    assert 2 < s.numel() <= 30 and len(set(zip(s.tolist(), d.tolist()))) == 2  # repeats
    for _ in range(5):  # 8 pairs qualify; DGL's draw may find fewer than the 6 asked.
        s, d = ns.GlobalUniform(2)(g, torch.tensor([0, 1, 2]))
        assert 0 < s.numel() <= 6 and not bool((s == d).any())
        assert not set(zip(s.tolist(), d.tolist())) & {(0, 1), (1, 2), (2, 3), (3, 0)}
    # Two node types: a pair (i, i) is no self-loop.
    out = ns.GlobalUniform(2, exclude_self_loops=True)(h, {("a", "r", "b"): torch.tensor([0])})
    s, d = out[("a", "r", "b")]
    assert s.numel() == 2 and not set(zip(s.tolist(), d.tolist())) & {(0, 1), (1, 2)}
