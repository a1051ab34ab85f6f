"""Run one learning-curve command (an example's ``train.py``) and record what the machine did meanwhile.

A learning curve's wall-clock means little without the load it was taken at. This wrapper starts the command in
a session of its own (so that its scheduling group can be niced apart from the rest of the machine), and every
``--poll-s`` seconds records the load average and the CPU seconds of the command's whole process tree (the
learner, the embedded cluster, every remote actor and its EnvPool threads), read with psutil. When the command
ends it writes ``--out`` (JSON):

- ``command``, ``commit`` (``git rev-parse HEAD`` of this tree), ``start_utc`` / ``end_utc``, ``wall_s``,
  ``returncode``;
- ``loadavg_1m``: ``min`` / ``median`` / ``max`` of the 1-minute load average over the run, and ``samples``;
- ``cpu_s``: CPU seconds (user + system) of the process tree, summed over every process seen (a process that
  ended between two polls counts with its last reading), and ``cpu_s_by_name`` (per command name);
- ``machine``: logical CPUs, the CPU model, memory (GiB).

SIGINT / SIGTERM are passed on to the command (the examples then write their summary), and the record is still
written. The command's own output goes to this process's stdout / stderr.

Usage::

    python benchmarks/atari/run_curve.py --out runs/pong-seed0.run.json --autogroup-nice 15 -- \\
        python examples/impala/train.py --env PongNoFrameskip-v4 --envpool --seed 0 --no-progress
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def commit() -> str:
    """This tree's ``HEAD`` commit, with ``-dirty`` when it has uncommitted changes; ``""`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("-dirty" if dirty else "")


def portable(argv: list[str]) -> list[str]:
    """``argv`` without this machine's paths: a path inside this tree relative to it, another absolute path by its
    last component (``/some/venv/bin/python`` -> ``python``), so that a committed record names no machine."""
    out = []
    for arg in argv:
        if os.path.isabs(arg):
            path = Path(arg)
            arg = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        out.append(arg)
    return out


def machine() -> dict:
    """Logical CPUs, CPU model and memory of this machine."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model,
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1)}


def set_autogroup_nice(pid: int, nice: int) -> None:
    """Nice the scheduling group (autogroup) of ``pid``'s session: where the kernel groups tasks by session, plain
    ``nice`` orders tasks only within their group. Raises OSError where the kernel has no autogroups."""
    with open(f"/proc/{pid}/autogroup", "w") as f:
        f.write(str(nice))


class TreeCPU:
    """CPU seconds of a process tree, summed over every process seen (the last reading of each)."""

    def __init__(self, root_pid: int) -> None:
        self.root = psutil.Process(root_pid)
        self.seen: dict[tuple[int, float], tuple[str, float]] = {}  # (pid, create_time) -> (name, cpu_s)

    def poll(self, autogroup_nice: int | None = None) -> None:
        """Read every live process of the tree; with ``autogroup_nice``, nice each one's scheduling group too (the
        embedded cluster's master and worker start sessions, hence scheduling groups, of their own)."""
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for proc in procs:
            try:
                if autogroup_nice is not None and (proc.pid, proc.create_time()) not in self.seen:
                    try:
                        set_autogroup_nice(proc.pid, autogroup_nice)
                    except OSError:
                        pass
                with proc.oneshot():
                    times = proc.cpu_times()
                    key = (proc.pid, proc.create_time())
                    name = self.seen.get(key, (None,))[0] or " ".join(portable(proc.cmdline()[:3]))
                self.seen[key] = (name, times.user + times.system)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue

    def total(self) -> float:
        return sum(cpu for _, cpu in self.seen.values())

    def by_name(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, cpu in self.seen.values():
            out[name] = round(out.get(name, 0.0) + cpu, 1)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="where the JSON record goes")
    parser.add_argument("--poll-s", type=float, default=5.0, help="seconds between two readings")
    parser.add_argument("--autogroup-nice", type=int, default=None,
                        help="nice value (-20..19) for the command's scheduling group; default: leave it")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- python examples/impala/train.py ...")
    if args.poll_s <= 0:
        parser.error(f"--poll-s must be > 0, got {args.poll_s}")
    start_utc = dt.datetime.now(dt.timezone.utc)
    tree_commit = commit()  # the code that runs: read before the command starts (the tree may change meanwhile)
    start = time.monotonic()
    # SIGINT back to its default in the command: a shell starts background jobs with SIGINT ignored, and Python keeps
    # an ignored SIGINT ignored (no KeyboardInterrupt), so the SIGINT passed on below would do nothing
    proc = subprocess.Popen(command, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if args.autogroup_nice is not None:
        try:
            set_autogroup_nice(proc.pid, args.autogroup_nice)
        except OSError as err:
            print(f"run_curve: could not nice the command's scheduling group ({err}); going on", file=sys.stderr)
            args.autogroup_nice = None
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    tree = TreeCPU(proc.pid)
    loads: list[float] = []
    while True:
        tree.poll(args.autogroup_nice)
        loads.append(os.getloadavg()[0])
        try:
            returncode = proc.wait(timeout=args.poll_s)
            break
        except subprocess.TimeoutExpired:
            continue
    record = {
        "command": portable(command), "commit": tree_commit,
        "start_utc": start_utc.isoformat(timespec="seconds"),
        "end_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(time.monotonic() - start, 1), "returncode": returncode,
        "loadavg_1m": {"min": min(loads), "median": statistics.median(loads), "max": max(loads),
                       "samples": len(loads), "poll_s": args.poll_s},
        "cpu_s": round(tree.total(), 1), "cpu_s_by_name": tree.by_name(), "machine": machine(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=2)
    print(json.dumps({k: record[k] for k in ("wall_s", "returncode", "loadavg_1m", "cpu_s")}), file=sys.stderr)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
