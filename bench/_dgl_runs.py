"""What bench/train_vs_dgl.py and bench/rgcn_vs_dgl.py share: running one
training program and averaging the epochs it printed."""
import statistics
import subprocess
import sys


def run(cmd, env, what, tag):
    """Runs `cmd`; its output, or exits naming `what` with the tail of it."""
    print(f"{tag}: {what}: {' '.join(cmd)}", file=sys.stderr)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        raise SystemExit(f"{tag}: {what} failed with exit code {r.returncode}")
    return r.stdout + r.stderr


def epochs_of(regex, out, keys, epochs, what, tag):
    """The mean of each figure (`keys`, the regex's groups in order) over the
    epochs after the first (it warms caches and allocators), and every
    epoch's first figure as `epochs_s`."""
    found = [tuple(map(float, m.groups())) for m in regex.finditer(out)]
    if len(found) != epochs:
        sys.stderr.write(out[-4000:])
        raise SystemExit(f"{tag}: {what} printed {len(found)} epochs, not {epochs}")
    steady = found[1:] or found
    result = {k: statistics.mean(e[i] for e in steady) for i, k in enumerate(keys)}
    result["epochs_s"] = [e[0] for e in found]
    return result
