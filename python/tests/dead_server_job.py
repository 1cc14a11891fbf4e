"""Run by test_api.py as the only trainer of a job whose servers the test
started itself: pulls rows of machine 1 until its server is killed, then
prints the exception it got."""
import sys
import time

import tessera
import tessera.distributed as dist

dist.initialize(call_timeout=20.0)
g = dist.DistGraph("cora", part_config=sys.argv[1])
remote = g.get_partition_book().partid2nids(1)
print("READY", flush=True)
deadline = time.time() + 90
while time.time() < deadline:
    try:
        g.ndata["feat"][remote]
    except tessera.TesseraError as e:
        print(f"ERROR {type(e).__name__}: {e}", flush=True)
        sys.exit(0)
    time.sleep(0.05)
print("no error within 90 s", flush=True)
sys.exit(1)
