"""One learner step on the CPU and on CUDA: the IMPALA example's Atari CNN and the SAC example's MLP.

Cases (the models are the examples' own, loaded from ``examples/*/train.py``):

- ``impala-atari``: ``IMPALA.learn`` on one unroll batch as the IMPALA example consumes it on Atari: T=50 steps
  of E=8 envs, B=400 frames uint8 [4, 42, 42] (sent as float32, as the learner does), 6 actions.
- ``sac-mlp``: ``SAC.learn`` with automatic entropy tuning on HalfCheetah-v5 shapes (obs 17, act 6), two
  hidden layers of 256, batch 256 (rl-baselines3-zoo's MuJoCo settings).

Each step is timed end to end from numpy arrays (the batch crosses to the device inside ``learn``, as in
training), ``torch.cuda.synchronize()`` after the timed steps on CUDA. CPU always, then CUDA where torch
sees a GPU (the CUDA column says "CUDA not available" otherwise). ``torch.set_num_threads(--threads)``
(default 1, as the examples train). The 1/5/15-minute load average is printed first: on a shared machine
CPU figures drift with it.

Usage::

    python benchmarks/gpu/bench_learner_device.py                 # both cases, 50 timed steps each
    python benchmarks/gpu/bench_learner_device.py --steps 200 --threads 4 --out learner_device.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import time

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _example(name: str):
    """The module of ``examples/<name>/train.py`` (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / name / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def impala_case(device: str, rng: np.random.Generator):
    """(algorithm, a function giving the numpy arguments of one learn step)."""
    from parl_algorithms.torch import IMPALA

    T, E, actions = 50, 8, 6
    model = _example("impala").AtariModel(actions, dim=42)
    alg = IMPALA(model, sample_batch_steps=T, gamma=0.99, vf_loss_coeff=0.5, device=device)
    B = T * E
    batch = (rng.integers(0, 256, size=(B, 4, 42, 42)).astype(np.float32), rng.integers(0, actions, size=B),
             rng.normal(size=(B, actions)).astype(np.float32), rng.normal(size=B).astype(np.float32),
             rng.random(B) < 0.01)
    return alg, lambda: (*batch, 1e-3, -0.01)


def sac_case(device: str, rng: np.random.Generator):
    from parl_algorithms.torch import SAC

    obs_dim, act_dim, B = 17, 6, 256
    model = _example("sac").SACModel(obs_dim, act_dim, (256, 256))
    alg = SAC(model, gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4, with_automatic_entropy_tuning=True,
              device=device)
    batch = (rng.normal(size=(B, obs_dim)).astype(np.float32), rng.uniform(-1, 1, (B, act_dim)).astype(np.float32),
             rng.normal(size=(B, 1)).astype(np.float32), rng.normal(size=(B, obs_dim)).astype(np.float32),
             (rng.random((B, 1)) < 0.01).astype(np.float32))
    return alg, lambda: batch


CASES = {"impala-atari": impala_case, "sac-mlp": sac_case}


def time_steps(case: str, device: str, warmup: int, steps: int) -> float:
    """Milliseconds per learn step (median of ``steps`` single-step timings)."""
    torch.manual_seed(0)
    alg, batch = CASES[case](device, np.random.default_rng(0))
    cuda = device.startswith("cuda")
    for _ in range(warmup):
        alg.learn(*batch())
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        alg.learn(*batch())
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 1000.0 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", default=sorted(CASES), help=f"of {sorted(CASES)}  [default: all]")
    parser.add_argument("--steps", type=int, default=50, help="timed learn steps per case and device")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for the CPU runs")
    parser.add_argument("--out", default=None, help="append one JSON line per case here")
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {sorted(CASES)}")
    torch.set_num_threads(args.threads)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch {torch.__version__}, "
          f"{args.threads} CPU thread(s)")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    print("| case | CPU ms / step | CUDA ms / step | CUDA speed-up |")
    print("|---|---|---|---|")
    for case in args.cases:
        ms = {device: time_steps(case, device, args.warmup, args.steps) for device in devices}
        cuda = f"{ms['cuda']:.2f} ({gpu})" if "cuda" in ms else "CUDA not available"
        ratio = f"{ms['cpu'] / ms['cuda']:.1f}x" if "cuda" in ms else "-"
        print(f"| {case} | {ms['cpu']:.2f} | {cuda} | {ratio} |")
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps({"case": case, "ms_per_step": ms, "gpu": gpu, "threads": args.threads,
                                    "loadavg": load, "steps": args.steps, "time": time.time()}) + "\n")


if __name__ == "__main__":
    main()
