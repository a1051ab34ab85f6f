"""Shared noise table: build time of a 100 MB table, and the memory each extra sampling process adds.

The first process builds ``NoiseTable.shared(seed, 25_000_000)`` (100 MB of float32) into ``/dev/shm`` (or
``--dir``); then ``--procs`` more processes each map it and read every entry (as sampling agents drawing random
offsets eventually do), and stay alive. For each, psutil's RSS, USS (private) and PSS (proportional) growth is
printed. The peer is the private copy every process would otherwise hold: ``NoiseTable.in_memory`` (its USS
growth is measured too, in one process). Target: built in <= 0.5 s; each extra process grows by <= 10 MB.

Usage::

    python benchmarks/evokit/noise_table_memory.py [--procs 4] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import psutil
    from evokit import NoiseTable
    proc = psutil.Process()
    before = proc.memory_full_info()
    t0 = time.perf_counter()
    if sys.argv[3] == "shared":
        table = NoiseTable.shared(11, int(sys.argv[2]), sys.argv[1])
    else:
        table = NoiseTable.in_memory(11, int(sys.argv[2]))
    build_s = time.perf_counter() - t0
    float(np.asarray(table.noise).sum(dtype=np.float64))  # touch every page
    after = proc.memory_full_info()
    mb = 2**20
    print(json.dumps({"open_or_build_s": build_s, "rss_mb": (after.rss - before.rss) / mb,
                      "uss_mb": (after.uss - before.uss) / mb, "pss_mb": (after.pss - before.pss) / mb}))
    sys.stdout.flush()
    sys.stdin.read()
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=4, help="sampling processes after the builder")
    parser.add_argument("--size", type=int, default=25_000_000, help="float32 entries (25M = 100 MB)")
    parser.add_argument("--dir", default=None, help="table directory (default: a fresh one under /dev/shm)")
    args = parser.parse_args()
    print("loadavg:", open("/proc/loadavg").read().split()[:3])
    directory = args.dir or tempfile.mkdtemp(prefix="evokit-bench-", dir="/dev/shm")
    procs, rows = [], []
    try:
        for i in range(1 + args.procs):
            p = subprocess.Popen([sys.executable, "-c", CHILD, directory, str(args.size), "shared"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            row = json.loads(p.stdout.readline())
            row["process"] = "builder" if i == 0 else f"sampler {i}"
            rows.append(row)
        p = subprocess.Popen([sys.executable, "-c", CHILD, directory, str(args.size), "private"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        row = json.loads(p.stdout.readline())
        row["process"] = "private copy (peer)"
        rows.append(row)
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"table: {args.size * 4 / 2**20:.0f} MB in {directory}")
    print("| process | build / map s | RSS growth MB | USS growth MB | PSS growth MB |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['process']} | {r['open_or_build_s']:.3f} | {r['rss_mb']:.1f} | {r['uss_mb']:.1f} "
              f"| {r['pss_mb']:.1f} |")
    print("loadavg:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
