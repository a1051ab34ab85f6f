"""Before / after A/B of two parl-remote versions: synchronous call rate, CPU per call on both sides,
1,000 pipelined futures, and the median echo time of a 1 / 10 / 100 MiB array (R1, R2, R3 of bench_remote).
One fresh process and embedded cluster per sample, the versions alternated (A B, B A, ...); prints the median
of the per-pair after / before ratios (robust to the drift of a shared machine).

    python benchmarks/remote/ab_versions.py --before /path/main/.venv/bin/python \
        --after .venv/bin/python --transport stream --pairs 8

``--before-path`` / ``--after-path`` put a source tree first on PYTHONPATH (e.g. an exported commit's
``packages/parl-remote/src``); ``--transport zmq`` sets ``XPARL_UNIX_STREAM=0``.
"""

import argparse
import json
import os
import statistics
import subprocess

CHILD = r'''
import json, os, sys, time
import parl_remote as xparl
@xparl.remote_class
class Echo:
    def small(self):
        return b"ok"
    def echo(self, x):
        return x
@xparl.remote_class(wait=False)
class FEcho:
    def small(self):
        return b"ok"
xparl.connect(cpu_num=2)
a = Echo(); f = FEcho()
import psutil
job = psutil.Process(a._xparl_actor.pid)
for _ in range(300): a.small()
j0 = sum(job.cpu_times()[:2])
t0 = time.perf_counter(); c0 = time.process_time(); n = 0
while time.perf_counter() - t0 < 1.0:
    a.small(); n += 1
sync = n / (time.perf_counter() - t0); cpu = (time.process_time() - c0) / n * 1e6
job_cpu = (sum(job.cpu_times()[:2]) - j0) / n * 1e6
[x.result() for x in [f.small() for _ in range(200)]]
rates = []
for _ in range(3):
    t0 = time.perf_counter(); [x.result() for x in [f.small() for _ in range(1000)]]
    rates.append(1000 / (time.perf_counter() - t0))
import numpy as np, statistics
echo = {}
for mb in (1, 10, 100):
    arr = np.ones(mb * 2**20 // 8)
    a.echo(arr)
    times = []
    for _ in range(5):
        t0 = time.perf_counter(); a.echo(arr); times.append((time.perf_counter() - t0) * 1e3)
    echo[f"echo_{mb}MiB_ms"] = statistics.median(times)
print(json.dumps({"sync": sync, "caller_cpu_us": cpu, "job_cpu_us": job_cpu, "pipelined": max(rates), **echo}))
xparl.disconnect()
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="python of the version before")
    parser.add_argument("--after", required=True, help="python of the version after")
    parser.add_argument("--before-path", default="", help="PYTHONPATH for the version before")
    parser.add_argument("--after-path", default="", help="PYTHONPATH for the version after")
    parser.add_argument("--transport", choices=("stream", "zmq"), default="stream")
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    absolute = os.path.abspath  # the samples run in /tmp (no symlink is resolved: a venv's python stays itself)
    sides = {
        "base": (absolute(args.before), absolute(args.before_path) if args.before_path else ""),
        "new": (absolute(args.after), absolute(args.after_path) if args.after_path else ""),
    }
    res: dict = {"base": [], "new": []}
    for i in range(args.pairs):
        for side in ("base", "new") if i % 2 == 0 else ("new", "base"):
            python, path = sides[side]
            env = dict(os.environ, PYTHONPATH=path)
            if args.transport == "zmq":
                env["XPARL_UNIX_STREAM"] = "0"
            out = subprocess.run([python, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120,
                                 cwd="/tmp", check=True)  # fmt: skip
            res[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    for key in ("sync", "caller_cpu_us", "job_cpu_us", "pipelined", "echo_1MiB_ms", "echo_10MiB_ms", "echo_100MiB_ms"):
        before = [r[key] for r in res["base"]]
        after = [r[key] for r in res["new"]]
        ratios = [a / b for b, a in zip(before, after, strict=True)]
        print(f"{args.transport} {key}: before median {statistics.median(before):,.0f}, after median "
              f"{statistics.median(after):,.0f}, paired after/before median {statistics.median(ratios):.3f} "
              f"(pairs {', '.join(f'{r:.2f}' for r in ratios)})")
    print("load average after:", load)


if __name__ == "__main__":
    main()
