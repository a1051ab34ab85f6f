"""Samples the CPU seconds of training runs over time, so that runs measured at different loads still compare.

On a shared machine the wall-clock of a run mostly measures the scheduler (how much of a core the run got), and
the runs of ours and of a peer rarely see the same load. This tracer appends, every ``--every`` seconds, one JSON
line per matching process tree: ``{"t": unix time, "pid", "start": unix start time, "cmd": argv joined,
"cpu_s": user + system seconds of the process, of its reaped children and of its live descendants}`` (EPyMARL's
parallel runner steps its envs in 10 child processes, our examples' remote actors are descendants too).
A process matches when its command line contains one of the patterns. ``bench_marl.py --parse --cpu-trace FILE``
turns the samples into env steps per CPU second and CPU seconds to the fixed return for every run it finds.

Usage::

    python benchmarks/marl/cpu_trace.py --out cpu.jsonl examples/qmix/train.py epymarl_run.py benchmarl_run.py
"""

from __future__ import annotations

import argparse
import json
import os
import time


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(ppid, own + reaped children's CPU seconds, start time in clock ticks since boot) of ``pid``."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    # fields[0] is the state (field 3 of proc(5)); utime stime cutime cstime are fields 14-17, starttime 22
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / tick, int(fields[19]) / tick


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def sample(patterns: list[str]) -> list[dict]:
    with open("/proc/uptime") as f:
        boot = time.time() - float(f.read().split()[0])
    stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(int(p))) is not None}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    now, out = time.time(), []
    for pid, (ppid, _, start) in stats.items():
        cmd = _cmdline(pid)
        if "cpu_trace" in cmd or not any(p in cmd for p in patterns) or any(p in _cmdline(ppid) for p in patterns):
            continue  # not a run, or a run's own child (counted in its tree)
        total, todo = 0.0, [pid]
        while todo:
            p = todo.pop()
            total += stats[p][1] if p in stats else 0.0
            todo.extend(children.get(p, []))
        out.append({"t": now, "pid": pid, "start": boot + start, "cmd": cmd, "cpu_s": round(total, 2)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("patterns", nargs="+", help="substrings of the command lines to follow")
    parser.add_argument("--out", required=True)
    parser.add_argument("--every", type=float, default=15.0)
    args = parser.parse_args()
    while True:
        rows = sample(args.patterns)
        with open(args.out, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        time.sleep(args.every)


if __name__ == "__main__":
    main()
