"""initialize / exit_client (dgl.distributed.initialize)."""
import atexit
import os
import socket
import struct

from tessera import _C

_state = {"info": None, "num_workers": None}


def _interface_of(address):
    """The name of the network interface that holds `address` (IPv4), or None."""
    try:
        import fcntl
        packed = socket.inet_aton(address)
    except (ImportError, OSError):
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                req = struct.pack("256s", name.encode()[:15])
                res = fcntl.ioctl(s.fileno(), 0x8915, req)  # SIOCGIFADDR
            except OSError:
                continue
            if res[20:24] == packed:
                return name
    return None


def initialize(ip_config=None, max_queue_size=None, net_type=None, num_worker_threads=1,
               use_graphbolt=False, num_workers=None, call_timeout=30.0,
               connect_timeout=600.0, barrier_timeout=1800.0):
    """Connects this trainer to the job's servers (or enters standalone mode).

    Launched by ``tessera launch`` (or the local runner), the environment
    names the job and this connects to every server, waiting up to
    ``connect_timeout`` seconds for them; without that environment the
    program is standalone and ``DistGraph`` loads a one-part partition.
    ``ip_config`` overrides the launcher's. ``num_workers`` sets the default
    number of sampler *threads* of the data loaders (default: the
    launcher's ``--num-samplers``). ``max_queue_size``, ``net_type`` and
    ``use_graphbolt`` are accepted for DGL compatibility and ignored.

    It also points Gloo at this machine's ip_config address
    (``GLOO_SOCKET_IFNAME``, unless set), so that
    ``torch.distributed.init_process_group("gloo")`` works unchanged from the
    launcher's MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
    """
    if use_graphbolt:
        raise ValueError("initialize: use_graphbolt=True is not supported (tessera serves its "
                         "own partition format)")
    info = _C.initialize(ip_config or "", float(call_timeout), float(connect_timeout),
                         float(barrier_timeout))
    _state["info"] = info
    _state["num_workers"] = num_workers
    if info["standalone"]:
        _match_cxx_threads()
    if not info["standalone"] and "GLOO_SOCKET_IFNAME" not in os.environ:
        name = _interface_of(info["host_address"])
        if name:
            os.environ["GLOO_SOCKET_IFNAME"] = name
    return None


def _match_cxx_threads():
    """Standalone (one process owns the machine): Debian's torch starts with
    one intra-op thread when OMP_NUM_THREADS is unset, where LibTorch in a C++
    trainer uses every core; give the Python trainer the same. Launched
    trainers share their machine with servers and other trainers, so they
    keep torch's default (measured: 2 threads each on a 2-core machine with
    two loopback machines made epochs 1.9x slower); OMP_NUM_THREADS (e.g.
    ``tessera launch --num-omp-threads``) decides when set."""
    if os.environ.get("OMP_NUM_THREADS"):
        return
    import torch
    cores = len(os.sched_getaffinity(0))
    if torch.get_num_threads() < cores:
        torch.set_num_threads(cores)


def exit_client():
    """Says goodbye to the servers. Idempotent; also runs at interpreter exit."""
    if _state["info"] is None:
        return
    _state["info"] = None
    _C.exit_client()


def _exit_quietly():
    try:
        exit_client()
    except Exception as e:  # An exit path never raises; say what went wrong.
        import sys
        print(f"tessera: exit_client at interpreter exit: {e}", file=sys.stderr)


def _destroy_torch_process_group():
    """DGL's scripts call torch.distributed.init_process_group("gloo") and never
    destroy it; torch 1.13 then tears Gloo's worker threads down during
    interpreter finalization, which can end a finished trainer in
    std::terminate ("terminate called without an active exception", exit 134;
    pytorch/pytorch#190489, seen once in this project's Python training test).
    Destroying it while the interpreter is whole avoids that."""
    try:
        import torch.distributed as torch_dist
        if torch_dist.is_available() and torch_dist.is_initialized():
            torch_dist.destroy_process_group()
    except Exception as e:  # An exit path never raises; say what went wrong.
        import sys
        print(f"tessera: destroying torch's process group at exit: {e}", file=sys.stderr)


atexit.register(_exit_quietly)
# Registered after: runs first, joining the sampler threads of dropped loaders.
atexit.register(_C._shutdown)
# Runs before both: the trainers' process group goes while Python is whole.
atexit.register(_destroy_torch_process_group)


def info():
    """The process's job information (rank, world_size, machine_id, ...)."""
    if _state["info"] is None:
        raise _C.TesseraError("call tessera.distributed.initialize() first")
    return dict(_state["info"])


def default_num_workers():
    return -1 if _state["num_workers"] is None else int(_state["num_workers"])
