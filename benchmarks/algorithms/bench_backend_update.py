"""Time one ``learn()`` of the examples' DQN / SAC networks on torch and on paddle (optionally under cProfile).

The networks are the examples' own (``examples/dqn``, ``examples/sac``, built for the chosen backend), the
batches random but fixed; each pass runs ``--updates`` learn calls after 20 warm-up calls, and the minimum
over ``--passes`` passes is reported (the minimum is the least disturbed by other jobs on a shared machine).
With ``both`` as the backend, torch and paddle workers (one process each) alternate for ``--rounds`` rounds and
the ratio paddle / torch of the two minima is printed. With ``both --same-process`` the two algorithms live in
one process and alternate blocks of ``--updates`` calls (the order swapped every round, ``--rounds`` rounds):
on a VM whose speed drifts by 2x within minutes (benchmarks/README.md), only such interleaved blocks compare
the two; the median of the per-round ratios is printed. Torch is built and warmed up first, so that paddle's
``MKL_DEBUG_CPU_TYPE`` (set by its first ``parl.Model`` on an AMD CPU) reaches paddle's MKL only, as in a
process of each.

Usage::

    python benchmarks/algorithms/bench_backend_update.py dqn torch
    python benchmarks/algorithms/bench_backend_update.py sac paddle --profile
    OMP_NUM_THREADS=1 python benchmarks/algorithms/bench_backend_update.py dqn both --rounds 3
    OMP_NUM_THREADS=1 python benchmarks/algorithms/bench_backend_update.py sac both --same-process --rounds 30
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import re
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

import parl

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str):
    """Import ``examples/<name>/train.py`` as a module (it has no import-time side effects)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / name / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(algo: str, backend: str, rng: np.random.Generator):
    """``(algorithm, make_batch)``: the example's model and algorithm, and a function drawing one numpy batch."""
    if algo == "dqn":
        q_network, _ = _example("dqn").define_networks(backend)
        alg = parl.algorithms.DQN(q_network(4, 2), gamma=0.99, lr=1e-3, loss_type="huber", max_grad_norm=10.0,
                                  device="cpu")
        size, obs_dim = 64, 4
        action = lambda: rng.integers(0, 2, size).astype(np.int64)  # noqa: E731
    else:
        model = _example("sac").define_model(backend)(3, 1)
        alg = parl.algorithms.SAC(model, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                                  with_automatic_entropy_tuning=True, device="cpu")
        size, obs_dim = 256, 3
        action = lambda: rng.uniform(-1, 1, (size, 1)).astype(np.float32)  # noqa: E731

    def make_batch():
        obs = rng.normal(size=(size, obs_dim)).astype(np.float32)
        return obs, action(), rng.normal(size=size).astype(np.float32), obs[::-1].copy(), np.zeros(size, np.float32)

    return alg, make_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algo", choices=("dqn", "sac"))
    parser.add_argument("backend", choices=("torch", "paddle", "both"))
    parser.add_argument("--rounds", type=int, default=3, help="with 'both': torch / paddle worker pairs, alternating")
    parser.add_argument("--updates", type=int, default=100, help="learn() calls per pass")
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 35 (cumulative) of one pass")
    parser.add_argument("--same-process", action="store_true",
                        help="with 'both': one process, blocks of --updates calls alternating for --rounds rounds")
    args = parser.parse_args()
    if args.backend == "both":
        (compare_same_process if args.same_process else compare)(args)
        return
    if args.backend == "torch":
        import torch

        torch.set_num_threads(1)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(0)
    alg, make_batch = build(args.algo, args.backend, np.random.default_rng(0))
    batches = [[ops.tensor(a) for a in make_batch()] for _ in range(args.updates)]
    for batch in batches[:20]:
        alg.learn(*batch)
    best_ms = float("inf")
    for _ in range(args.passes):
        start = time.perf_counter()
        for batch in batches:
            alg.learn(*batch)
        best_ms = min(best_ms, (time.perf_counter() - start) / args.updates * 1e3)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [alg.learn(*batch) for batch in batches])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
    print(f"{args.algo} on {args.backend}: {best_ms:.3f} ms per learn() (min of {args.passes} passes of "
          f"{args.updates})")


def compare(args: argparse.Namespace) -> None:
    """Alternate torch and paddle worker processes; print each one's ms per update and the ratio of the minima."""
    best = {}
    for _ in range(args.rounds):
        for backend in ("torch", "paddle"):
            cmd = [sys.executable, __file__, args.algo, backend, "--updates", str(args.updates), "--passes",
                   str(args.passes)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            ms = float(re.search(r"([0-9.]+) ms per learn", out).group(1))
            print(f"{args.algo} {backend}: {ms:.3f} ms", flush=True)
            best[backend] = min(best.get(backend, float("inf")), ms)
    print(f"{args.algo}: torch {best['torch']:.3f} ms, paddle {best['paddle']:.3f} ms per update (min of "
          f"{args.rounds} rounds): paddle / torch {best['paddle'] / best['torch']:.2f}x")


def compare_same_process(args: argparse.Namespace) -> None:
    """Torch and paddle in this process, alternating blocks of ``--updates`` learn() calls; print the minimum and
    median ms per update of each and the median of the per-round ratios paddle / torch."""
    import torch

    torch.set_num_threads(1)
    algs = {}
    for backend in ("torch", "paddle"):  # torch first: see the module docstring
        ops = importlib.import_module(f"parl_algorithms.{backend}.ops")
        ops.seed(0)
        # the examples select their backend with parl.set_backend, once per process: here `parl` gives each build
        # that backend's Model and algorithms instead
        with mock.patch.object(parl, "set_backend", lambda name: None), \
                mock.patch.object(parl, "Model", importlib.import_module(f"parl_core.{backend}").Model), \
                mock.patch.object(parl, "algorithms", importlib.import_module(f"parl_algorithms.{backend}")):
            alg, make_batch = build(args.algo, backend, np.random.default_rng(0))
        batches = [[ops.tensor(a) for a in make_batch()] for _ in range(args.updates)]
        for batch in batches[:20]:
            alg.learn(*batch)
        algs[backend] = (alg, batches)
    ms: dict[str, list[float]] = {"torch": [], "paddle": []}
    for r in range(args.rounds):
        for backend in (("torch", "paddle") if r % 2 == 0 else ("paddle", "torch")):
            alg, batches = algs[backend]
            start = time.perf_counter()
            for batch in batches:
                alg.learn(*batch)
            ms[backend].append((time.perf_counter() - start) / len(batches) * 1e3)
    t, p = np.array(ms["torch"]), np.array(ms["paddle"])
    print(f"{args.algo}, one process, {args.rounds} rounds of {args.updates} updates each: torch min {t.min():.3f} / "
          f"median {np.median(t):.3f} ms, paddle min {p.min():.3f} / median {np.median(p):.3f} ms per update; "
          f"paddle / torch: {np.median(p / t):.2f}x (median of the rounds' ratios), {p.min() / t.min():.2f}x (minima)")


if __name__ == "__main__":
    main()
