"""Two "machines" on this host for benchmarks: two network namespaces joined by
a veth link, each with its own address and its own sshd (key authentication,
a key made for the run), as tests/integration/cluster_test.cc builds them.

One difference: each host gets its own /dev/shm (a tmpfs mounted in its
sshd's mount namespace, which every process started over ssh inherits).
DGL names a server's shared memory after the graph only
(dist_graph.py, `_copy_graph_to_shared_mem`), so two DGL machines sharing one
/dev/shm would use the same names for different partitions. The tmpfs goes away
with the last process of its host. Needs root, `ip`, `/usr/sbin/sshd`.

    with TwoHosts() as hosts:
        hosts.ip            # ["10.214.x.1", "10.214.x.2"]
        hosts.dev           # the link's interface, the same name on both hosts
        hosts.in_host(0, ["cmd", ...])  # argv run in host 0's namespace
        hosts.ssh_config    # an ssh -F file with the key, for other launchers
        hosts.ssh_options   # ["IdentityFile=...", ...] (ssh -o)
        hosts.bin           # a folder whose `ssh` adds -F ssh_config: put it
                            # first on PATH for launchers that run plain ssh
        hosts.stop_jobs()   # kill every process on both hosts but the sshds

Leaving the block (also by an exception, SIGINT or a SIGTERM turned into an
exception) kills whatever runs on the hosts, stops the sshds and deletes the
namespaces and the key folder.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time


def _sh(argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class TwoHosts:
    def __init__(self, tag=None):
        tag = str(os.getpid() % 100000 if tag is None else tag)
        self.ns = ["tba" + tag, "tbb" + tag]
        self.ip = [f"10.214.{os.getpid() % 250}.1", f"10.214.{os.getpid() % 250}.2"]
        self._veth = ("tbva" + tag, "tbvb" + tag)
        self.dev = "bench0"
        self._created = []
        self._sshd = []
        self.dir = None

    # --- setup -----------------------------------------------------------
    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _start(self):
        if os.geteuid() != 0:
            raise RuntimeError("needs root to create network namespaces")
        if not os.path.exists("/usr/sbin/sshd"):
            raise RuntimeError("sshd is not installed (openssh-server)")
        for ns in self.ns:
            _sh(["ip", "netns", "add", ns])
            self._created.append(ns)
        va, vb = self._veth
        _sh(["ip", "link", "add", va, "netns", self.ns[0], "type", "veth", "peer", "name", vb,
             "netns", self.ns[1]])
        for h, dev in enumerate(self._veth):
            # One name on both hosts, like eth0 on two real machines.
            _sh(self.in_host(h, ["ip", "link", "set", dev, "name", self.dev]))
            _sh(self.in_host(h, ["ip", "link", "set", "lo", "up"]))
            _sh(self.in_host(h, ["ip", "addr", "add", self.ip[h] + "/24", "dev", self.dev]))
            _sh(self.in_host(h, ["ip", "link", "set", self.dev, "up"]))
        self.dir = tempfile.mkdtemp(prefix="tessera-netns-")
        for key in ("host_key", "id"):
            _sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, key)])
        shutil.copy(os.path.join(self.dir, "id.pub"), os.path.join(self.dir, "authorized_keys"))
        os.makedirs("/run/sshd", exist_ok=True)
        for h in range(2):
            config = os.path.join(self.dir, f"sshd{h}.conf")
            with open(config, "w") as f:
                f.write(f"Port 22\nListenAddress {self.ip[h]}\n"
                        f"HostKey {self.dir}/host_key\n"
                        f"AuthorizedKeysFile {self.dir}/authorized_keys\n"
                        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                        "PidFile none\nLogLevel ERROR\nSubsystem sftp internal-sftp\n"
                        "MaxStartups 100\nMaxSessions 100\n")
            log = open(os.path.join(self.dir, f"sshd{h}.log"), "w")
            # `ip netns exec` gives the command a mount namespace of its own
            # (slave to this one): the tmpfs is seen by this sshd and its
            # sessions only. sh execs sshd, so the pid is sshd's.
            self._sshd.append(subprocess.Popen(
                self.in_host(h, ["sh", "-c", "mount -t tmpfs -o mode=1777 tessera-bench-shm "
                                 "/dev/shm && exec /usr/sbin/sshd -D -e -f " + config]),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True))
            log.close()
        self.ssh_options = [f"IdentityFile={self.dir}/id", "StrictHostKeyChecking=no",
                            "UserKnownHostsFile=/dev/null", "LogLevel=ERROR"]
        self.ssh_config = os.path.join(self.dir, "ssh_config")
        with open(self.ssh_config, "w") as f:
            f.write("Host *\n  User root\n  BatchMode yes\n" +
                    "".join(f"  {o.replace('=', ' ', 1)}\n" for o in self.ssh_options))
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "ssh"), "w") as f:
            f.write(f'#!/bin/sh\nexec /usr/bin/ssh -F {self.ssh_config} "$@"\n')
        os.chmod(os.path.join(self.bin, "ssh"), 0o755)
        for h in range(2):
            deadline = time.monotonic() + 20
            while _sh(self.in_host(0, ["ssh", "-F", self.ssh_config, self.ip[h], "true"]),
                      check=False).returncode != 0:
                if time.monotonic() > deadline or self._sshd[h].poll() is not None:
                    with open(os.path.join(self.dir, f"sshd{h}.log")) as f:
                        raise RuntimeError(f"sshd on {self.ip[h]} does not answer: {f.read()}")
                time.sleep(0.1)

    # --- use -------------------------------------------------------------
    def in_host(self, h, argv):
        return ["ip", "netns", "exec", self.ns[h]] + list(argv)

    def host_processes(self, h):
        """(pid, command line) of every process on host `h` but its sshd
        listener."""
        if self.ns[h] not in self._created:
            return []
        r = _sh(["ip", "netns", "pids", self.ns[h]], check=False)
        sshd = self._sshd[h].pid if h < len(self._sshd) else None
        found = []
        for pid in map(int, r.stdout.split()):
            if pid == sshd:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    found.append((pid, f.read().replace(b"\0", b" ").decode(errors="replace")))
            except OSError:
                pass
        return found

    def stop_jobs(self, wait=10.0):
        """SIGTERM to every process on both hosts but the sshds, SIGKILL to
        what remains after `wait` seconds. Returns the command lines that
        were still running."""
        left = [p for h in range(2) for p in self.host_processes(h)]
        for pid, _ in left:
            _kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(self.host_processes(h) for h in range(2)):
            time.sleep(0.1)
        for h in range(2):
            for pid, _ in self.host_processes(h):
                _kill(pid, signal.SIGKILL)
        return [cmd for _, cmd in left]

    def wait_idle(self, timeout):
        """True once nothing but the sshds runs on either host."""
        deadline = time.monotonic() + timeout
        while any(self.host_processes(h) for h in range(2)):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    # --- teardown --------------------------------------------------------
    def close(self):
        for h in range(2):
            for pid, _ in self.host_processes(h):
                _kill(pid, signal.SIGKILL)
        for p in self._sshd:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self._sshd = []
        # A session process may have outlived its sshd for a moment.
        for h in range(2):
            for pid, _ in self.host_processes(h):
                _kill(pid, signal.SIGKILL)
        for ns in reversed(self._created):
            _sh(["ip", "netns", "del", ns], check=False)  # The veth pair goes with it.
        self._created = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _kill(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
