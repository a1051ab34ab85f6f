"""The same ``@remote_class`` code on xparl and on Ray (our Ray engine), beside plain Ray actors, in one run.

Rows (medians over ``--rounds`` interleaved rounds, the order turning each round: xparl, Ray engine, plain Ray;
Ray engine, plain Ray, xparl; ...):
  R1 synchronous trivial call rate (calls/s)
  R2 1,000 pipelined futures on one actor, each result read by itself (calls/s): ``future.get()`` for xparl and
     the Ray engine, ``ray.get(ref)`` per ref for plain Ray (``ray.get`` of the whole list is faster still: a
     PARL future has no batched read)
  R3 echo of a 1 / 10 / 100 MiB float64 array (ms)
  IMPALA CartPole-v1: env frames/s consumed by the learner of examples/impala (2 actors, 8 envs x 20 steps per
     unroll, 2 calls in flight per actor, a V-trace update per unroll), for ``--impala-unrolls`` unrolls
Target (issue 18): the Ray engine within 1.2x of plain Ray actors on every row.

Ray runs as a local cluster started by this script (``ray.init(num_cpus=...)``); our engine joins it with
``parl.connect("ray")`` (Ray already initialised in this process), plain Ray actors are ``ray.remote`` classes
of the same code. xparl is the embedded cluster (``parl.connect()``).

    python benchmarks/remote/bench_engines.py --rounds 5 [--write-readme]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import os
import pathlib
import platform
import re
import statistics
import sys
import time

import numpy as np

import parl_remote as xparl

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "benchmarks" / "README.md"
IMPALA_DIR = ROOT / "examples" / "impala"
WINDOW_S = 0.6


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


class Echo:
    def small(self):
        return b"ok"

    def echo(self, value):
        return value


EchoRemote = xparl.remote_class(Echo)
EchoFutures = xparl.remote_class(wait=False)(Echo)


def rate(fn, window_s: float = WINDOW_S) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < window_s:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def timed_median(fn, repeats: int = 5) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Contender:
    """One way to reach actors: ``sync`` / ``pipelined`` / ``echo`` closures over one echo actor, and an IMPALA
    actor factory whose ``sample`` returns a concurrent future."""

    def __init__(self, name: str, connect, echo_sync, echo_futures, impala_actor) -> None:
        self.name, self.connect = name, connect
        self.echo_sync, self.echo_futures, self.impala_actor = echo_sync, echo_futures, impala_actor


def contenders(ray_cpus: int) -> tuple[list[Contender], object]:
    import ray

    sys.path.insert(0, str(IMPALA_DIR))
    import train as impala  # examples/impala/train.py: its Actor, model and IMPALA

    ray.init(num_cpus=ray_cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"working_dir": str(IMPALA_DIR), "env_vars": {"XPARL": "True"}})
    plain_echo = ray.remote(num_cpus=1)(Echo)
    plain_impala = ray.remote(num_cpus=1)(impala.Actor._original)

    class PlainEcho:  # the closures a contender needs, over a plain Ray actor
        def __init__(self):  # ready when made, as the proxies of @remote_class are
            self.actor = plain_echo.remote()
            ray.get(self.actor.__ray_ready__.remote())

        def small(self):
            return ray.get(self.actor.small.remote())

        def echo(self, value):
            return ray.get(self.actor.echo.remote(value))

        def small_future(self):
            return self.actor.small.remote()

    class PlainImpala:
        def __init__(self, *args):
            self.actor = plain_impala.remote(*args)
            ray.get(self.actor.__ray_ready__.remote())

        def sample(self, weights):
            return self.actor.sample.remote(weights).future()

    def plain_pipelined(actor):  # each result read by itself, as a PARL future's get() reads it
        return [ray.get(ref) for ref in [actor.small_future() for _ in range(1000)]]

    def ours_pipelined(actor):
        return [f.get() for f in [actor.small() for _ in range(1000)]]

    return [
        Contender("xparl", lambda: xparl.connect(cpu_num=ray_cpus), EchoRemote, (EchoFutures, ours_pipelined),
                  impala.Actor),
        Contender("Ray engine", lambda: xparl.connect("ray"), EchoRemote, (EchoFutures, ours_pipelined),
                  impala.Actor),
        Contender("plain Ray", lambda: None, PlainEcho, (PlainEcho, plain_pipelined), PlainImpala),
    ], impala


def impala_frames_per_s(contender: Contender, impala, unrolls: int) -> float:
    """The learner loop of examples/impala/train.py (without evaluation): env frames consumed per second."""
    import torch

    cfg = dict(impala.CONFIGS["vector"])
    probe = impala.make_env("CartPole-v1")
    model = impala.build_model(probe, cfg)
    probe.close()
    alg = impala.IMPALA(model, sample_batch_steps=20, gamma=cfg["gamma"], vf_loss_coeff=0.5, clip_rho_threshold=1.0,
                        clip_pg_rho_threshold=1.0, learning_rate=cfg["lr"], device="cpu")
    torch.set_num_threads(1)
    actors = [contender.impala_actor("CartPole-v1", 8, 20, cfg, seed) for seed in range(2)]
    weights = model.get_weights()
    pending = {}
    for slot, actor in enumerate(actors):
        for _ in range(2):
            pending[actor.sample(weights)] = slot
    frames, done_unrolls, start = 0, 0, None
    while done_unrolls < unrolls:
        done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
        for future in done:
            slot = pending.pop(future)
            batch = future.result()
            if start is None:  # the clock starts at the first unroll (actor start-up excluded)
                start = time.perf_counter()
            else:
                frames += batch["rewards"].size
            tm = impala.env_major
            alg.learn(tm(batch["obs"]), tm(batch["actions"]), tm(batch["behaviour_logits"]), tm(batch["rewards"]),
                      tm(batch["dones"]), cfg["lr"], cfg["entropy_coeff"])
            weights = model.get_weights()
            pending[actors[slot].sample(weights)] = slot
            done_unrolls += 1
    for future in pending:
        future.result()
    elapsed = time.perf_counter() - start
    del actors
    return frames / elapsed


def run(args) -> dict:
    arrays = {mb: np.random.default_rng(0).random(mb * 2**20 // 8) for mb in (1, 10, 100)}
    cons, impala = contenders(args.ray_cpus)
    results: dict[str, dict[str, list[float]]] = {c.name: {} for c in cons}

    def add(name, key, value):
        results[name].setdefault(key, []).append(value)

    for round_ in range(args.rounds):
        # the order turns every round, so that no contender always runs right after another's teardown
        for c in cons[round_ % len(cons):] + cons[:round_ % len(cons)]:
            c.connect()
            if args.impala_only:
                add(c.name, "IMPALA", impala_frames_per_s(c, impala, args.impala_unrolls))
                print(f"round {round_ + 1}/{args.rounds} {c.name}: IMPALA {results[c.name]['IMPALA'][-1]:.1f}",
                      flush=True)
                continue
            sync = c.echo_sync()
            add(c.name, "R1", rate(sync.small))
            future_cls, pipelined = c.echo_futures
            fut_actor = future_cls()
            pipelined(fut_actor)  # warm-up
            add(c.name, "R2", 1000 / timed_median(lambda a=fut_actor, p=pipelined: p(a), repeats=3))
            for mb, array in arrays.items():
                add(c.name, f"R3 {mb} MiB", timed_median(lambda a=array, s=sync: s.echo(a)) * 1000)
            del sync, fut_actor
            add(c.name, "IMPALA", impala_frames_per_s(c, impala, args.impala_unrolls))
            if c.name == "xparl":
                xparl.disconnect()
            print(f"round {round_ + 1}/{args.rounds} {c.name}: " + ", ".join(
                f"{k} {v[-1]:.1f}" for k, v in results[c.name].items()), flush=True)
    import ray

    xparl.disconnect()
    ray.shutdown()
    return {name: {k: statistics.median(v) for k, v in rows.items()} for name, rows in results.items()}


def report(med: dict, load_before: str, load_after: str, args) -> str:
    import ray

    rows = [("R1 sync call rate (calls/s)", "R1", True), ("R2 1,000 pipelined futures (calls/s)", "R2", True),
            ("R3 echo 1 MiB (ms)", "R3 1 MiB", False), ("R3 echo 10 MiB (ms)", "R3 10 MiB", False),
            ("R3 echo 100 MiB (ms)", "R3 100 MiB", False),
            ("IMPALA CartPole-v1, 2 actors (frames/s)", "IMPALA", True)]
    lines = [
        f"Measured {datetime.date.today()} on {platform.machine()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}, ray {ray.__version__}; `python benchmarks/remote/bench_engines.py --rounds "
        f"{args.rounds}`; medians of interleaved rounds; load average {load_before} before, {load_after} after.",
        "",
        "| row | xparl | Ray engine | plain Ray | Ray engine cost vs plain Ray (target <= 1.2x) | xparl vs plain Ray |",
        "|---|---|---|---|---|---|",
    ]
    for label, key, higher_better in rows:
        x, e, p = med["xparl"][key], med["Ray engine"][key], med["plain Ray"][key]
        cost = p / e if higher_better else e / p  # > 1: the engine is slower
        speed = x / p if higher_better else p / x  # > 1: xparl is faster
        lines.append(f"| {label} | {x:,.1f} | {e:,.1f} | {p:,.1f} | {cost:.2f}x | {speed:.2f}x faster |")
    return "\n".join(lines)


def write_readme(table: str) -> None:
    text = README.read_text()
    section = "## Remote engines: xparl, the Ray engine and plain Ray\n\n" + table + "\n"
    pattern = re.compile(r"## Remote engines: xparl, the Ray engine and plain Ray\n.*?(?=\n## |\Z)", re.S)
    text = pattern.sub(section.rstrip("\n"), text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    README.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ray-cpus", type=int, default=3, help="CPUs of the local Ray cluster and of xparl's")
    parser.add_argument("--impala-unrolls", type=int, default=300)
    parser.add_argument("--impala-only", action="store_true", help="only the IMPALA row (no table)")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    load_before = loadavg()
    med = run(args)
    if args.impala_only:
        print({name: round(rows["IMPALA"], 1) for name, rows in med.items()})
        return
    table = report(med, load_before, loadavg(), args)
    print(table)
    if args.write_readme:
        write_readme(table)


if __name__ == "__main__":
    main()
