"""Fixtures: Cora partitions, free ports, and `tessera launch` of Python trainers."""
import json
import os
import random
import re
import socket
import subprocess
import sys

import pytest

SOURCE = os.environ.get("TESSERA_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
BIN = os.environ.get("TESSERA_BIN", os.path.join(SOURCE, "build", "bin"))
CORA = os.path.join(SOURCE, "testdata", "cora")
PYTHON = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def cora_parts(tmp_path_factory):
    """{1: config of a 1-part Cora, 2: config of a 2-part (METIS) Cora}."""
    import tessera
    root = tmp_path_factory.mktemp("cora")
    out = {}
    for k in (1, 2):
        tessera.partition_graph(CORA, "cora", k, str(root / f"p{k}"), return_mapping=True)
        out[k] = str(root / f"p{k}" / "cora.json")
    return out


def free_port_pair():
    """A port p with p and p+1 free on 127.0.0.1 (server and rendezvous),
    drawn below the kernel's ephemeral range: a port bound and closed inside
    that range can be taken by any outgoing connection before the job binds
    it (the soak test running alongside opens thousands), which made the
    trainers' MASTER_PORT (server port + 1) "Address already in use". The
    C++ tests' ProbeFreePortRange does the same."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(1000):
        p = rng.randrange(10000, max(10002, low - 2))
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", p))
                b.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port pair below the ephemeral range")


def free_port_pairs(n):
    """n port pairs as free_port_pair's, no two sharing a port."""
    pairs, used = [], set()
    while len(pairs) < n:
        p = free_port_pair()
        if not {p, p + 1} & used:
            pairs.append(p)
            used |= {p, p + 1}
    return pairs


def job_segments(job):
    return [n for n in os.listdir("/dev/shm") if job in n]


def launch_argv(workspace, part_config, command, trainers=2, machines=2, extra=()):
    """The `tessera launch` command line over `machines` loopback machines."""
    ports = free_port_pairs(machines)
    ip = os.path.join(workspace, "ip_config.txt")
    with open(ip, "w") as f:
        f.write("".join(f"127.0.0.1 {p}\n" for p in ports))
    return [os.path.join(BIN, "tessera"), "launch", "--workspace", str(workspace),
            "--num-trainers", str(trainers), "--part-config", part_config, "--ip-config", ip,
            "--startup-timeout", "120", *extra, command]


def assert_job_gone(output):
    """The job id of a launcher's output; asserts nothing of the job is left."""
    m = re.search(r"launch: job (j[0-9a-f]+)", output)
    job = m.group(1) if m else None
    if job:
        assert job_segments(job) == [], f"shared memory of {job} left behind"
        left = subprocess.run(["pgrep", "-f", job], stdout=subprocess.PIPE, text=True).stdout
        assert left.strip() == "", f"processes of {job} left behind: {left}"
    return job


def launch(workspace, part_config, command, trainers=2, machines=2, timeout=600, extra=()):
    """Runs `tessera launch` over `machines` loopback machines; returns
    (exit code, output, job id) and checks nothing of the job is left."""
    argv = launch_argv(workspace, part_config, command, trainers, machines, extra)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=dict(os.environ))
    return r.returncode, r.stdout, assert_job_gone(r.stdout)


def results(out):
    """The JSON of each "RESULT {...}" line (launched lines carry a "[machine/trainer/rank] "
    prefix)."""
    return [json.loads(line.split("RESULT ", 1)[1]) for line in out.splitlines()
            if "RESULT {" in line]


def python_cmd(script, *args):
    return " ".join([PYTHON, os.path.join(HERE, script)] + [str(a) for a in args])


def raises(kind, f, *words):
    """f() raises ``kind`` whose message holds every word (and no pybind11
    signature dump); returns the message."""
    try:
        f()
    except kind as e:
        text = str(e)
        assert "incompatible function arguments" not in text, text
        for w in words:
            assert w in text, (w, text)
        return text
    raise AssertionError(f"no {kind.__name__} ({words})")


def run_check(script, arg, check):
    """Runs ``script <arg> <check>`` (a test file that runs one check when
    run as a script) and asserts that it printed "CHECK <check> ok"."""
    r = subprocess.run([PYTHON, os.path.join(HERE, script), str(arg), check],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0 and f"CHECK {check} ok" in r.stdout, r.stdout[-4000:]


def run_checks(script, args, checks):
    """Runs a check script (one that prints "CHECK <name> ok" per check and
    "ALL CHECKS PASSED") standalone; asserts that every check passed."""
    r = subprocess.run([PYTHON, os.path.join(HERE, script)] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    for c in checks:
        assert f"CHECK {c} ok" in r.stdout, (c, r.stdout)
    assert "ALL CHECKS PASSED" in r.stdout


def launch_checks(workspace, part_config, script, args, checks):
    """The same in a launched job of 2 machines x 2 trainers: every trainer
    passes every check. Returns the job's output."""
    code, out, _ = launch(workspace, part_config, python_cmd(script, *args))
    assert code == 0, out
    for c in checks:
        assert out.count(f"CHECK {c} ok") == 4, (c, out)
    assert out.count("ALL CHECKS PASSED") == 4
    return out


def make_mag(root, *generate_flags):
    """Generates a mag-shaped graph under root/g (`tessera generate --hetero`
    with the given flags) and partitions it into 1 and 2 parts; returns
    (input folder, {1: 1-part config, 2: 2-part config})."""
    tessera = os.path.join(BIN, "tessera")
    subprocess.run([tessera, "generate", "--hetero", *generate_flags, "--out", str(root / "g")],
                   check=True, stdout=subprocess.DEVNULL)
    parts = {}
    for k in (1, 2):
        subprocess.run([tessera, "partition", "--input", str(root / "g"), "--graph-name", "mag",
                        "--num-parts", str(k), "--out", str(root / f"p{k}"), "--return-mapping"],
                       check=True, stdout=subprocess.DEVNULL)
        parts[k] = str(root / f"p{k}" / "mag.json")
    return str(root / "g"), parts
