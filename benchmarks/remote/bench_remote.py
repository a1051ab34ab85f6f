"""parl-remote against multiprocessing, raw pyzmq and Ray: the figures of issue 3 in one run.

Every figure runs ours and its peers interleaved (A, B, C, A, B, C, ...) for ``--rounds`` rounds and
reports medians, with ``/proc/loadavg`` recorded before and after. Ratios are printed; ``--write-readme``
puts the table into benchmarks/README.md under "## Remote".

    python benchmarks/remote/bench_remote.py --rounds 5 [--no-ray] [--write-readme]

Figures (targets from the issue):
  R1 synchronous trivial call rate        >= 1.1x Pool.apply, >= 55% of raw pyzmq REQ/REP
  R2 1,000 pipelined futures, one actor   >= 50,000 calls/s
  R3 echo of a 1 / 10 / 100 MiB array      <= 0.5 / 4 / 25 ms
  R4 connect + create actor + first call  <= 50 ms
  R5 idle memory of a 2-CPU cluster       <= 250 MiB
  R6 2 actors x sum(range(3e7)) vs serial >= 1.9x on 2 idle cores
  R7 kill -9 of an actor -> ActorDiedError <= 3 s
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import pathlib
import pickle
import platform
import re
import signal
import statistics
import sys
import threading
import time

import numpy as np
import psutil
import zmq

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.cluster import LocalCluster

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
WINDOW_S = 0.6


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


@xparl.remote_class
class Echo:
    def small(self):
        return b"ok"

    def echo(self, value):
        return value


@xparl.remote_class(wait=False)
class EchoFuture:
    def small(self):
        return b"ok"


@xparl.remote_class(wait=False)
class Summer:
    def total(self, n):
        return sum(range(n))

    def sleep(self, seconds):
        time.sleep(seconds)


@xparl.remote_class
class Sleeper:
    def sleep(self, seconds):
        time.sleep(seconds)


def small() -> bytes:
    return b"ok"


def total(n: int) -> int:
    return sum(range(n))


# ------------------------------------------------------------------------------------------ peers
def _rep_server(endpoint: str, ready) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    ready.set()
    while True:
        frames = sock.recv_multipart(copy=False)
        request = pickle.loads(frames[0].buffer, buffers=[f.buffer for f in frames[1:]])
        if request is None:
            sock.send(b"")
            return
        name, args = request
        result = b"ok" if name == "small" else args[0]
        buffers = []
        stream = pickle.dumps(result, protocol=5, buffer_callback=buffers.append)
        sock.send_multipart([stream, *[b.raw() for b in buffers]], copy=False)


class RawZmq:
    """The floor: a REQ/REP pair exchanging pickle protocol 5 (+ out-of-band buffers).

    Over TCP loopback (the issue's reference), or with ``ipc=True`` over an abstract Unix socket, the
    transport parl-remote uses between processes of one host.
    """

    def __init__(self, ipc: bool = False) -> None:
        with socketserver_port() as port:
            self.port = port
        endpoint = f"ipc://@xparl-bench-{os.getpid()}-{port}" if ipc else f"tcp://127.0.0.1:{port}"
        ready = mp.Event()
        self.proc = mp.Process(target=_rep_server, args=(endpoint, ready), daemon=True)
        self.proc.start()
        ready.wait(10)
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.connect(endpoint)

    def call(self, name: str, *args):
        buffers = []
        stream = pickle.dumps((name, args), protocol=5, buffer_callback=buffers.append)
        self.sock.send_multipart([stream, *[b.raw() for b in buffers]], copy=False)
        frames = self.sock.recv_multipart(copy=False)
        return pickle.loads(frames[0].buffer, buffers=[f.buffer for f in frames[1:]])

    def close(self) -> None:
        self.sock.send(pickle.dumps(None))
        self.sock.recv()
        self.proc.join(5)
        self.sock.close(0)
        self.ctx.term()


class socketserver_port:  # noqa: N801 - a tiny context manager
    def __enter__(self) -> int:
        import socket

        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.s.close()


def _pipe_server(conn) -> None:
    while True:
        value = conn.recv()
        if value is None:
            return
        conn.send(value)


# ------------------------------------------------------------------------------------- measuring
def rate(fn, window_s: float = WINDOW_S) -> float:
    """Calls per second of ``fn`` over a time window (after a short warm-up)."""
    for _ in range(50):
        fn()
    n = 0
    start = time.perf_counter()
    deadline = start + window_s
    while True:
        for _ in range(20):
            fn()
        n += 20
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_median(fn, repeats: int = 5) -> float:
    """Median duration of ``repeats`` calls (one warm-up call first)."""
    fn()
    return statistics.median(timed(fn) for _ in range(repeats))


def interleave(rounds: int, contenders: dict) -> dict[str, list[float]]:
    results = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            results[name].append(fn())
    return results


def med(values: list[float]) -> float:
    return statistics.median(values)


# --------------------------------------------------------------------------------------- figures
def cpu_per_call_us(fn, server_pid: int, n: int = 3000) -> tuple[float, float]:
    """CPU microseconds per call of ``fn``: (this process, all threads; the serving process)."""
    me, server = psutil.Process(), psutil.Process(server_pid)

    def cpu(proc: psutil.Process) -> float:
        t = proc.cpu_times()
        return t.user + t.system

    for _ in range(100):
        fn()
    before = cpu(me), cpu(server)
    for _ in range(n):
        fn()
    after = cpu(me), cpu(server)
    return (after[0] - before[0]) / n * 1e6, (after[1] - before[1]) / n * 1e6


def bench_calls(rounds: int, use_ray: bool) -> dict:
    actor = Echo()
    os.environ["XPARL_UNIX_STREAM"] = "0"  # the same actor class over the job's zmq ipc:// endpoint
    try:
        actor_ipc = Echo()
    finally:
        del os.environ["XPARL_UNIX_STREAM"]
    future_actor = EchoFuture()
    raw = RawZmq()
    raw_ipc = RawZmq(ipc=True)
    pool = mp.Pool(2)
    parent, child = mp.Pipe()
    pipe_proc = mp.Process(target=_pipe_server, args=(child,), daemon=True)
    pipe_proc.start()

    def pipe_call():
        parent.send("ok")
        parent.recv()

    sync = {
        "parl-remote": lambda: rate(actor.small),
        "parl-remote over zmq ipc": lambda: rate(actor_ipc.small),
        "Pool.apply": lambda: rate(lambda: pool.apply(small)),
        "raw zmq REQ/REP": lambda: rate(lambda: raw.call("small")),
        "raw zmq REQ/REP ipc": lambda: rate(lambda: raw_ipc.call("small")),
        "mp.Pipe": lambda: rate(pipe_call),
    }

    def ours_pipelined():
        futures = [future_actor.small() for _ in range(1000)]
        for f in futures:
            f.get()

    def pool_pipelined():
        results = [pool.apply_async(small) for _ in range(1000)]
        for r in results:
            r.get()

    pipelined = {
        "parl-remote": lambda: 1000 / timed(ours_pipelined),
        "Pool.apply_async": lambda: 1000 / timed(pool_pipelined),
    }
    ray_actor = None
    if use_ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

        @ray.remote
        class RayEcho:
            def small(self):
                return b"ok"

            def echo(self, value):
                return value

        ray_actor = RayEcho.remote()
        ray.get(ray_actor.small.remote())
        sync["Ray"] = lambda: rate(lambda: ray.get(ray_actor.small.remote()))
        pipelined["Ray"] = lambda: 1000 / timed(lambda: ray.get([ray_actor.small.remote() for _ in range(1000)]))
    for _ in range(2):  # warm-up
        ours_pipelined()
    out = {"sync": interleave(rounds, sync), "pipelined": interleave(rounds, pipelined)}
    cpu = {"parl-remote": [], "parl-remote over zmq ipc": [], "raw zmq REQ/REP ipc": []}
    for _ in range(rounds):
        cpu["parl-remote"].append(cpu_per_call_us(actor.small, actor._xparl_actor.pid))
        cpu["parl-remote over zmq ipc"].append(cpu_per_call_us(actor_ipc.small, actor_ipc._xparl_actor.pid))
        cpu["raw zmq REQ/REP ipc"].append(cpu_per_call_us(lambda: raw_ipc.call("small"), raw_ipc.proc.pid))
    out["cpu_us"] = cpu

    arrays = {mb: np.random.default_rng(0).random(mb * 2**20 // 8) for mb in (1, 10, 100)}

    def pipe_echo(a):
        parent.send(a)
        parent.recv()

    echo = {}
    for mb, array in arrays.items():
        echo[f"parl-remote {mb} MiB"] = lambda a=array: timed_median(lambda: actor.echo(a)) * 1000
        echo[f"raw zmq {mb} MiB"] = lambda a=array: timed_median(lambda: raw.call("echo", a)) * 1000
        echo[f"mp.Pipe {mb} MiB"] = lambda a=array: timed_median(lambda: pipe_echo(a)) * 1000
        if ray_actor is not None:
            import ray

            echo[f"Ray {mb} MiB"] = lambda a=array: timed_median(lambda: ray.get(ray_actor.echo.remote(a))) * 1000
    out["echo_ms"] = interleave(rounds, echo)
    parent.send(None)
    pipe_proc.join(5)
    pool.close()
    pool.join()
    raw.close()
    raw_ipc.close()
    if use_ray:
        import ray

        ray.shutdown()
    return out


def bench_connect(rounds: int, cluster: LocalCluster) -> list[float]:
    times = []
    status = ClusterClient(cluster.address, token=cluster.token)
    for _ in range(rounds + 1):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and status.status()["cpus"]["used"] != 0:
            time.sleep(0.05)
        time.sleep(0.3)  # let the replacement job finish starting
        start = time.perf_counter()
        xparl.connect(cluster.address, token=cluster.token)
        actor = Echo()
        actor.small()
        times.append((time.perf_counter() - start) * 1000)
        del actor
        xparl.disconnect()
    status.close()
    return times[1:]


def bench_memory(cluster: LocalCluster) -> dict:
    status = ClusterClient(cluster.address, token=cluster.token)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and status.status()["cpus"]["used"] != 0:
        time.sleep(0.05)
    status.close()
    time.sleep(1.0)
    procs = [psutil.Process(pid) for pid in cluster.pids()]
    procs += [c for p in procs for c in p.children(recursive=True)]
    rss = sum(p.memory_info().rss for p in procs) / 2**20
    uss = sum(p.memory_full_info().uss for p in procs) / 2**20
    pss = sum(getattr(p.memory_full_info(), "pss", 0) for p in procs) / 2**20
    return {"processes": len(procs), "rss_mb": rss, "uss_mb": uss, "pss_mb": pss}


def bench_gil(rounds: int, n: int) -> dict:
    actors = [Summer(), Summer()]
    for a in actors:
        a.total(10).get()
    jobs = [psutil.Process(a._xparl_actor.pid) for a in actors]
    me = psutil.Process()
    split: list[dict] = []  # CPU evidence of each parallel run: who used the cores

    def cpu_s(proc: psutil.Process) -> float:
        t = proc.cpu_times()
        return t.user + t.system

    def parallel():
        before = [cpu_s(p) for p in jobs] + [cpu_s(me)]
        psutil.cpu_percent(percpu=True)
        start = time.perf_counter()
        futures = [a.total(n) for a in actors]
        out = [f.get() for f in futures]
        wall = time.perf_counter() - start
        busy = psutil.cpu_percent(percpu=True)
        after = [cpu_s(p) for p in jobs] + [cpu_s(me)]
        used = [b - a for a, b in zip(before, after, strict=True)]
        split.append({"wall": wall, "actors_cpu": used[:2], "client_cpu": used[2], "cores_busy": busy})
        return out

    def serial():
        return [total(n), total(n)]

    with mp.get_context("fork").Pool(2) as pool:  # the peer a user would otherwise pick, same run
        pool.map(total, [10, 10], chunksize=1)
        results = interleave(rounds, {
            "parl-remote 2 actors": lambda: timed(parallel),
            "mp.Pool 2 processes": lambda: timed(lambda: pool.map(total, [n, n], chunksize=1)),
            "serial": lambda: timed(serial),
        })
    results["split"] = split
    actors.clear()
    return results


def bench_death(rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        actor = Sleeper()
        actor.sleep(0)
        seen = {}

        def call(actor=actor, seen=seen):
            try:
                actor.sleep(30)
            except xparl.ActorDiedError:
                seen["t"] = time.perf_counter()

        thread = threading.Thread(target=call)
        thread.start()
        time.sleep(0.2)
        killed = time.perf_counter()
        os.kill(actor._xparl_actor.pid, signal.SIGKILL)
        thread.join(10)
        times.append(seen.get("t", float("inf")) - killed)
        del actor
    return times


# ---------------------------------------------------------------------------------------- report
def report(res: dict, args) -> str:
    sync = {k: med(v) for k, v in res["calls"]["sync"].items()}
    pipe = {k: med(v) for k, v in res["calls"]["pipelined"].items()}
    echo = {k: med(v) for k, v in res["calls"]["echo_ms"].items()}
    sync_ratio_pool = statistics.median(
        a / b for a, b in zip(res["calls"]["sync"]["parl-remote"], res["calls"]["sync"]["Pool.apply"], strict=True)
    )
    sync_ratio_zmq = statistics.median(
        a / b for a, b in zip(res["calls"]["sync"]["parl-remote"], res["calls"]["sync"]["raw zmq REQ/REP"], strict=True)
    )
    sync_ratio_ipc = statistics.median(
        a / b
        for a, b in zip(res["calls"]["sync"]["parl-remote"], res["calls"]["sync"]["raw zmq REQ/REP ipc"], strict=True)
    )
    gil = res["gil"]
    speedups = [s / p for s, p in zip(gil["serial"], gil["parl-remote 2 actors"], strict=True)]
    pool_speedups = [s / p for s, p in zip(gil["serial"], gil["mp.Pool 2 processes"], strict=True)]
    lines = [
        f"Date: {datetime.date.today().isoformat()}. Machine: {os.cpu_count()}-core VM, Python "
        f"{platform.python_version()}, pyzmq {zmq.__version__}, {res['ray_version']}. "
        f"Command: `python benchmarks/remote/bench_remote.py --rounds {args.rounds}`; medians of {args.rounds} "
        "interleaved rounds (R3: each round the median of 5 calls).",
        f"Load average (1/5/15 min) before: {res['load_before']}; after: {res['load_after']} "
        "(the CPU was shared with other jobs: absolute rates are noisy, the same-run ratios less so).",
        "",
        "| figure | parl-remote | peers (same run) | target | met |",
        "|---|---|---|---|---|",
    ]
    peers = ", ".join(f"{k} {v:,.0f}/s" for k, v in sync.items() if not k.startswith("parl-remote"))
    ok = sync_ratio_pool >= 1.1 and sync_ratio_zmq >= 0.55
    lines.append(
        f"| R1 sync trivial call (same host: Unix stream) | {sync['parl-remote']:,.0f} calls/s "
        f"({sync_ratio_pool:.2f}x Pool.apply, {sync_ratio_zmq:.0%} of raw zmq, {sync_ratio_ipc:.0%} of raw zmq over "
        f"ipc; with XPARL_UNIX_STREAM=0, over zmq ipc: {sync['parl-remote over zmq ipc']:,.0f}/s) | {peers} | "
        ">= 1.1x Pool.apply, >= 55% of raw zmq | "
        f"{'yes' if ok else ('no (the raw zmq part: yes)' if sync_ratio_zmq >= 0.55 else 'no')} |"
    )
    cpu = {k: (med([c for c, _ in v]), med([j for _, j in v])) for k, v in res["calls"]["cpu_us"].items()}
    lines.append(
        "| R1 CPU per sync call (psutil; caller incl. its threads + serving process) | "
        f"{cpu['parl-remote'][0]:.0f} + {cpu['parl-remote'][1]:.0f} us (over zmq ipc: "
        f"{cpu['parl-remote over zmq ipc'][0]:.0f} + {cpu['parl-remote over zmq ipc'][1]:.0f} us) | raw zmq REQ/REP "
        f"ipc {cpu['raw zmq REQ/REP ipc'][0]:.0f} + {cpu['raw zmq REQ/REP ipc'][1]:.0f} us | - | - |"
    )
    peers = ", ".join(f"{k} {v:,.0f}/s" for k, v in pipe.items() if k != "parl-remote")
    lines.append(
        f"| R2 1,000 pipelined futures, one actor | {pipe['parl-remote']:,.0f} calls/s | {peers} | >= 50,000/s | "
        f"{'yes' if pipe['parl-remote'] >= 50000 else 'no'} |"
    )
    for mb, target in ((1, 0.5), (10, 4.0), (100, 25.0)):
        ours = echo[f"parl-remote {mb} MiB"]
        peers = ", ".join(
            f"{k.rsplit(' ', 2)[0]} {v:.1f} ms" for k, v in echo.items() if k.endswith(f" {mb} MiB") and "parl" not in k
        )
        lines.append(
            f"| R3 echo of a {mb} MiB float64 array | {ours:.1f} ms | {peers} | <= {target} ms | "
            f"{'yes' if ours <= target else 'no'} |"
        )
    connect = med(res["connect_ms"])
    lines.append(
        f"| R4 connect() to a running cluster + create an actor + first call | {connect:.1f} ms | "
        "(anchors: Ray init 3.2 s + actor 365 ms; PARL 2.2.1 19-69 ms + 9-67 ms) | <= 50 ms | "
        f"{'yes' if connect <= 50 else 'no'} |"
    )
    mem = res["memory"]
    lines.append(
        f"| R5 idle memory of a 2-CPU cluster ({mem['processes']} processes: master, worker, zygote, 2 jobs) | "
        f"RSS sum {mem['rss_mb']:.0f} MiB (PSS {mem['pss_mb']:.0f}, USS {mem['uss_mb']:.0f}) | (anchors: Ray 712 MiB, "
        f"PARL 2.2.1 ~1.1 GB) | <= 250 MiB | {'yes' if mem['rss_mb'] <= 250 else 'no'} |"
    )
    lines.append(
        f"| R6 2 actors x sum(range({args.gil_n:.0e})) vs serial | {statistics.median(speedups):.2f}x "
        f"(serial {med(gil['serial']):.2f} s, actors {med(gil['parl-remote 2 actors']):.2f} s) | mp.Pool(2) "
        f"{statistics.median(pool_speedups):.2f}x ({med(gil['mp.Pool 2 processes']):.2f} s); anchors on a quiet "
        "box: Ray 2.09x, mp.Pool 2.01x, PARL 1.83x | >= 1.9x on 2 idle cores | "
        f"{'yes' if statistics.median(speedups) >= 1.9 else 'no'} |"
    )
    split = gil["split"]
    share = [statistics.median(r["actors_cpu"][i] / r["wall"] for r in split) for i in (0, 1)]
    lines.append(
        f"| R6 CPU split during the parallel runs (psutil, medians) | actors {share[0]:.0%} + {share[1]:.0%} of a "
        f"core each, client {statistics.median(r['client_cpu'] for r in split):.2f} s CPU per run | cores busy "
        f"(whole machine) {statistics.median(sum(r['cores_busy']) / len(r['cores_busy']) for r in split):.0f}% | "
        "2 x 100% when idle | - |"
    )
    death = res["death_s"]
    lines.append(
        f"| R7 kill -9 of an actor's process -> ActorDiedError | {med(death):.2f} s (max {max(death):.2f} s) | "
        f"(PARL 2.2.1: 30-60 s) | <= 3 s | {'yes' if max(death) <= 3 else 'no'} |"
    )
    return "\n".join(lines)


NOTES = """
Notes:
- R1: after INIT a same-host client moves its whole connection to the job's abstract-namespace Unix stream
  socket (`transport/unix.py`, `transport/stream_io.py`): a synchronous call is pickle -> HMAC-sign -> one
  `sendmsg` -> one blocking `recv_into` -> verify -> unpickle in the caller's thread; the job polls, reads,
  runs the method and answers the same way.
  No zmq I/O thread is on the path (zmq's eventfd wake-up and thread hand-off on both sides of each message
  were the floor of the zmq transport: ~5.2k calls/s, 1.07x Pool.apply). The messages, their HMAC and the
  verify-before-unpickle are the zmq ones; the job accepts only peers of its own uid (SO_PEERCRED) and the
  client checks the listener is the granted job's pid. `XPARL_UNIX_STREAM=0` keeps the zmq ipc path (its rate
  is in the same row). Between hosts nothing changes (zmq over TCP), so "raw zmq" (TCP loopback, the issue's
  reference) is a transport our same-host calls no longer use.
- R2: future-mode calls queued together are coalesced into one BATCH message each way (one signature, one
  send), which is what lifts pipelined calls above Pool.apply_async.
- R3: each side of a same-host connection keeps reusable, pre-faulted `/dev/shm` arenas (mode 0600, unlinked
  when the connection ends): sending a large array is one memcpy into mapped pages, receiving is a zero-copy
  read-only view, and a region is reused only after the receiver's view was freed (release entries ride in
  the signed manifest of its next message). Before: one fresh tmpfs file per message, 1.6 / 12 / 110 ms
  (page allocation and zeroing, ~50 ms per 100 MiB). The first call of a new size pays the arena's
  allocation once. Between hosts, arrays go as zero-copy zmq frames, HMAC-signed.
- R6: the same run times `multiprocessing.Pool(2)` on the same work as the peer. On this 2-vCPU VM neither
  reaches 1.9x reliably even at a load average below 1 (mp.Pool measured 1.80-1.93x over five runs, parl-remote
  1.76-1.85x, 1.82x vs 1.87x in this run; 15 interleaved rounds with nothing else running, 09:14 UTC: 1.82x vs
  1.81x, per-round 1.41-2.00x vs 1.69-2.02x); the "CPU split" row shows where the time goes: each actor's CPU time
  per run equals the serial cost of one sum (no hidden serialisation: the client and the cluster processes use
  ~0 CPU while the actors compute). Measured separately (psutil / `time.process_time`, one sum at a time): a sum
  costs the same CPU time in the client, in an actor and in an mp.Pool worker (0.35-0.38 s each); with both
  cores busy every process's sum takes ~8-10 % longer, for mp.Pool workers as for actors, which caps both near
  1.85x here. It is the workload on this VM, not the runtime: two `mp.Pool` workers at once (7 rounds, 09:47
  UTC, nothing else running) reach 1.97x on a C loop (sha256 of 4 KiB blocks) but 1.78x on this Python sum.
  Idle wake-ups that could steal a busy core were cut: zygote 20/s -> 0 (SIGCHLD wake-up fd), each idle job
  10/s -> 1/s, worker 11.8/s -> 3.4/s, the client's reactor 10/s -> 1/s (master: ~5/s).
- R7: a same-host actor's stream ends the moment its process dies (EOF from the kernel); the client then asks
  the master for the cause (before the stream transport: 0.9 s through the zmq socket monitor).
"""


def write_readme(table: str) -> None:
    """Replaces the "## Remote" section of benchmarks/README.md by this run's table and notes; its "###"
    subsections (hand-written comparisons) are kept after them."""
    section = "## Remote\n\n" + table + "\n" + NOTES
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    pattern = re.compile(r"^## Remote\n.*?(?=^## |\Z)", re.S | re.M)
    match = pattern.search(text)
    if match:
        kept = re.findall(r"^### .*?(?=^### |\Z)", match.group(0), re.S | re.M)
        section = section.rstrip("\n") + "\n\n" + "".join(kept) if kept else section
        text = pattern.sub(lambda _: section + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    README.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gil-n", type=int, default=3 * 10**7)
    parser.add_argument("--no-ray", action="store_true", help="skip Ray even when installed")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    try:
        import ray

        ray_version = f"ray {ray.__version__}"
        use_ray = not args.no_ray
    except ImportError:
        ray_version, use_ray = "ray not installed", False
    res = {"load_before": loadavg(), "ray_version": ray_version}
    print("load average before:", res["load_before"], flush=True)
    xparl.connect(cpu_num=3)  # R1 runs 3 actors at once (stream, zmq ipc, futures)
    res["calls"] = bench_calls(args.rounds, use_ray)
    print("calls done", flush=True)
    res["gil"] = bench_gil(args.rounds, args.gil_n)
    print("GIL demo done", flush=True)
    res["death_s"] = bench_death(args.rounds)
    xparl.disconnect()
    cluster = LocalCluster(cpu_num=2, parent_pid=os.getpid())
    cluster.start()
    try:
        res["connect_ms"] = bench_connect(args.rounds, cluster)
        res["memory"] = bench_memory(cluster)
    finally:
        cluster.stop()
    res["load_after"] = loadavg()
    table = report(res, args)
    print()
    print(table)
    if args.write_readme:
        write_readme(table)
        print(f"\nwritten to {README}")


if __name__ == "__main__":
    sys.exit(main())
