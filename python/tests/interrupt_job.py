"""Run by test_interrupt.py: SIGINT arrives while the main thread waits inside
tessera (a loader's next batch, or a barrier); prints how long the
KeyboardInterrupt took to arrive."""
import os
import signal
import sys
import threading
import time

import torch

import tessera.distributed as dist

mode, part_config = sys.argv[1], sys.argv[2]
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
