#!/usr/bin/python3
"""DGL's own distributed GraphSAGE example (``train_dist.py`` of DGL 1.1.3) on
2 machines x 1 trainer launched by DGL's ``launch.py``, and the same file with
only its imports changed on tessera launched by ``tessera launch``, in the
same run, with the same threads: epoch times, their breakdown and the ratio.
Prints JSON.

    mkdir -p /tmp/dgl && tar xf ../shared/reference/dgl/dgl-1.1.3.tar.xz -C /tmp/dgl
    /usr/bin/python3 ../shared/tools/gen_graph.py --out /tmp/medium
    /usr/bin/python3 bench/train_vs_dgl_2machines.py --graph /tmp/medium \\
        --dgl /tmp/dgl/dgl-1.1.3 --threads 2 --pairs 2

The two machines are two network namespaces of this host joined by a veth
link, each with its own address, sshd and /dev/shm (bench/_netns.py). Both
launchers run in the first namespace and reach both machines over ssh, as from
a head node. Each machine runs 1 server (1 OMP thread) and 1 trainer
(``--threads`` OMP threads, ``--samplers`` passed to both launchers' sampler
flag: DGL's sampler processes, tessera's sampler threads; 0 samples in the
trainer on both). Each system gets a 2-part METIS partition made by its own
partitioner with DGL's benchmark settings (train_mask and edges balanced), kept
in --work and reused. An epoch's figure is the mean of the epochs after the
first, averaged over the two trainers.

DGL runs twice in each pair by default (``--dgl-passive both``): with libgomp's
default, whose threads spin between parallel regions, and with
``OMP_WAIT_POLICY=PASSIVE``, which tessera sets for itself. Both machines
share this host's cores, so DGL's spinning trainers take them from each other
and from the servers; the passive run is the fair yardstick here, the default
one is what DGL does unless told. Each pair (DGL, then tessera) holds
``--lock`` (flock), so it never runs beside another benchmark that takes it.
Logs: --work/logs.
"""
import argparse
import fcntl
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import _dgl_runs
import _netns
import train_vs_dgl

TAG = "train_vs_dgl_2machines"
KEYS = ("epoch_s", "sample_and_copy_s", "forward_s", "backward_s", "update_s")
# DGL's 2-part partition: train_vs_dgl's one-part script, with the settings of
# DGL's distributed examples (partition_graph.py --balance_train --balance_edges).
ONE_PART = 'dgl.distributed.partition_graph(g, "medium", 1, out, part_method="metis")'
assert ONE_PART in train_vs_dgl.DGL_PARTITION
DGL_PARTITION = train_vs_dgl.DGL_PARTITION.replace(
    ONE_PART, 'dgl.distributed.partition_graph(g, "medium", 2, out, part_method="metis", '
    'balance_ntypes=g.ndata["train_mask"], balance_edges=True)')


def parse():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", default="/tmp/medium", help="a gen_graph.py folder (npy layout)")
    p.add_argument("--dgl", default="/tmp/dgl/dgl-1.1.3", help="the extracted dgl-1.1.3 folder")
    p.add_argument("--threads", type=int, default=2, help="OMP threads per trainer")
    p.add_argument("--samplers", type=int, default=0,
                   help="--num_samplers of both launchers (DGL: processes, tessera: threads)")
    p.add_argument("--dgl-passive", choices=("no", "yes", "both"), default="both",
                   help="DGL's processes with OMP_WAIT_POLICY=PASSIVE (tessera sets it itself; "
                   "DGL keeps libgomp's spinning default): no, yes, or both runs in each pair")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=1)
    p.add_argument("--eval", action="store_true", help="also run the example's evaluation")
    p.add_argument("--work", default="/tmp/tessera-train-vs-dgl-2m",
                   help="workspace of both jobs (partitions, scripts, logs)")
    p.add_argument("--tessera", default=os.path.join(here, "..", "build", "bin", "tessera"))
    p.add_argument("--lock", default="/tmp/bench.lock", help="flock held per pair ('' for none)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per launch")
    args = p.parse_args()
    args.work = os.path.abspath(args.work)
    args.dgl = os.path.abspath(args.dgl)
    args.tessera = os.path.abspath(args.tessera)
    return args


class Lock:
    """`flock` on a file for the duration of a `with` block."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        if self.path:
            self.f = open(self.path, "a")
            print(f"{TAG}: waiting for {self.path}", file=sys.stderr)
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.path:
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self.f.close()
        return False


def prepare(args):
    """The 2-part partitions (each system's own), the tessera script."""
    os.makedirs(args.work, exist_ok=True)
    data = train_vs_dgl.input_folder(args)
    dgl_parts = os.path.join(args.work, "dgl_parts2")
    ours = os.path.join(args.work, "tessera_parts2")
    if not (os.path.exists(os.path.join(dgl_parts, "medium.json")) and
            os.path.exists(os.path.join(ours, "medium.json"))):
        with Lock(args.lock):
            if not os.path.exists(os.path.join(dgl_parts, "medium.json")):
                env = dict(os.environ, PYTHONPATH=os.path.join(args.dgl, "python"),
                           DGLBACKEND="pytorch")
                _dgl_runs.run(["/usr/bin/python3", "-c", DGL_PARTITION, args.graph, dgl_parts],
                              env, "DGL partition_graph, 2 parts", TAG)
            if not os.path.exists(os.path.join(ours, "medium.json")):
                _dgl_runs.run([args.tessera, "partition", "--input", data, "--graph-name",
                               "medium", "--num-parts", "2", "--balance-ntypes", "train_mask",
                               "--balance-edges", "--out", ours], dict(os.environ),
                              "tessera partition, 2 parts", TAG)
    train_vs_dgl.tessera_script(args.dgl, os.path.join(args.work, "train_dist_tessera.py"))


def example_flags(args, ip_config, part_config):
    eval_every = args.epochs if args.eval else args.epochs + 1
    return (f"--graph_name medium --ip_config {ip_config} --part_config {part_config} "
            f"--num_epochs {args.epochs} --eval_every {eval_every} "
            "--batch_size 1000 --fan_out 10,25 --num_hidden 16")


def dgl_launch(args, hosts, passive=False):
    """DGL's launch.py as its README runs it (plain `ssh`: the hosts' key
    comes from the `ssh` wrapper first on PATH)."""
    with open(os.path.join(args.work, "ip_dgl.txt"), "w") as f:
        f.write("".join(f"{ip} 30050\n" for ip in hosts.ip))
    command = (f"/usr/bin/python3 {args.dgl}/train_dist.py " +
               example_flags(args, "ip_dgl.txt", "dgl_parts2/medium.json"))
    extra_envs = [
        "DGLBACKEND=pytorch",
        # Gloo binds to the address of the host name by default, which is
        # 127.0.0.1 here (one /etc/hosts for both hosts): the link instead.
        "GLOO_SOCKET_IFNAME=" + hosts.dev,
        # torch 1.13's torch.distributed.launch, which launch.py runs the
        # trainers with, fails on Python 3.11 with its default --redirects 0
        # (Std.from_str finds only single-bit members there, so "0" and "3"
        # give None): stdout to a file, tailed to the console ("[default0]:"
        # before each line); stderr as before. PET_* are its flags.
        "PET_REDIRECTS=1", "PET_TEE=1",
        "PET_LOG_DIR=" + os.path.join(args.work, "logs", "torchelastic")]
    if passive:
        extra_envs.append("OMP_WAIT_POLICY=PASSIVE")
    argv = ["/usr/bin/python3", os.path.join(args.dgl, "launch.py"), "--workspace", args.work,
            "--num_trainers", "1", "--num_samplers", str(args.samplers), "--num_servers", "1",
            "--num_server_threads", "1", "--num_omp_threads", str(args.threads),
            "--extra_envs"] + extra_envs + [
            "--part_config", "dgl_parts2/medium.json", "--ip_config", "ip_dgl.txt",
            "--ssh_port", "22", command]
    env = dict(os.environ, PATH=hosts.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               PYTHONPATH=os.path.join(args.dgl, "python"))  # launch.py passes it on.
    env.pop("OMP_NUM_THREADS", None)  # launch.py would prefer it to --num_omp_threads.
    return argv, env


def tessera_launch(args, hosts):
    """`tessera launch --ssh` with the hosts' key, as cluster_test.cc does."""
    with open(os.path.join(args.work, "ip_tessera.txt"), "w") as f:
        f.write("".join(f"{ip} 30060\n" for ip in hosts.ip))
    command = ("/usr/bin/python3 train_dist_tessera.py " +
               example_flags(args, "ip_tessera.txt", "tessera_parts2/medium.json"))
    argv = [args.tessera, "launch", "--ssh", "--workspace", args.work, "--num-trainers", "1",
            "--num-samplers", str(args.samplers), "--num-servers", "1", "--num-server-threads",
            "1", "--num-omp-threads", str(args.threads), "--part-config",
            "tessera_parts2/medium.json", "--ip-config", "ip_tessera.txt", "--ssh-port", "22"]
    for option in hosts.ssh_options:
        argv += ["--ssh-option", option]
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    return argv + [command], env


def launch(hosts, argv, env, log_path, what, args):
    """Runs a launcher in the first namespace; its output, its wall time and
    the processes it left on the hosts (killed)."""
    print(f"{TAG}: {what}: {' '.join(argv)}", file=sys.stderr)
    start = time.monotonic()
    with open(log_path, "w") as log:
        p = subprocess.Popen(hosts.in_host(0, argv), env=env, stdout=log,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, cwd=args.work)
        try:
            code = p.wait(args.timeout)
        except BaseException:  # Timeout, SIGINT, SIGTERM: stop the job, then pass it on.
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            left = hosts.stop_jobs()
            print(f"{TAG}: {what} stopped; killed {len(left)} processes on the hosts",
                  file=sys.stderr)
            raise
    wall = time.monotonic() - start
    with open(log_path) as f:
        out = f.read()
    left = [] if hosts.wait_idle(30) else hosts.stop_jobs()
    if code != 0:
        sys.stderr.write(out[-6000:])
        raise SystemExit(f"{TAG}: {what} failed with exit code {code} (log: {log_path})")
    return out, wall, left


def figures(out, args, what):
    """Each trainer's mean epoch after the first, and their mean."""
    trainers = []
    for part in range(2):
        regex = re.compile(rf"Part {part}, " + train_vs_dgl.EPOCH.pattern)
        trainers.append(_dgl_runs.epochs_of(regex, out, KEYS, args.epochs, f"{what}, part {part}",
                                            TAG))
    result = {k: statistics.mean(t[k] for t in trainers) for k in KEYS}
    result["trainers"] = trainers
    acc = train_vs_dgl.ACC.findall(out)
    if acc:
        result["test_acc"] = [float(a) for a in acc]
    return result


def run_pair(i, args, hosts):
    logs = os.path.join(args.work, "logs")
    os.makedirs(logs, exist_ok=True)
    pair = {}
    runs = {"no": [("dgl", False)], "yes": [("dgl_passive", True)],
            "both": [("dgl", False), ("dgl_passive", True)]}[args.dgl_passive]
    runs = [(name, lambda a, h, p=passive: dgl_launch(a, h, p)) for name, passive in runs]
    for system, make in runs + [("tessera", tessera_launch)]:
        argv, env = make(args, hosts)
        what = f"pair {i + 1}: {system}"
        out, wall, left = launch(hosts, argv, env, os.path.join(logs, f"pair{i + 1}_{system}.log"),
                                 what, args)
        pair[system] = figures(out, args, what)
        pair[system]["launch_wall_s"] = wall
        if left:
            pair[system]["left_running_killed"] = left
    t = pair["tessera"]
    for name, _ in runs:
        d = pair[name]
        ratio = {k: t[k] / d[k] for k in ("epoch_s", "forward_s", "backward_s")}
        ratio["forward_backward"] = (t["forward_s"] + t["backward_s"]) / (d["forward_s"] +
                                                                          d["backward_s"])
        ratio["launch_wall_s"] = t["launch_wall_s"] / d["launch_wall_s"]
        pair["tessera_vs_" + name] = ratio
    return pair


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


def main():
    args = parse()
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    prepare(args)
    pairs = []
    hosts = _netns.TwoHosts()
    try:
        hosts.__enter__()
        for i in range(args.pairs):
            with Lock(args.lock):
                pairs.append(run_pair(i, args, hosts))
            print(json.dumps(pairs[-1]), file=sys.stderr)
    finally:
        # Nothing interrupts the cleanup.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        hosts.close()
    summary = {name: {k: statistics.median(p[name][k] for p in pairs) for k in pairs[0][name]}
               for name in pairs[0] if name.startswith("tessera_vs_")}
    print(json.dumps({"bench": TAG, "machines": 2, "trainers_per_machine": 1,
                      "threads": args.threads, "samplers": args.samplers, "epochs": args.epochs,
                      "hosts": "2 network namespaces of one host (veth, sshd each)",
                      "dgl_passive": "DGL with OMP_WAIT_POLICY=PASSIVE (tessera sets it itself)",
                      "pairs": pairs, "median": summary}, indent=1))


if __name__ == "__main__":
    main()
