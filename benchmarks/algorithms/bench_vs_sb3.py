"""Ours vs Stable-Baselines3: env steps and wall-clock to a return threshold, on the same env,
hyperparameters, seeds, evaluation protocol and thread settings (``torch.set_num_threads(1)``).

For every algorithm and seed it runs our example (``examples/<algo>/train.py``) and the SB3 counterpart
(``sb3_runner.py``) as subprocesses, back to back, alternating which goes first, and records the 1-minute
load average before each run. It prints one row per run and a summary per algorithm: runs that reached
the target, median env steps and wall-clock seconds to the target, env-steps/s (steps / seconds), and
the ratios ours / SB3 (steps: lower is better; speed-up = SB3 seconds / our seconds: higher is better).

Needs ``pip install -c constraints.txt -r benchmarks/requirements.txt`` (stable-baselines3).

Usage::

    python benchmarks/algorithms/bench_vs_sb3.py                       # ppo dqn a2c sac td3, seeds 0-4
    python benchmarks/algorithms/bench_vs_sb3.py ppo sac --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ALGOS = {"ppo": "CartPole-v1", "dqn": "CartPole-v1", "a2c": "CartPole-v1", "sac": "Pendulum-v1", "td3": "Pendulum-v1"}


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(lib: str, algo: str, seed: int, tmp: str) -> dict:
    logdir = os.path.join(tmp, f"{lib}-{algo}-{seed}")
    if lib == "ours":
        cmd = [sys.executable, str(ROOT / "examples" / algo / "train.py"), "--seed", str(seed), "--logdir", logdir,
               "--no-progress"]
    else:
        cmd = [sys.executable, str(HERE / "sb3_runner.py"), algo, "--seed", str(seed), "--logdir", logdir]
    load = loadavg()
    # SB3 makes a logger folder even when it logs nothing (tempdir/SB3-<time>, one per run): keep it in ``tmp``
    env = dict(os.environ, SB3_LOGDIR=os.path.join(logdir, "sb3-logger"))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT), env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{lib} {algo} seed {seed} failed:\n{proc.stderr[-3000:]}")
    with open(os.path.join(logdir, "summary.json")) as f:
        result = json.load(f)
    result.update(lib=lib, algo=algo, loadavg_before=load)
    return result


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _paired_bootstrap(a: list[float], b: list[float], stat, rounds: int, seed: int) -> tuple[float, ...]:
    """``stat(a, b)`` and its 95 % bootstrap interval, resampling the seeds in pairs (``a[i]`` and ``b[i]``
    come from the same seed); ``stat`` maps arrays ``[..., n]`` to ``[...]``."""
    import numpy as np

    x, y = np.asarray(a, float), np.asarray(b, float)
    if len(x) == 0 or len(x) != len(y):
        return (float("nan"),) * 3
    idx = np.random.default_rng(seed).integers(0, len(x), size=(rounds, len(x)))
    values = stat(x[idx], y[idx])
    return float(stat(x, y)), float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def ratio_of_means_ci(num: list[float], den: list[float], rounds: int = 10_000, seed: int = 0) -> tuple[float, ...]:
    """``mean(num) / mean(den)`` and its 95 % bootstrap interval, resampling seeds in pairs (``num[i]`` and
    ``den[i]`` come from the same seed): with 5-10 seeds a median of steps-to-target moves by 10-20 % from
    one seed set to another, so the interval says whether two libraries differ at all."""
    return _paired_bootstrap(num, den, lambda x, y: x.mean(axis=-1) / y.mean(axis=-1), rounds, seed)


def mean_diff_ci(a: list[float], b: list[float], rounds: int = 10_000, seed: int = 0) -> tuple[float, ...]:
    """Mean of the paired differences ``a[i] - b[i]`` and its 95 % bootstrap interval (pairs resampled)."""
    return _paired_bootstrap(a, b, lambda x, y: (x - y).mean(axis=-1), rounds, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algos", nargs="*", help=f"default: all of {', '.join(ALGOS)}")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", default=None, help="append one JSON line per run to this file")
    args = parser.parse_args()
    algos = args.algos or list(ALGOS)
    unknown = [a for a in algos if a not in ALGOS]
    if unknown:
        parser.error(f"unknown algorithm(s) {unknown}; choose from {list(ALGOS)}")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for algo in algos:
            for i, seed in enumerate(args.seeds):
                for lib in (("ours", "sb3") if i % 2 == 0 else ("sb3", "ours")):
                    result = run(lib, algo, seed, tmp)
                    rows.append(result)
                    print(json.dumps(result), flush=True)
                    if args.out:
                        with open(args.out, "a") as f:
                            f.write(json.dumps(result) + "\n")

    print("\n| algo | env | seed | lib | env steps | wall s | steps/s | eval return | reached | loadavg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['algo']} | {ALGOS[r['algo']]} | {r['seed']} | {r['lib']} | {r['env_steps']} | {r['wall_s']:.1f} | "
              f"{r['env_steps'] / r['wall_s']:.0f} | {r['eval_return_mean']:.1f} | {'yes' if r['reached'] else 'no'} | "
              f"{r['loadavg_before']:.1f} |")

    print("\n| algo | env | reached ours / SB3 | median steps ours / SB3 (ratio) | median s ours / SB3 | "
          "speed-up (SB3 s / ours s) | steps/s ours / SB3 |")
    print("|---|---|---|---|---|---|---|")
    for algo in algos:
        by = {lib: [r for r in rows if r["algo"] == algo and r["lib"] == lib] for lib in ("ours", "sb3")}
        n = len(by["ours"])
        steps = {lib: median([r["env_steps"] for r in by[lib] if r["reached"]]) for lib in by}
        secs = {lib: median([r["wall_s"] for r in by[lib] if r["reached"]]) for lib in by}
        rate = {lib: median([r["env_steps"] / r["wall_s"] for r in by[lib]]) for lib in by}
        reached = {lib: sum(r["reached"] for r in by[lib]) for lib in by}
        print(f"| {algo} | {ALGOS[algo]} | {reached['ours']}/{n} / {reached['sb3']}/{n} | "
              f"{steps['ours']:.0f} / {steps['sb3']:.0f} ({steps['ours'] / steps['sb3']:.2f}) | "
              f"{secs['ours']:.1f} / {secs['sb3']:.1f} | {secs['sb3'] / secs['ours']:.2f}x | "
              f"{rate['ours']:.0f} / {rate['sb3']:.0f} |")

    print("\nMeans over the seeds both reached, with 95 % paired-bootstrap intervals (seeds resampled):")
    print("| algo | seeds | mean steps ours / SB3 | steps ratio ours / SB3 [95 % CI] | mean s ours / SB3 | "
          "speed-up SB3 s / ours s [95 % CI] |")
    print("|---|---|---|---|---|---|")
    for algo in algos:
        pairs = [(o, b) for o in rows if o["algo"] == algo and o["lib"] == "ours" and o["reached"]
                 for b in rows if b["algo"] == algo and b["lib"] == "sb3" and b["seed"] == o["seed"] and b["reached"]]
        ours_steps, sb3_steps = [o["env_steps"] for o, _ in pairs], [b["env_steps"] for _, b in pairs]
        ours_s, sb3_s = [o["wall_s"] for o, _ in pairs], [b["wall_s"] for _, b in pairs]
        st, st_lo, st_hi = ratio_of_means_ci(ours_steps, sb3_steps)
        sp, sp_lo, sp_hi = ratio_of_means_ci(sb3_s, ours_s)
        mean = statistics.mean if pairs else (lambda _: float("nan"))
        print(f"| {algo} | {len(pairs)} | {mean(ours_steps):.0f} / {mean(sb3_steps):.0f} | "
              f"{st:.2f} [{st_lo:.2f}, {st_hi:.2f}] | {mean(ours_s):.1f} / {mean(sb3_s):.1f} | "
              f"{sp:.2f}x [{sp_lo:.2f}, {sp_hi:.2f}] |")


if __name__ == "__main__":
    main()
