"""Run by test_interrupt.py: SIGINT arrives while the main thread waits inside
tessera (a loader's next batch, a barrier, or METIS in partition_graph);
prints how long the KeyboardInterrupt took to arrive."""
import os
import signal
import sys
import threading
import time

import torch

import tessera.distributed as dist

mode, part_config = sys.argv[1], sys.argv[2]


def children():
    """Pids of this process's children (METIS runs in one)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if entry.isdigit() and int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(int(entry))
    return found


if mode == "metis":
    # part_config is the output folder here.
    import tessera
    torch.manual_seed(0)
    n, m = 300_000, 3_000_000
    g = tessera.graph((torch.randint(0, n, (m,)), torch.randint(0, n, (m,))), num_nodes=n)
    metis = []
    sent = [0.0]

    def interrupt_when_metis_runs():
        while not metis:
            metis.extend(children())
            time.sleep(0.005)
        sent[0] = time.time()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_metis_runs, daemon=True).start()
    try:
        dist.partition_graph(g, "g", 8, part_config)
        print("partition_graph returned", flush=True)
    except KeyboardInterrupt:
        print(f"INTERRUPTED after {time.time() - sent[0]:.3f} s", flush=True)
        print("METIS process left:", children(), flush=True)
        sys.exit(0)
    sys.exit(1)

dist.initialize()
g = dist.DistGraph("cora", part_config=part_config)
rank = dist.context.info()["rank"]
sent = [0.0]


def interrupt_soon():
    time.sleep(0.5)
    sent[0] = time.time()
    os.kill(os.getpid(), signal.SIGINT)


def slow_collate(rows):
    end = time.time() + 3.0  # A batch that takes 3 s (busy, as sampling would be).
    while time.time() < end:
        pass
    return rows


if mode in ("loader", "loader0"):
    # loader: the batch is made in a sampler thread; loader0: in this thread.
    loader = dist.DistDataLoader(torch.arange(10), batch_size=5, collate_fn=slow_collate,
                                 num_workers=1 if mode == "loader" else 0)
    threading.Thread(target=interrupt_soon, daemon=True).start()
    try:
        for batch in loader:
            print("got a batch before the interrupt", flush=True)
    except KeyboardInterrupt:
        print(f"INTERRUPTED after {time.time() - sent[0]:.3f} s", flush=True)
        sys.exit(0)
elif mode == "barrier":
    if rank == 0:
        threading.Thread(target=interrupt_soon, daemon=True).start()
        try:
            g.barrier()  # The other trainer never comes.
            print("barrier returned", flush=True)
        except KeyboardInterrupt:
            print(f"INTERRUPTED after {time.time() - sent[0]:.3f} s", flush=True)
            sys.exit(0)
    else:
        time.sleep(2.0)
sys.exit(1 if rank == 0 else 0)
