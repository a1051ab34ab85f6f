"""The floor under the idle master's heartbeat cost (issue 24, S1): what receiving N workers' heartbeats costs a
process before any master logic runs, for the two ways a heartbeat can travel.

- ``app``: one zmq message per heartbeat, read by a bare Python loop (``poll`` + ``recv_multipart``, no HMAC, no
  reply, no bookkeeping): the least today's master (``server/master.py``) could spend per heartbeat.
- ``zmtp``: no message at all; each peer's socket sends ZMTP PING frames (``ZMQ_HEARTBEAT_IVL``) that libzmq's
  I/O thread answers with PONGs, and ``ZMQ_HEARTBEAT_TTL`` asks the receiving side to drop a connection silent for
  that long: liveness handled entirely in C.

The peers (one child process, a DEALER socket each) start their heartbeats at spread phases, as workers started
apart do (heartbeats arriving one at a time, not in bursts). Rounds alternate the two modes; the receiving process's
CPU (all its threads: Python and zmq's I/O thread) is read with psutil over a window after a warm-up::

    python benchmarks/scale/bench_heartbeat_floor.py --peers 1000 --interval-s 0.5 --rounds 2

On a machine shared with other work, run it under ``chrt -f 5`` (root) to measure like a quiet machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

import psutil
import zmq


def _peers(address: str, n: int, interval_s: float, mode: str, ttl_s: float, ready, stop) -> None:
    ctx = zmq.Context()
    socks = []
    for _ in range(n):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if mode == "zmtp":
            sock.setsockopt(zmq.HEARTBEAT_IVL, int(interval_s * 1000))
            sock.setsockopt(zmq.HEARTBEAT_TTL, int(ttl_s * 1000))
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(ttl_s * 1000))
        sock.connect(address)
        socks.append(sock)
        if mode == "zmtp":
            time.sleep(interval_s / n)  # spread the PING timers' phases
    ready.set()
    body = b"x" * 120  # about a heartbeat with its metrics
    while not stop.is_set():
        if mode != "app":
            stop.wait(0.05)
            continue
        t0 = time.monotonic()
        for i, sock in enumerate(socks):
            sock.send_multipart([b"h" * 32, body])
            time.sleep(max(0.0, t0 + interval_s * (i + 1) / n - time.monotonic()))  # one at a time, spread
    for sock in socks:
        sock.close()
    ctx.term()


def measure(mode: str, n: int, interval_s: float, warmup_s: float, window_s: float) -> tuple[float, float]:
    """Returns (CPU of this process in % of one core, messages per second read) over the window."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    ready, stop = mp.Event(), mp.Event()
    child = mp.Process(target=_peers, args=(f"tcp://127.0.0.1:{port}", n, interval_s, mode, 3 * interval_s,
                                            ready, stop), daemon=True)
    child.start()
    me = psutil.Process()
    deadline = time.monotonic() + 120
    while not ready.wait(0.05):
        router.poll(0)
        if time.monotonic() > deadline:
            raise TimeoutError("the peers did not connect within 120 s")
    start = time.monotonic() + warmup_s
    end = start + window_s
    c0, count = None, 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if c0 is None and now >= start:
            c0, count = sum(me.cpu_times()[:2]), 0
        if router.poll(100):
            while True:
                try:
                    router.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                count += 1
    cpu = (sum(me.cpu_times()[:2]) - c0) / window_s
    stop.set()
    child.join(10)
    router.close()
    ctx.term()
    return 100 * cpu, count / window_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", type=int, default=1000)
    parser.add_argument("--interval-s", type=float, default=0.5, help="each peer's heartbeat interval")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup-s", type=float, default=3.0)
    parser.add_argument("--window-s", type=float, default=8.0)
    args = parser.parse_args()
    if args.peers < 1 or args.interval_s <= 0 or args.rounds < 1:
        parser.error("--peers and --rounds must be >= 1 and --interval-s > 0")
    results: dict[str, list[float]] = {"app": [], "zmtp": []}
    for r in range(args.rounds):
        for mode in (("app", "zmtp") if r % 2 == 0 else ("zmtp", "app")):
            cpu, rate = measure(mode, args.peers, args.interval_s, args.warmup_s, args.window_s)
            results[mode].append(cpu)
            print(f"round {r} {mode:4s}: {cpu:5.1f} % of a core, {rate:7.0f} messages/s read "
                  f"({args.peers} peers every {args.interval_s:g} s)", flush=True)
    app, zmtp = statistics.median(results["app"]), statistics.median(results["zmtp"])
    print(f"median: app {app:.1f} %, zmtp {zmtp:.1f} %, app / zmtp {app / max(zmtp, 1e-9):.1f}x")


if __name__ == "__main__":
    main()
